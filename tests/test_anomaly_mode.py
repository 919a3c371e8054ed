"""Anomaly detection (detect_anomaly / set_detect_anomaly): the forward stack shown for an error
in backward, NaN checks naming the node and output, and state restored on exit."""
import os
import warnings

import pytest

import gradc


def _backward_catching(y, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError) as err:
            y.backward(**kwargs)
    return str(err.value), [str(w.message) for w in caught]


def test_nan_gradient_names_the_node_and_output_and_shows_the_forward_line():
    x = gradc.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = gradc.autograd.detect_anomaly()
    with ctx:
        assert gradc.is_anomaly_enabled() and gradc.is_anomaly_check_nan_enabled()
        y = (x / x).sum()                                   # the forward line
        message, warned = _backward_catching(y)
    assert message == "Function 'DivBackward0' returned nan values in its 1th output."
    assert len(warned) == 1 and warned[0].startswith(
        "Error detected in DivBackward0. Traceback of forward call that caused the error:\n")
    assert "y = (x / x).sum()                                   # the forward line" in warned[0]
    assert os.path.dirname(gradc.__file__) + os.sep not in warned[0]          # no frames of gradc's own
    assert not gradc.is_anomaly_enabled()


def test_set_detect_anomaly_as_function_and_context_manager():
    gradc.autograd.set_detect_anomaly(True)
    assert gradc.is_anomaly_enabled()
    gradc.autograd.set_detect_anomaly(False)
    assert not gradc.is_anomaly_enabled()
    x = gradc.tensor([0.0, 1.0], requires_grad=True)
    with gradc.autograd.set_detect_anomaly(True, check_nan=False):
        assert gradc.is_anomaly_enabled() and not gradc.is_anomaly_check_nan_enabled()
        (x / x).sum().backward()                            # NaNs pass without the check
    assert x.grad.isnan().tolist() == [True, False]
    assert not gradc.is_anomaly_enabled() and gradc.is_anomaly_check_nan_enabled()


def test_second_backward_error_is_preceded_by_the_forward_stack():
    x = gradc.tensor([1.0, 2.0], requires_grad=True)
    with gradc.autograd.set_detect_anomaly(True):
        y = (x * x).sum()
        y.backward()
        message, warned = _backward_catching(y)
    assert message.startswith("Trying to backward through the graph a second time")
    assert warned and warned[0].startswith("Error detected in MulBackward0.") and "y = (x * x).sum()" in warned[0]


def test_anomaly_mode_covers_compiled_backward():
    f = gradc.compile(lambda a: (a.log() * 0).sum())
    x = gradc.tensor([0.0, 1.0], requires_grad=True)
    with gradc.autograd.set_detect_anomaly(True):
        y = f(x)
        message, warned = _backward_catching(y)
    assert message == "Function 'CompiledFunctionBackward' returned nan values in its 0th output."
    assert "y = f(x)" in warned[0]
    x.grad = None
    f(x).backward()                                         # off again: NaN gradient as eager gives
    assert x.grad.isnan().tolist() == [True, False]


def test_matches_pytorch_messages():
    torch = pytest.importorskip("torch")
    for lib in (torch, gradc):
        x = lib.tensor([0.0, 4.0], requires_grad=True)
        with lib.autograd.set_detect_anomaly(True):
            y = (x.sqrt() * 0).sum()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises(RuntimeError) as err:
                    y.backward()
        assert str(err.value) == "Function 'SqrtBackward0' returned nan values in its 0th output.", lib

"""autograd.Variable (PyTorch's legacy shim) and the profilers (autograd.profiler, gradc.profiler)."""
import warnings

import numpy as np
import pytest

import gradc


def _outcome(fn):
    """``fn()``'s result (a tensor's requires_grad, leafness and values) or its exception."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = fn()
    except Exception as e:          # noqa: BLE001  (compared with PyTorch's)
        return type(e).__name__, str(e)
    return (type(t).__name__, t.requires_grad, t.is_leaf, t.grad_fn is None, t.detach().numpy().tolist(),
            [str(w.message) for w in caught])


VARIABLE_CALLS = [
    lambda m, V: V(m.ones(2)),
    lambda m, V: V(m.ones(2), requires_grad=True),
    lambda m, V: V(m.ones(2), True),
    lambda m, V: V(data=m.ones(2), requires_grad=1),
    lambda m, V: V((m.ones(2, requires_grad=True) * 3), requires_grad=False),
    lambda m, V: V(),
    lambda m, V: V(3),
    lambda m, V: V(m.ones(2), requires_grad=None),
    lambda m, V: V(m.ones(2), "a"),
    lambda m, V: V(m.ones(2), requires_grad=1.5),
    lambda m, V: V(m.ones(2), volatile=True),
    lambda m, V: V(m.ones(2), volatile=False),
    lambda m, V: V(m.ones(2), requires_grad=True, volatile=True),
    lambda m, V: V(m.ones(2), 1, 2, 3, 5),
    lambda m, V: V(m.ones(2), False, False, 3),
    lambda m, V: V(m.ones(2), False, False, None, None, 1),
    lambda m, V: V(m.ones(2), foo=1),
    lambda m, V: V(m.ones(2, dtype=m.int64), requires_grad=True),
]


@pytest.mark.parametrize("k", range(len(VARIABLE_CALLS)))
def test_variable_matches_pytorch(k):
    torch = pytest.importorskip("torch")
    want = _outcome(lambda: VARIABLE_CALLS[k](torch, torch.autograd.Variable))
    have = _outcome(lambda: VARIABLE_CALLS[k](gradc, gradc.autograd.Variable))
    want = tuple(w.replace("torch.", "gradc.") if isinstance(w, str) else w for w in want)
    assert have == want


def test_variable_shares_storage_and_every_tensor_is_one():
    t = gradc.ones(2)
    v = gradc.autograd.Variable(t, requires_grad=True)
    assert v is not t and v.data_ptr() == t.data_ptr()
    v.data.add_(1)
    assert t.tolist() == [2.0, 2.0]
    assert gradc.autograd.Variable(t, False, False, None, "nm").name == "nm"
    assert isinstance(t, gradc.autograd.Variable) and isinstance(gradc.nn.Parameter(t), gradc.autograd.Variable)
    assert not isinstance(3.0, gradc.autograd.Variable) and not isinstance(np.ones(2), gradc.autograd.Variable)
    (v * v).sum().backward()
    assert v.grad.tolist() == [4.0, 4.0]


def _profiled(m, profile, record_function):
    x = m.ones(8, 8, requires_grad=True)
    with profile() as prof:
        with record_function("block"):
            y = (x @ x).relu().sum()
        y.backward()
    return prof, y


@pytest.mark.parametrize("api", ["autograd", "profiler"])
def test_profile_times_each_op_and_block(api):
    if api == "autograd":
        prof, y = _profiled(gradc, gradc.autograd.profiler.profile, gradc.autograd.profiler.record_function)
    else:
        prof, y = _profiled(gradc, lambda: gradc.profiler.profile(activities=[gradc.profiler.ProfilerActivity.CPU]),
                            gradc.profiler.record_function)
    assert y.item() == 512.0
    avg = {e.key: e for e in prof.key_averages()}
    assert {"block", "aten::matmul", "aten::relu", "aten::sum"} <= set(avg)
    assert avg["aten::matmul"].count == 3          # forward and the two backward products
    mm_backward = [e for e in prof.events() if e.name == "autograd::engine::evaluate_function: MmBackward0"]
    assert len(mm_backward) == 1 and [c.name for c in mm_backward[0].cpu_children].count("aten::matmul") == 2
    assert {"autograd::engine::evaluate_function: ReluBackward0",
            "autograd::engine::evaluate_function: SumBackward0"} <= set(avg)
    block = avg["block"]
    inner = [e for e in prof.events() if e.parent is not None and e.parent.name == "block"]
    assert [e.name for e in inner] == ["aten::matmul", "aten::relu", "aten::sum"]
    assert block.cpu_time_total >= sum(e.cpu_time_total for e in inner) > 0
    assert block.self_cpu_time_total == pytest.approx(block.cpu_time_total - sum(e.cpu_time_total for e in inner))
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in prof.events()))
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%", "CPU", "total",
                                "CPU", "time", "avg", "#", "of", "Calls"]
    assert len(lines) == 3 + 3 + 2 and lines[3].split()[0] == "block"
    assert lines[-1].startswith("Self CPU time total: ")


def test_table_layout_matches_pytorch():
    """The same header, rule and footer lines as PyTorch's table (times differ, not the shape)."""
    torch = pytest.importorskip("torch")
    tables = []
    for m in (torch, gradc):
        with m.autograd.profiler.profile() as prof:
            with m.autograd.profiler.record_function("my_block"):
                pass
        tables.append(prof.key_averages().table().splitlines())
    want, have = tables
    assert have[:3] == want[:3] and have[-2] == want[-2] and have[3].split()[0] == "my_block"
    assert have[-1].split(":")[0] == want[-1].split(":")[0] == "Self CPU time total"


def test_profiler_is_off_outside_and_record_function_decorates():
    @gradc.autograd.profiler.record_function("fn")
    def f(x):
        return x.exp()
    assert f(gradc.zeros(1)).item() == 1.0             # no profile: just runs
    original = gradc.Tensor.__dict__["_apply"]
    with gradc.autograd.profiler.profile(record_shapes=True) as prof:
        f(gradc.zeros(2, 3))
    events = prof.function_events
    assert [e.name for e in events] == ["fn", "aten::exp"] and events[1].input_shapes == [[2, 3]]
    assert gradc.Tensor.__dict__["_apply"] is original     # the timing wrappers are gone
    assert gradc.autograd.engine._run_node.__qualname__ == "_run_node"
    with gradc.autograd.profiler.profile(enabled=False) as off:
        f(gradc.zeros(1))
    assert list(off.function_events) == []
    with pytest.raises(AttributeError, match="has no attribute 'bogus'"):
        prof.key_averages().table(sort_by="bogus")


def test_profiler_schedule_and_trace_handler(tmp_path):
    torch = pytest.importorskip("torch")
    want = [torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)(i) for i in range(10)]
    have = [gradc.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)(i) for i in range(10)]
    assert [a.name for a in have] == [a.name for a in want]
    handed = []
    with gradc.profiler.profile(schedule=gradc.profiler.schedule(wait=1, warmup=1, active=2),
                                on_trace_ready=lambda p: handed.append([e.name for e in p.events()])) as prof:
        for i in range(8):
            gradc.ones(1).add(i)
            prof.step()
    assert handed == [["aten::add", "aten::add"]] * 2
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    import json
    assert [e["name"] for e in json.load(open(tmp_path / "trace.json"))["traceEvents"]] == ["aten::add"] * 2

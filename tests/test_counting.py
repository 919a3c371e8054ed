"""mode, histc, unique_consecutive and renorm (``gradc/counting.py``) without PyTorch: known
values, the gradient of mode, the eager-only error under @gradc.compile, and renorm compiled.
Against PyTorch they are in ``test_torch_parity.py``."""
from __future__ import annotations

import numpy as np
import pytest

import gradc


def test_mode_picks_the_smallest_most_frequent_value_and_its_last_index():
    x = gradc.tensor([[1.0, 3.0, 3.0, 2.0, 2.0], [5.0, 5.0, 1.0, 1.0, 0.0]], requires_grad=True)
    values, indices = gradc.mode(x, 1)
    assert values.tolist() == [2.0, 1.0] and indices.tolist() == [4, 3]
    values.sum().backward()
    expected = np.zeros((2, 5))
    expected[0, 4] = expected[1, 3] = 1
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_histc_and_unique_consecutive():
    assert gradc.histc(gradc.tensor([1.0, 2.0, 1.0, 4.0, 7.0]), bins=4, min=0, max=3).tolist() == [0.0, 2.0, 1.0, 0.0]
    values, inverse, counts = gradc.unique_consecutive(gradc.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True,
                                                       return_counts=True)
    assert values.tolist() == [1, 2, 3, 1, 2]
    assert inverse.tolist() == [0, 0, 1, 1, 2, 3, 3, 4] and counts.tolist() == [2, 2, 1, 2, 1]


@pytest.mark.parametrize("fn", [lambda x: gradc.histc(x, 3).sum(), lambda x: gradc.unique_consecutive(x).sum()],
                         ids=["histc", "unique_consecutive"])
def test_counting_under_compile_is_a_clear_error(fn):
    with pytest.raises(RuntimeError, match="under @gradc.compile: .* depends on the tensor's values"):
        gradc.compile(fn)(gradc.tensor([1.0, 2.0, 2.0]))


def test_mode_compiled_equals_eager(compiled_vs_eager):
    rng = np.random.default_rng(2)
    compiled_vs_eager(lambda x: (gradc.mode(x, 1).values * gradc.arange(1.0, 5.0, dtype=gradc.float64)).sum(),
                      rng.integers(0, 3, (4, 20)).astype(np.float64))


def test_renorm_compiled_equals_eager(compiled_vs_eager):
    rng = np.random.default_rng(1)
    compiled_vs_eager(lambda x: (gradc.renorm(x, 2, 0, 1.5) ** 2).sum(), rng.standard_normal((4, 3)) * 2)


def test_renorm_scales_only_the_slices_above_maxnorm():
    x = gradc.tensor([[3.0, 4.0], [0.3, 0.4]])
    np.testing.assert_allclose(gradc.renorm(x, 2, 0, 1.0).numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)

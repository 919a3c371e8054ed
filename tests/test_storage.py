"""Storages (``gradc/storage.py``): ``untyped_storage()`` and ``storage()`` share memory with their
tensors both ways, with PyTorch's sizes, data pointers, element sizes, lists and its deprecation
warning; ``set_`` (empty, from a tensor, from a storage with offset, size and stride) and
``as_strided_`` make a tensor a view of a storage, with PyTorch's bounds, dtype and leaf errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradc
import gradc.storage

torch = pytest.importorskip("torch")


def both(make):
    """``make`` run with torch and with gradc."""
    return make(torch), make(gradc)


def test_untyped_storage_of_a_view():
    for m in (torch, gradc):
        base = m.arange(10.0)
        view = base[2:8:2]
        s = view.untyped_storage()
        assert (s.nbytes(), s.size(), len(s), s.element_size(), str(s.device)) == (40, 40, 40, 1, "cpu")
        assert s.data_ptr() == base.data_ptr() and view.storage_offset() == 2
        assert view.data_ptr() == base.data_ptr() + 2 * 4
        assert s.tolist() == list(np.arange(10.0, dtype=np.float32).tobytes())
        assert s[6] == 128 and s[7] == 63
        s.fill_(0)
        assert base.tolist() == [0.0] * 10
    ours, theirs = both(lambda m: m.tensor([1, 2], dtype=m.int32).untyped_storage().tolist())
    assert ours == theirs == [1, 0, 0, 0, 2, 0, 0, 0]


def test_typed_storage_shares_memory_and_warns_once():
    gradc.storage._warned.clear()
    base = gradc.arange(10.0)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = base[3:].storage()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = base.storage()
    for m, st, b in ((gradc, s, base), (torch, None, None)):
        if m is torch:
            b = torch.arange(10.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                st = b[3:].storage()
        assert str(st.dtype) == "torch.float32"
        assert (st.size(), len(st), st.nbytes(), st.element_size()) == (10, 10, 40, 4)
        assert st.data_ptr() == b.data_ptr() and st.tolist() == [float(v) for v in range(10)] and st[3] == 3.0
        st[3] = 42.0
        assert b[3].item() == 42.0
    assert again.data_ptr() == s.data_ptr()


def test_set_from_storage_with_offset_size_stride():
    results = []
    for m in (torch, gradc):
        base = m.arange(10.0)
        x = m.tensor([1.0, 2.0])
        version = x._version
        x.set_(base.untyped_storage(), 1, (2, 2), (1, 2))
        base[1] = 100.0
        results.append((x.tolist(), x.storage_offset(), x.stride(), x.untyped_storage().data_ptr() == base.data_ptr(),
                        x._version > version))
        whole = m.ones(3).set_(base.untyped_storage())
        results.append((whole.tolist(), whole.storage_offset()))
    assert results[0:2] == results[2:4]
    assert results[0][0] == [[100.0, 3.0], [2.0, 4.0]]


def test_set_from_tensor_and_empty():
    for m in (torch, gradc):
        base = m.arange(6.0).reshape(2, 3)
        y = m.empty(0)
        y.set_(base[:, 1:])
        assert y.is_set_to(base[:, 1:]) and not base.is_set_to(y)
        assert y.tolist() == [[1.0, 2.0], [4.0, 5.0]] and y.stride() == (3, 1) and y.storage_offset() == 1
        base[0, 1] = -1.0
        assert y[0, 0].item() == -1.0
        y.set_()
        assert y.shape == (0,) and y.untyped_storage().nbytes() == 0


def test_as_strided_in_place():
    for m in (torch, gradc):
        z = m.arange(6.0)
        z.as_strided_((2, 2), (1, 2), 1)
        assert z.tolist() == [[1.0, 3.0], [2.0, 4.0]] and z.storage_offset() == 1 and z.untyped_storage().nbytes() == 24
        tail = m.arange(6.0)[1:]
        tail.as_strided_((2,), (2,))
        assert tail.tolist() == [1.0, 3.0] and tail.storage_offset() == 1
    results = []
    for m in (torch, gradc):
        leaf = m.arange(4.0, dtype=m.float64).requires_grad_()
        w = leaf * 2
        w.as_strided_((2,), (2,))
        w.sum().backward()
        results.append((type(w.grad_fn).__name__, w.tolist(), leaf.grad.tolist()))
    assert results[0] == results[1]


def test_set_beyond_the_storage_refused():
    """PyTorch grows the storage to fit; gradc's storages are NumPy allocations and cannot grow."""
    base = gradc.arange(10.0)
    with pytest.raises(RuntimeError, match="storage offset 8, .* requiring a storage size of 48 .* cannot grow"):
        gradc.tensor([1.0, 2.0]).set_(base.untyped_storage(), 8, (2, 2), (1, 2))
    fits = gradc.tensor([1.0, 2.0]).set_(base.untyped_storage(), 6, (2, 2), (1, 2))
    assert fits.tolist() == [[6.0, 8.0], [7.0, 9.0]]


@pytest.mark.parametrize("make", [
    lambda m: m.ones(2, requires_grad=True).set_(m.arange(3.0)),
    lambda m: m.ones(2, dtype=m.int64).set_(m.arange(3.0)),
    lambda m: m.ones(2, dtype=m.float64).set_(m.arange(3.0).storage()),
    lambda m: m.ones(3).set_(m.arange(3.0).untyped_storage(), 2),
    lambda m: m.arange(6.0).as_strided_((4,), (2,), 0),
], ids=["leaf", "dtype", "typed-dtype", "offset-without-size", "as_strided_-bounds"])
def test_errors_match_torch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as expected:
            make(torch)
        with pytest.raises(type(expected.value)) as got:
            make(gradc)
    assert str(got.value) == str(expected.value)

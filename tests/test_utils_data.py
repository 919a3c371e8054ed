"""gradc.utils.data against torch.utils.data: datasets, random_split, default_collate/default_convert,
the samplers and DataLoader (batches, lengths, argument errors, warnings). Random orders come from
gradc's generator, whose numbers are PyTorch's: most random parts are checked by their properties,
and one test compares the orders with PyTorch's after the same seed."""
import collections
import warnings

import numpy as np
import pytest

import gradc
from gradc.utils import data as gdata

torch = pytest.importorskip("torch")
tdata = torch.utils.data

Point = collections.namedtuple("Point", ["x", "y"])


def _plain(obj):
    """A comparable form of a (nested) batch: tensors become (dtype name, shape, values)."""
    if isinstance(obj, (gradc.Tensor, torch.Tensor)):
        return ("tensor", str(obj.dtype).split(".")[-1], tuple(obj.shape), obj.tolist())
    if isinstance(obj, dict):
        return (type(obj).__name__, {k: _plain(v) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, tuple(_plain(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_plain(v) for v in obj])
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.tolist())
    return obj


def _same_error(fg, ft, exc=Exception):
    """fg() and ft() raise the same exception type with the same message."""
    with pytest.raises(exc) as et:
        ft()
    with pytest.raises(type(et.value)) as eg:
        fg()
    assert str(eg.value) == str(et.value)


def _both(make):
    """make(lib, data) for gradc and torch: (gradc result, torch result)."""
    return make(gradc, gdata), make(torch, tdata)


# ---------------------------------------------------------------------------------------- datasets

def test_dataset_base_errors_and_add():
    _same_error(lambda: gdata.Dataset()[0], lambda: tdata.Dataset()[0], NotImplementedError)
    _same_error(gdata.IterableDataset, tdata.IterableDataset, TypeError)
    g = gdata.TensorDataset(gradc.arange(3)) + gdata.TensorDataset(gradc.arange(2))
    assert isinstance(g, gdata.ConcatDataset) and len(g) == 5 and g[4][0].item() == 1


def test_tensor_dataset():
    g, t = _both(lambda lib, d: d.TensorDataset(lib.arange(6.).reshape(3, 2), lib.tensor([1, 2, 3])))
    assert len(g) == len(t) == 3
    assert _plain(g[1]) == _plain(t[1])
    assert _plain(g[[0, 2]]) == _plain(t[[0, 2]])
    _same_error(lambda: gdata.TensorDataset(gradc.zeros(3), gradc.zeros(4)),
                lambda: tdata.TensorDataset(torch.zeros(3), torch.zeros(4)), AssertionError)


def test_subset_concat_and_stack_datasets():
    g, t = _both(lambda lib, d: d.ConcatDataset([d.TensorDataset(lib.arange(3)), d.TensorDataset(lib.arange(10, 14))]))
    assert len(g) == len(t) == 7 and g.cumulative_sizes == t.cumulative_sizes
    assert [_plain(g[i]) for i in range(-7, 7)] == [_plain(t[i]) for i in range(-7, 7)]
    _same_error(lambda: g[-8], lambda: t[-8], ValueError)
    _same_error(lambda: gdata.ConcatDataset([]), lambda: tdata.ConcatDataset([]), AssertionError)

    class GStream(gdata.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    class TStream(tdata.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    _same_error(lambda: gdata.ConcatDataset([GStream()]), lambda: tdata.ConcatDataset([TStream()]), AssertionError)
    assert list(GStream() + GStream()) == list(TStream() + TStream()) == [0, 1, 2, 0, 1, 2]
    sg, st = gdata.Subset(g, [6, 0, 3]), tdata.Subset(t, [6, 0, 3])
    assert len(sg) == 3 and [_plain(sg[i]) for i in range(3)] == [_plain(st[i]) for i in range(3)]
    assert _plain(sg.__getitems__([2, 1])) == _plain(st.__getitems__([2, 1]))
    kg, kt = _both(lambda lib, d: d.StackDataset(a=d.TensorDataset(lib.arange(2)), b=[5, 6]))
    assert _plain(kg[1]) == _plain(kt[1]) and _plain(kg.__getitems__([0, 1])) == _plain(kt.__getitems__([0, 1]))
    _same_error(lambda: gdata.StackDataset([1], [1, 2]), lambda: tdata.StackDataset([1], [1, 2]), ValueError)
    _same_error(gdata.StackDataset, tdata.StackDataset, ValueError)


def test_random_split_counts_and_fractions():
    g = gradc.Generator().manual_seed(3)
    parts = gdata.random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(x for p in parts for x in p) == list(range(10))
    again = gdata.random_split(range(10), [3, 7], generator=gradc.Generator().manual_seed(3))
    assert [list(p) for p in parts] == [list(p) for p in again]
    gradc.manual_seed(7)
    first = [list(p) for p in gdata.random_split(range(10), [5, 5])]
    gradc.manual_seed(7)
    assert [list(p) for p in gdata.random_split(range(10), [5, 5])] == first
    for fractions in ([0.3, 0.3, 0.4], [0.5, 0.5], [0.25, 0.25, 0.25, 0.25]):
        gl = [len(p) for p in gdata.random_split(range(11), fractions)]
        tl = [len(p) for p in tdata.random_split(range(11), fractions)]
        assert gl == tl


def test_random_split_errors_and_warning():
    _same_error(lambda: gdata.random_split(range(10), [3, 6]), lambda: tdata.random_split(range(10), [3, 6]),
                ValueError)
    _same_error(lambda: gdata.random_split(range(10), [1.5, -0.5]),
                lambda: tdata.random_split(range(10), [1.5, -0.5]), ValueError)
    messages = []
    for lib in (gdata, tdata):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lengths = [len(p) for p in lib.random_split(range(2), [0.9, 0.05, 0.05])]
        assert lengths == [2, 0, 0]
        messages.append([(w.category, str(w.message), w.filename) for w in caught])
    assert messages[0] == messages[1] and len(messages[0]) == 2
    assert messages[0][0][1] == "Length of split at index 1 is 0. This might result in an empty dataset."


# ---------------------------------------------------------------------------------------- collate

def _collate_cases(lib):
    return [
        [lib.tensor([1., 2.]), lib.tensor([3., 4.])],
        [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
        [np.float32(1.5), np.float32(2.5)],
        [np.int64(1), np.int64(2)],
        [1, 2, 3],
        [1.5, 2.5],
        [True, False],
        ["a", "b"],
        [b"a", b"b"],
        [{"x": 1, "y": lib.tensor(2.)}, {"x": 3, "y": lib.tensor(4.)}],
        [(1, 2.0), (3, 4.0)],
        [[1, "a"], [2, "b"]],
        [Point(1, lib.zeros(2)), Point(2, lib.ones(2))],
        [{"a": [(1, np.array([1.0]))]}, {"a": [(2, np.array([2.0]))]}],
    ]


def test_default_collate_matches_torch():
    for g, t in zip(_collate_cases(gradc), _collate_cases(torch)):
        assert _plain(gdata.default_collate(g)) == _plain(tdata.default_collate(t)), g


def test_default_collate_errors():
    _same_error(lambda: gdata.default_collate([[1, 2], [3]]), lambda: tdata.default_collate([[1, 2], [3]]),
                RuntimeError)
    _same_error(lambda: gdata.default_collate([object()]), lambda: tdata.default_collate([object()]), TypeError)
    strs = [np.array(["a"]), np.array(["b"])]
    _same_error(lambda: gdata.default_collate(strs), lambda: tdata.default_collate(strs), TypeError)
    _same_error(lambda: gdata.default_collate([gradc.zeros(2), gradc.zeros(3)]),
                lambda: tdata.default_collate([torch.zeros(2), torch.zeros(3)]), RuntimeError)


def test_default_convert_matches_torch():
    cases = [np.array([1, 2]), 0, "s", np.float64(2.0), (np.array([1.0]), 2), [np.array([1])],
             {"k": np.array([True])}, Point(np.int64(0), np.array([0.5])), np.array(["str"])]
    for case in cases:
        assert _plain(gdata.default_convert(case)) == _plain(tdata.default_convert(case)), case


# ---------------------------------------------------------------------------------------- samplers

def test_sequential_and_batch_samplers():
    assert list(gdata.SequentialSampler(range(4))) == list(tdata.SequentialSampler(range(4)))
    for drop_last in (False, True):
        g = gdata.BatchSampler(gdata.SequentialSampler(range(10)), 3, drop_last)
        t = tdata.BatchSampler(tdata.SequentialSampler(range(10)), 3, drop_last)
        assert list(g) == list(t) and len(g) == len(t)
    for args in ((0, False), (2.0, False), (True, False), (2, 1)):
        _same_error(lambda: gdata.BatchSampler(range(3), *args), lambda: tdata.BatchSampler(range(3), *args),
                    ValueError)


def test_random_sampler():
    gen = gradc.Generator().manual_seed(1)
    order = list(gdata.RandomSampler(range(10), generator=gen))
    assert sorted(order) == list(range(10))
    assert order == list(gdata.RandomSampler(range(10), generator=gradc.Generator().manual_seed(1)))
    long = list(gdata.RandomSampler(range(4), num_samples=10, generator=gen))
    assert len(long) == 10 and sorted(long[:4]) == sorted(long[4:8]) == [0, 1, 2, 3]
    drawn = list(gdata.RandomSampler(range(3), replacement=True, num_samples=70, generator=gen))
    assert len(drawn) == 70 and set(drawn) == {0, 1, 2}
    gradc.manual_seed(5)
    first = list(gdata.RandomSampler(range(20)))
    gradc.manual_seed(5)
    assert list(gdata.RandomSampler(range(20))) == first
    assert len(gdata.RandomSampler(range(5), num_samples=7)) == len(tdata.RandomSampler(range(5), num_samples=7))
    _same_error(lambda: gdata.RandomSampler(range(3), replacement=1),
                lambda: tdata.RandomSampler(range(3), replacement=1), TypeError)
    _same_error(lambda: gdata.RandomSampler(range(3), num_samples=0),
                lambda: tdata.RandomSampler(range(3), num_samples=0), ValueError)
    _same_error(lambda: gdata.RandomSampler([]), lambda: tdata.RandomSampler([]), ValueError)


def test_subset_and_weighted_samplers():
    g = list(gdata.SubsetRandomSampler([5, 7, 9], generator=gradc.Generator().manual_seed(0)))
    assert sorted(g) == [5, 7, 9] and len(gdata.SubsetRandomSampler([5, 7, 9])) == 3
    w = gdata.WeightedRandomSampler([0.0, 1.0, 0.0, 2.0], 50, generator=gradc.Generator().manual_seed(0))
    drawn = list(w)
    assert len(drawn) == len(w) == 50 and set(drawn) == {1, 3}
    no_rep = list(gdata.WeightedRandomSampler([0.1, 0.9, 0.4, 0.7], 4, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3]
    weights = gdata.WeightedRandomSampler([1, 2], 3).weights, tdata.WeightedRandomSampler([1, 2], 3).weights
    assert _plain(weights[0]) == _plain(weights[1])
    for args, kwargs in (((0,), {}), ((True,), {}), ((2,), {"replacement": 1})):
        _same_error(lambda: gdata.WeightedRandomSampler([1.0, 2.0], *args, **kwargs),
                    lambda: tdata.WeightedRandomSampler([1.0, 2.0], *args, **kwargs), ValueError)
    _same_error(lambda: gdata.WeightedRandomSampler([[1.0, 2.0]], 2),
                lambda: tdata.WeightedRandomSampler([[1.0, 2.0]], 2), ValueError)


# ---------------------------------------------------------------------------------------- DataLoader

def _tensor_dataset(lib, d):
    return d.TensorDataset(lib.arange(10.).reshape(5, 2), lib.arange(5))


@pytest.mark.parametrize("kwargs", [
    {}, {"batch_size": 2}, {"batch_size": 2, "drop_last": True}, {"batch_size": None}, {"batch_size": 5},
    {"batch_size": 3, "collate_fn": lambda batch: len(batch)},
])
def test_dataloader_batches_and_len(kwargs):
    g = gdata.DataLoader(_tensor_dataset(gradc, gdata), **kwargs)
    t = tdata.DataLoader(_tensor_dataset(torch, tdata), **kwargs)
    assert len(g) == len(t)
    assert _plain(list(g)) == _plain(list(t))
    assert _plain(list(g)) == _plain(list(g))       # a loader can be iterated again


def test_dataloader_samplers():
    for lib, d in ((gradc, gdata), (torch, tdata)):
        ds = _tensor_dataset(lib, d)
        sampler_batches = [b[1].tolist() for b in d.DataLoader(ds, batch_size=2, sampler=[4, 0, 2])]
        assert sampler_batches == [[4, 0], [2]]
        batches = [b[1].tolist() for b in d.DataLoader(ds, batch_sampler=[[3, 1], [0]])]
        assert batches == [[3, 1], [0]]
        assert len(d.DataLoader(ds, batch_sampler=[[3, 1], [0]])) == 2


def test_dataloader_shuffle_uses_gradc_generators():
    ds = _tensor_dataset(gradc, gdata)
    g = gdata.DataLoader(ds, batch_size=2, shuffle=True, generator=gradc.Generator().manual_seed(4))
    order = [i for b in g for i in b[1].tolist()]
    assert sorted(order) == [0, 1, 2, 3, 4]
    again = gdata.DataLoader(ds, batch_size=2, shuffle=True, generator=gradc.Generator().manual_seed(4))
    assert [i for b in again for i in b[1].tolist()] == order
    gradc.manual_seed(0)
    first = [b[1].tolist() for b in gdata.DataLoader(ds, batch_size=2, shuffle=True)]
    gradc.manual_seed(0)
    assert [b[1].tolist() for b in gdata.DataLoader(ds, batch_size=2, shuffle=True)] == first
    assert isinstance(gdata.DataLoader(ds, shuffle=True).sampler, gdata.RandomSampler)


def _streams():
    class GStream(gdata.IterableDataset):
        def __iter__(self):
            return iter([{"v": i, "a": np.array([i, i])} for i in range(5)])

        def __len__(self):
            return 5

    class TStream(tdata.IterableDataset):
        def __iter__(self):
            return iter([{"v": i, "a": np.array([i, i])} for i in range(5)])

        def __len__(self):
            return 5

    return GStream(), TStream()


@pytest.mark.parametrize("kwargs", [{}, {"batch_size": 2}, {"batch_size": 2, "drop_last": True},
                                    {"batch_size": None}])
def test_dataloader_iterable_dataset(kwargs):
    gs, ts = _streams()
    g, t = gdata.DataLoader(gs, **kwargs), tdata.DataLoader(ts, **kwargs)
    assert len(g) == len(t)
    assert _plain(list(g)) == _plain(list(t))


def test_dataloader_iterable_dataset_longer_than_its_len_warns():
    class Liar(gdata.IterableDataset):
        def __iter__(self):
            return iter(range(3))

        def __len__(self):
            return 2

    loader = gdata.DataLoader(Liar(), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match=r"was reported to be 2\(when accessing len\(dataloader\)\), but 3 samples"):
        assert [int(x) for x in loader] == [0, 1, 2]


def test_dataloader_iterable_dataset_option_errors():
    gs, ts = _streams()
    for kwargs in ({"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}):
        _same_error(lambda: gdata.DataLoader(gs, **kwargs), lambda: tdata.DataLoader(ts, **kwargs), ValueError)


@pytest.mark.parametrize("kwargs", [
    {"sampler": [0, 1], "shuffle": True}, {"batch_sampler": [[0]], "batch_size": 2},
    {"batch_sampler": [[0]], "shuffle": True}, {"batch_sampler": [[0]], "sampler": [0]},
    {"batch_sampler": [[0]], "drop_last": True}, {"batch_size": None, "drop_last": True},
    {"num_workers": -1}, {"timeout": -1}, {"prefetch_factor": 2}, {"persistent_workers": True},
    {"multiprocessing_context": "fork"}, {"batch_size": 0},
])
def test_dataloader_argument_errors(kwargs):
    _same_error(lambda: gdata.DataLoader(_tensor_dataset(gradc, gdata), **kwargs),
                lambda: tdata.DataLoader(_tensor_dataset(torch, tdata), **kwargs), ValueError)


def test_dataloader_timeout_and_frozen_attributes():
    g, t = gdata.DataLoader(range(3), timeout=1), tdata.DataLoader(range(3), timeout=1)
    _same_error(lambda: iter(g), lambda: iter(t), AssertionError)
    g, t = gdata.DataLoader(range(3)), tdata.DataLoader(range(3))

    def setter(loader):
        return lambda: setattr(loader, "batch_size", 4)

    _same_error(setter(g), setter(t), ValueError)
    g.collate_fn = t.collate_fn = len
    assert list(g) == list(t) == [1, 1, 1]


def test_dataloader_sampler_checks_with_workers():
    """(Loading in worker processes: test_utils_data_workers.py.)"""
    _same_error(lambda: gdata.DataLoader(range(4), num_workers=2, sampler=[0], shuffle=True),
                lambda: tdata.DataLoader(range(4), num_workers=2, sampler=[0], shuffle=True), ValueError)
    assert gdata.get_worker_info() is None and tdata.get_worker_info() is None


def test_dataloader_pin_memory_without_accelerator_warns_as_torch():
    messages = []
    for d in (gdata, tdata):
        loader = d.DataLoader(range(3), batch_size=2, pin_memory=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = [b.tolist() for b in loader]
        assert batches == [[0, 1], [2]]
        messages.append([str(w.message) for w in caught])
    assert messages[0] == messages[1] and len(messages[0]) == 1


def test_generic_subscripts_and_module_aliases():
    class Squares(gdata.Dataset[int]):
        def __getitem__(self, i):
            return i * i

    class Every(gdata.Sampler[int]):
        def __iter__(self):
            return iter([2, 0])

    assert [int(b) for b in gdata.DataLoader(Squares(), sampler=Every())] == [4, 0]
    assert gdata.dataloader.default_collate is gdata.default_collate
    assert gdata.dataloader.default_convert is gdata.default_convert


def test_dataloader_getitems_and_custom_dataset():
    class GSquares(gdata.Dataset):
        def __getitem__(self, i):
            return {"i": i, "sq": gradc.tensor([float(i * i)])}

        def __len__(self):
            return 4

    class TSquares(tdata.Dataset):
        def __getitem__(self, i):
            return {"i": i, "sq": torch.tensor([float(i * i)])}

        def __len__(self):
            return 4

    g, t = gdata.Subset(GSquares(), [3, 1, 2]), tdata.Subset(TSquares(), [3, 1, 2])
    assert _plain(list(gdata.DataLoader(g, batch_size=2))) == _plain(list(tdata.DataLoader(t, batch_size=2)))


def test_dataloader_pin_memory_with_a_cuda_device_is_silent(cuda):
    loader = gdata.DataLoader(range(3), batch_size=2, pin_memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [b.tolist() for b in loader] == [[0, 1], [2]]


def test_shuffles_splits_and_samplers_equal_pytorchs_after_the_same_seed():
    """gradc's generators are PyTorch's, and the samplers draw as PyTorch's: after the same seed,
    two epochs of a shuffled DataLoader, random_split and the random samplers give PyTorch's orders."""
    out = []
    for m in (torch, gradc):
        m.manual_seed(0)
        dl = m.utils.data.DataLoader(m.utils.data.TensorDataset(m.arange(10)), batch_size=4, shuffle=True)
        out.append(([b[0].tolist() for b in dl], [b[0].tolist() for b in dl],
                    list(m.utils.data.random_split(range(10), [3, 7])[0]),
                    list(m.utils.data.WeightedRandomSampler([0.1, 0.9, 0.5], 5)),
                    list(m.utils.data.RandomSampler(range(5), replacement=True)),
                    list(m.utils.data.SubsetRandomSampler([4, 8, 15, 16, 23]))))
    assert out[1] == out[0]


def test_tensor_dataset_batches_are_gathered_with_the_values_of_the_per_sample_path():
    """A TensorDataset's batches under default_collate come from one gather per tensor: the same
    list of tensors (values, dtypes, shapes, contiguous) as collating sample by sample, shuffled
    or not, with a short last batch; tensors that require grad keep the per-sample path
    (default_collate's stack: StackBackward0, as PyTorch's)."""
    x = gradc.randn(103, 5)
    y = gradc.randint(0, 10, (103,))
    ds = gdata.TensorDataset(x, y)
    per_sample = gdata.default_collate.__call__          # (not default_collate itself: no fast path)
    for shuffle in (False, True):
        gradc.manual_seed(1)
        fast = list(gdata.DataLoader(ds, batch_size=16, shuffle=shuffle))
        gradc.manual_seed(1)
        slow = list(gdata.DataLoader(ds, batch_size=16, shuffle=shuffle, collate_fn=per_sample))
        assert len(fast) == len(slow) == 7
        for a, b in zip(fast, slow):
            assert type(a) is type(b) is list
            for u, v in zip(a, b):
                assert u.dtype == v.dtype and u.shape == v.shape and u.is_contiguous()
                np.testing.assert_array_equal(u.numpy(), v.numpy())
    w = gradc.randn(6, 2, requires_grad=True)
    batch = next(iter(gdata.DataLoader(gdata.TensorDataset(w), batch_size=4)))
    assert type(batch[0].grad_fn).__name__ == "StackBackward0"

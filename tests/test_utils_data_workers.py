"""DataLoader with worker processes (num_workers > 0) against PyTorch's: batches and their order,
the main generator's draws after a pass, worker seeds (gradc, random, NumPy), get_worker_info,
worker_init_fn, IterableDataset replicas and sharding, errors re-raised from a worker, persistent
workers, timeout, argument checks and warnings. Every test ends with no worker process left."""
import gc
import multiprocessing
import os
import random
import re
import signal
import sys
import time
import warnings

import numpy as np
import pytest

import gradc
from gradc.utils import data as gdata
from gradc.utils.data import worker as gworker

torch = pytest.importorskip("torch")
tdata = torch.utils.data

from test_utils_data import _plain, _same_error  # noqa: E402


@pytest.fixture(autouse=True)
def _no_worker_left():
    """Workers forked (the tests' datasets are local classes, which Python 3.14's default
    forkserver could not pickle), and none left at the end."""
    method = multiprocessing.get_start_method(allow_none=True)
    if "fork" in multiprocessing.get_all_start_methods() and method != "fork":
        multiprocessing.set_start_method("fork", force=True)
    yield
    if multiprocessing.get_start_method(allow_none=True) != method:
        multiprocessing.set_start_method(method, force=True)
    if multiprocessing.active_children():
        gc.collect()             # iterators kept alive by an exception's traceback (a full collection: slow)
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert multiprocessing.active_children() == []


def _lib(m):
    return m, m.utils.data


def _tensor_dataset(m):
    return m.utils.data.TensorDataset(m.arange(14.).reshape(7, 2), m.arange(7))


def _load(m, dataset, seed=5, **kwargs):
    """(every batch of one pass, the main generator's next draw) after manual_seed(seed)."""
    m.manual_seed(seed)
    batches = list(m.utils.data.DataLoader(dataset, **kwargs))
    return _plain(batches), m.rand(2).tolist()


_MAP_CASES = [{"batch_size": 2}, {"batch_size": 3, "drop_last": True}, {"batch_size": None},
              {"shuffle": True, "batch_size": 2},
              {"batch_size": 2, "collate_fn": lambda batch: [len(batch), batch[0][1] * 10]}]
_PREFETCH_CASES = [{"batch_size": 3, "prefetch_factor": 1}, {"batch_size": 1, "prefetch_factor": 3}]


@pytest.mark.parametrize("num_workers, kwargs", [(n, kw) for n in (0, 1, 2) for kw in _MAP_CASES]
                         + [(n, kw) for n in (1, 2) for kw in _PREFETCH_CASES])
def test_map_dataset_batches_equal_pytorchs(num_workers, kwargs):
    g = _load(gradc, _tensor_dataset(gradc), num_workers=num_workers, **kwargs)
    t = _load(torch, _tensor_dataset(torch), num_workers=num_workers, **kwargs)
    assert g == t


@pytest.mark.parametrize("num_workers", [1, 2])
def test_shuffle_with_a_seeded_generator_over_two_epochs(num_workers):
    out = []
    for m, d in (_lib(gradc), _lib(torch)):
        gen = m.Generator().manual_seed(11)
        loader = d.DataLoader(_tensor_dataset(m), batch_size=2, shuffle=True, generator=gen, num_workers=num_workers)
        out.append((_plain(list(loader)), _plain(list(loader)), gen.initial_seed(), m.rand(1, generator=gen).tolist()))
    assert out[0] == out[1]


def _stream_class(m, sharded):
    """An IterableDataset of range(start, stop): each worker's replica the whole range, or
    (sharded) its own contiguous part, PyTorch's documented get_worker_info recipe."""
    d = m.utils.data

    class Stream(d.IterableDataset):
        def __init__(self, start, stop):
            self.start, self.stop = start, stop

        def __iter__(self):
            info = d.get_worker_info()
            if not sharded or info is None:
                return iter(range(self.start, self.stop))
            per_worker = -(-(self.stop - self.start) // info.num_workers)
            start = self.start + info.id * per_worker
            return iter(range(start, min(start + per_worker, self.stop)))

    return Stream


@pytest.mark.parametrize("num_workers", [0, 1, 2])
@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("kwargs", [{"batch_size": 2}, {"batch_size": 2, "drop_last": True}, {"batch_size": None}])
def test_iterable_dataset_replicas_and_shards_equal_pytorchs(num_workers, sharded, kwargs):
    g = _load(gradc, _stream_class(gradc, sharded)(3, 10), num_workers=num_workers, **kwargs)
    t = _load(torch, _stream_class(torch, sharded)(3, 10), num_workers=num_workers, **kwargs)
    assert g == t


def _seeds_dataset(m):
    """Each sample: what a worker sees of its seeds, random streams and WorkerInfo."""
    d = m.utils.data

    class Seeds(d.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            info = d.get_worker_info()
            return (i, info.id, info.num_workers, info.seed, type(info.dataset).__name__, info.rng,
                    info.worker_method, m.initial_seed(), m.randn(3).tolist(), m.randint(0, 100, (2,)).tolist(),
                    random.random(), np.random.rand(2).tolist(), m.get_num_threads())

    return Seeds()


@pytest.mark.parametrize("num_workers", [1, 2])
def test_worker_seeds_and_worker_info_equal_pytorchs(num_workers):
    """base_seed is the main generator's int64 draw; a worker's gradc generator and random are
    seeded with base_seed + id and NumPy from PyTorch's SeedSequence words, so every draw in a
    worker is PyTorch's; the main generator continues as PyTorch's."""
    g = _load(gradc, _seeds_dataset(gradc), seed=7, batch_size=None, num_workers=num_workers)
    t = _load(torch, _seeds_dataset(torch), seed=7, batch_size=None, num_workers=num_workers)
    assert g == t
    rows = [row for _, row in g[0][1]]          # _plain's ("tuple", [...]) of each sample
    assert {row[1] for row in rows} == set(range(num_workers))
    assert gdata.get_worker_info() is None


def test_numpy_seed_words_are_pytorchs_generate_state():
    from torch.utils.data._utils.worker import _generate_state
    rng = random.Random(0)
    cases = [(0, 0), (1, 0), (2 ** 32 - 1, 3), (2 ** 32, 1), (2 ** 63 - 1, 7)]
    cases += [(rng.getrandbits(63), rng.randrange(16)) for _ in range(50)]
    for base_seed, worker_id in cases:
        assert gworker.numpy_seed(base_seed, worker_id) == _generate_state(base_seed, worker_id)


def test_worker_info_is_pytorchs_frozen_dataclass():
    info = gworker.WorkerInfo(id=1, num_workers=2, seed=3, dataset=None)
    tinfo = tdata._utils.worker.WorkerInfo(id=1, num_workers=2, seed=3, dataset=None)
    assert repr(info) == repr(tinfo)
    _same_error(lambda: setattr(info, "id", 0), lambda: setattr(tinfo, "id", 0), AttributeError)


def _init_dataset(m):
    d = m.utils.data

    class Tagged(d.Dataset):
        tag = None

        def __len__(self):
            return 4

        def __getitem__(self, i):
            return (i, self.tag, m.rand(1).tolist())

    return Tagged()


def _init_fn(worker_id):
    """Tag this worker's dataset copy and draw once from its seeded generator."""
    info = (gdata.get_worker_info() or tdata.get_worker_info())
    assert info.id == worker_id
    module = gradc if isinstance(info.dataset, gdata.Dataset) else torch
    info.dataset.tag = f"worker {worker_id} of {info.num_workers}: {module.rand(1).item():.6f}"


def test_worker_init_fn_runs_in_each_worker_after_seeding():
    g = _load(gradc, _init_dataset(gradc), batch_size=None, num_workers=2, worker_init_fn=_init_fn)
    t = _load(torch, _init_dataset(torch), batch_size=None, num_workers=2, worker_init_fn=_init_fn)
    assert g == t
    tags = [row[1] for _, row in g[0][1]]
    assert tags[0].startswith("worker 0 of 2") and tags[1].startswith("worker 1 of 2") and tags[0] == tags[2]


class _Failing:
    """Samples 0..5; raise ``error`` for key ``bad``."""

    def __init__(self, error, bad=2):
        self.error, self.bad = error, bad

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == self.bad:
            raise self.error
        return i


def _error_of(m, dataset, **kwargs):
    iterator = iter(m.utils.data.DataLoader(dataset, **kwargs))
    with pytest.raises(Exception) as caught:
        list(iterator)
    if m is torch:
        # PyTorch's iterator, collected with the traceback's reference cycle, would find its
        # queues closed and wait 5 s per worker before terminating them (gradc's keeps them)
        iterator._shutdown_workers()
    return caught.value


def _check_wrapped(g, t, original):
    """Same type; PyTorch's heading and 'Original Traceback'; the same last line (the original error)."""
    assert type(g) is type(t)
    gm, tm = str(g), str(t)
    assert gm.splitlines()[:2] == tm.splitlines()[:2]
    assert gm.splitlines()[1] == "Original Traceback (most recent call last):"
    assert gm.rstrip().splitlines()[-1] == tm.rstrip().splitlines()[-1] == original


@pytest.mark.parametrize("error, original", [
    (ValueError("bad sample"), "ValueError: bad sample"), (KeyError("key"), "KeyError: 'key'"),
    (IndexError("out"), "IndexError: out"),
])
def test_worker_errors_are_reraised_with_the_worker_traceback(error, original):
    kwargs = {"batch_size": 2, "num_workers": 2}
    g, t = _error_of(gradc, _Failing(error), **kwargs), _error_of(torch, _Failing(error), **kwargs)
    _check_wrapped(g, t, original)
    assert str(g).startswith(f"Caught {type(error).__name__} in DataLoader worker process 1.")
    assert "__getitem__" in str(g)


def _bad_init(worker_id):
    raise ValueError(f"init failed in {worker_id}")


def test_worker_init_fn_error_and_iterable_error():
    kwargs = {"batch_size": None, "num_workers": 1, "worker_init_fn": _bad_init}
    g, t = _error_of(gradc, range(3), **kwargs), _error_of(torch, range(3), **kwargs)
    _check_wrapped(g, t, "ValueError: init failed in 0")

    def broken(m):
        class Broken(m.utils.data.IterableDataset):
            def __iter__(self):
                raise TypeError("no iterator")
        return Broken()

    g, t = (_error_of(m, broken(m), batch_size=2, num_workers=2) for m in (gradc, torch))
    _check_wrapped(g, t, "TypeError: no iterator")


def _samples_dataset(m, kind):
    d = m.utils.data

    class Samples(d.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            if kind == "requires_grad":
                return m.ones(2, requires_grad=True) * 2
            if kind == "dtypes":
                return m.ones(2, dtype=m.int64) if i == 0 else m.ones(2)
            if kind == "shapes":
                return m.ones(2 + i)
            if kind == "empty_max":
                return m.tensor([]).max(0)          # gradc's EmptyReductionError: PyTorch's IndexError
            return m.ones(2) @ m.ones(3)        # a gradc ShapeError: PyTorch's RuntimeError

    return Samples()


@pytest.mark.parametrize("kind", ["requires_grad", "dtypes", "shapes", "op", "empty_max"])
def test_worker_collation_and_op_errors_are_pytorchs(kind):
    """default_collate in a worker stacks into an out= tensor as PyTorch's: samples that require
    grad or do not fit the first one's dtype are refused; gradc's internal error classes are
    reported by the builtin names PyTorch raises (the exception itself is still gradc's)."""
    kwargs = {"batch_size": 2, "num_workers": 1}
    g, t = (_error_of(m, _samples_dataset(m, kind), **kwargs) for m in (gradc, torch))
    assert isinstance(g, type(t))
    gm, tm = str(g).rstrip().splitlines(), str(t).rstrip().splitlines()
    assert gm[:2] == tm[:2]
    assert gm[-1].split(": ", 1)[1] == tm[-1].split(": ", 1)[1]
    main = [list(m.utils.data.DataLoader(_samples_dataset(m, "dtypes"), batch_size=2)) for m in (gradc, torch)]
    assert _plain(main[0]) == _plain(main[1])        # (in the main process the dtypes are promoted)


def _seeded_draws(m):
    class Draws(m.utils.data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return (i, m.utils.data.get_worker_info().id, os.getpid(), m.randn(2).tolist())

    return Draws()


def test_persistent_workers_serve_two_epochs_from_the_same_processes():
    """The same workers (pids) in both epochs, their generators continuing (not reseeded);
    deleting the loader stops them."""
    results = []
    for m, d in (_lib(gradc), _lib(torch)):
        m.manual_seed(3)
        loader = d.DataLoader(_seeded_draws(m), batch_size=None, num_workers=2, persistent_workers=True)
        epochs = [list(loader), list(loader)]
        assert loader._iterator is not None
        pids = [{row[2] for row in epoch} for epoch in epochs]
        assert pids[0] == pids[1] and len(pids[0]) == 2
        results.append(([[row[:2] + row[3:] for row in epoch] for epoch in epochs], m.rand(1).tolist()))
        del loader
    assert results[0] == results[1]
    assert results[0][0][0] != results[0][0][1]      # the second epoch's draws are new ones


def test_persistent_workers_after_an_unfinished_epoch():
    out = []
    for m, d in (_lib(gradc), _lib(torch)):
        loader = d.DataLoader(_tensor_dataset(m), batch_size=2, num_workers=2, persistent_workers=True)
        first = next(iter(loader))
        out.append((_plain(first), _plain(list(loader))))
        del loader
    assert out[0] == out[1]


def test_persistent_workers_with_an_iterable_dataset():
    out = []
    for m in (gradc, torch):
        loader = m.utils.data.DataLoader(_stream_class(m, True)(0, 5), batch_size=2, num_workers=2,
                                         persistent_workers=True)
        out.append((_plain(list(loader)), _plain(list(loader))))
        del loader
    assert out[0] == out[1]


def test_deleting_an_iterator_mid_epoch_stops_its_workers():
    loader = gdata.DataLoader(_tensor_dataset(gradc), batch_size=1, num_workers=2)
    it = iter(loader)
    assert next(it)[1].tolist() == [0]
    workers = list(it._workers)
    assert all(w.is_alive() for w in workers)
    del it
    assert not any(w.is_alive() for w in workers)
    assert [b[1].tolist() for b in loader] == [[i] for i in range(7)]     # a new pass starts new workers


class _Slow:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(0.25)
        return i


def test_timeout_raises_pytorchs_error():
    g, t = (_error_of(m, _Slow(), num_workers=1, timeout=0.05) for m in (gradc, torch))
    assert type(g) is type(t) is RuntimeError and str(g) == str(t) == "DataLoader timed out after 0.05 seconds"
    assert [int(b) for b in gdata.DataLoader(_Slow(), num_workers=1, timeout=5)] == [0, 1]


class _Dying:
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 2

    def __getitem__(self, i):
        if self.how == "signal":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)


@pytest.mark.parametrize("how, cause", [
    ("exit", r"exited unexpectedly with exit code 3\. Details are lost due to multiprocessing\. Rerunning with "
             r"num_workers=0 may give better error trace\."),
    ("signal", r"is killed by signal: Killed\. "),
])
def test_a_worker_that_exits_is_reported(how, cause):
    """PyTorch's error, caused by its account of the exit (PyTorch's comes from its SIGCHLD
    handler; gradc checks the workers every 0.1 s while it waits)."""
    message = r"^DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"
    with pytest.raises(RuntimeError, match=message):
        list(tdata.DataLoader(_Dying(how), num_workers=1, timeout=0.5))
    for timeout in (0, 60):
        start = time.monotonic()
        with pytest.raises(RuntimeError, match=message) as caught:
            list(gdata.DataLoader(_Dying(how), num_workers=1, timeout=timeout))
        assert time.monotonic() - start < 4
        assert re.fullmatch(r"DataLoader worker \(pid \d+\) " + cause, str(caught.value.__cause__))


def test_out_of_order_loading_returns_every_batch():
    loader = gdata.DataLoader(_tensor_dataset(gradc), batch_size=2, num_workers=2, in_order=False)
    batches = sorted(b[1].tolist() for b in loader)
    assert batches == [[0, 1], [2, 3], [4, 5], [6]]


@pytest.mark.parametrize("context", ["spawn", multiprocessing.get_context("fork")])
def test_multiprocessing_context(context):
    """A start method by name or a context object; spawn pickles the dataset and the tensors."""
    loader = gdata.DataLoader(_tensor_dataset(gradc), batch_size=3, num_workers=1, multiprocessing_context=context)
    assert isinstance(loader.multiprocessing_context, multiprocessing.context.BaseContext)
    assert _plain(list(loader)) == _plain(list(tdata.DataLoader(_tensor_dataset(torch), batch_size=3)))


def test_unpicklable_dataset_under_spawn_warns_and_raises_as_pytorch():
    out = []
    for d in (gdata, tdata):
        class Local(d.Dataset):
            def __getitem__(self, i):
                return i

            def __len__(self):
                return 2

        loader = d.DataLoader(Local(), num_workers=1, multiprocessing_context="spawn")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(AttributeError) as error:
                iter(loader)
        out.append((str(error.value), [str(w.message) for w in caught], [w.filename for w in caught]))
    assert out[0][:2] == out[1][:2] and len(out[0][1]) == 1
    assert out[0][2] == [__file__]          # (gradc's points at the loop; PyTorch's at its dataloader.py)


@pytest.mark.parametrize("context, exc", [("thread", ValueError), (3, TypeError)])
def test_multiprocessing_context_errors(context, exc):
    _same_error(lambda: gdata.DataLoader(range(3), num_workers=1, multiprocessing_context=context),
                lambda: tdata.DataLoader(range(3), num_workers=1, multiprocessing_context=context), exc)


def test_prefetch_factor_default_and_zero():
    g, t = gdata.DataLoader(range(3), num_workers=1), tdata.DataLoader(range(3), num_workers=1)
    assert g.prefetch_factor == t.prefetch_factor == 2
    g = gdata.DataLoader(range(3), num_workers=1, prefetch_factor=0)
    t = tdata.DataLoader(range(3), num_workers=1, prefetch_factor=0)
    with pytest.MonkeyPatch.context() as patch:      # PyTorch's half-made iterator fails in its __del__
        patch.setattr(sys, "unraisablehook", lambda unraisable: None)
        _same_error(lambda: iter(g), lambda: iter(t), AssertionError)
        gc.collect()


def _caught_warnings(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return [str(w.message) for w in caught]


def test_more_workers_than_cpus_warns_as_pytorch():
    n = len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else os.cpu_count() + 1
    g = _caught_warnings(lambda: gdata.DataLoader(range(3), num_workers=n))
    t = _caught_warnings(lambda: tdata.DataLoader(range(3), num_workers=n))
    assert g == t and len(g) == 1


def test_pin_memory_with_workers_warns_as_pytorch():
    out = []
    for d in (gdata, tdata):
        loader = d.DataLoader(range(3), batch_size=2, num_workers=1, pin_memory=True)
        batches = []
        out.append((_caught_warnings(lambda: batches.extend(b.tolist() for b in loader)), batches))
    assert out[0] == out[1] and len(out[0][0]) == 1 and out[0][1] == [[0, 1], [2]]


def test_reported_length_warning_names_the_workers():
    def liar(m):
        class Liar(m.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(3))

            def __len__(self):
                return 2
        return Liar()

    messages = []
    for m in (gradc, torch):
        loader = m.utils.data.DataLoader(liar(m), batch_size=None, num_workers=1)
        assert len(loader) == 2
        messages.append(_caught_warnings(lambda: list(loader)))
    strip = [[msg.split(" was reported")[1] for msg in ms] for ms in messages]
    assert strip[0] == strip[1] and len(strip[0]) == 1 and "multiprocessing data-loading" in strip[0][0]


def _views(m):
    """Tensors of every dtype, contiguous and views (transposed, strided, expanded, a row); a leaf requiring grad."""
    base = m.arange(12).reshape(3, 4)
    dtypes = [m.float32, m.float64, m.float16, m.int8, m.uint8, m.int16, m.int32, m.int64, m.bool]
    out = []
    for dt in dtypes:
        x = base.to(dt)
        out += [x, x.t(), x[1:, ::2], x[0], x[:1].expand(2, 4)]
    out.append(m.ones(2, requires_grad=True))
    return out


class _ViewDataset:
    def __init__(self, m):
        self.m = m

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return _views(self.m)


def test_tensors_of_every_dtype_and_views_come_back_from_a_worker():
    g = list(gdata.DataLoader(_ViewDataset(gradc), batch_size=None, num_workers=1))[0]
    t = list(tdata.DataLoader(_ViewDataset(torch), batch_size=None, num_workers=1))[0]
    assert _plain(g) == _plain(t)
    assert [x.requires_grad for x in g] == [x.requires_grad for x in t]
    with gradc.no_grad():
        for x in g:
            x.zero_()            # its own writable memory
            assert x.count_nonzero().item() == 0

"""``DataLoader`` (``torch.utils.data.DataLoader``): batches of a dataset's samples, loaded in the
main process (``num_workers=0``) or in worker processes.

The arguments, their defaults, the errors for combinations PyTorch refuses (``sampler`` with
``shuffle``, ``batch_sampler`` with ``batch_size``/``shuffle``/``sampler``/``drop_last``,
``batch_size=None`` with ``drop_last``, samplers for an ``IterableDataset``, worker options
without workers, ...) and ``len()`` are PyTorch's.

With ``num_workers > 0`` an iterator starts that many processes (``multiprocessing_context``, by
default the platform's start method: fork on Linux), each with its own index queue and a copy of
the dataset, all answering on one result queue (``worker.py`` holds their loop). As PyTorch's, it
keeps ``prefetch_factor`` tasks per worker in flight, hands the tasks out round-robin, returns
the batches in the sampler's order (``in_order=True``; in arrival order otherwise), re-raises a
worker's exception with its traceback, raises after ``timeout`` seconds without a batch, and
stops its workers at the end of the epoch or when it is deleted; ``persistent_workers`` keeps one
iterator and its workers for every epoch. The main process draws the workers' base seed (an
int64 ``random_()`` of ``generator``) for every iterator, as PyTorch does even without workers, so
the generator's later draws are PyTorch's. Batches travel between processes pickled (copies, not
PyTorch's shared memory).

``pin_memory=True`` does what PyTorch's CPU-only build does: warns when iterating that no
accelerator is found and loads unpinned tensors (gradc has no pinned memory, so it does the
same when a CUDA device is there, silently).
"""
from __future__ import annotations

import atexit
import itertools
import math
import multiprocessing
import os
import pickle
import queue
import signal
import time

from ..._warnings import warn_at_user_code
from ... import dtypes
from ...factories import empty
from . import collate as _collate
from . import worker as _worker
from .dataset import IterableDataset
from .fetch import create_fetcher
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .worker import ExceptionWrapper, get_worker_info

__all__ = ["DataLoader", "get_worker_info"]

default_collate = _collate.default_collate      # PyTorch keeps these names in dataloader.py too
default_convert = _collate.default_convert

_FROZEN_ATTRIBUTES = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

_python_exiting = False


def _set_python_exiting() -> None:
    global _python_exiting
    _python_exiting = True


atexit.register(_set_python_exiting)     # workers are not stopped while the interpreter shuts down

# The queues of every iterator whose workers run, by id(iterator), until it stops them. An iterator
# collected as part of a reference cycle (one kept by an exception's traceback) would otherwise have
# its queues collected with it: their finalizers stop their feeder threads before the iterator's
# __del__ runs, so the workers would never receive their final message and would be terminated
# after a timeout (10 s for two workers).
_running_queues: dict[int, tuple] = {}


# Seconds between checks that the workers are alive while waiting for a batch without a timeout
# (PyTorch learns of a dead worker at once, from SIGCHLD)
_LIVENESS_INTERVAL = 0.1


def _worker_failure(process) -> RuntimeError:
    """PyTorch's account of how a worker process ended (the cause of 'exited unexpectedly')."""
    code = process.exitcode
    if code is not None and code < 0:
        return RuntimeError(f"DataLoader worker (pid {process.pid}) is killed by signal: {signal.strsignal(-code)}. ")
    return RuntimeError(f"DataLoader worker (pid {process.pid}) exited unexpectedly with exit code {code}. Details "
                        "are lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.")


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the sampler of an ``IterableDataset``, whose samples come from its iterator."""

    def __iter__(self):
        while True:
            yield None


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers):
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                         "to enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _as_context(multiprocessing_context, num_workers):
    """The multiprocessing context an option names (a start method or a context), checked as PyTorch does."""
    if multiprocessing_context is None:
        return None
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")
    if isinstance(multiprocessing_context, str):
        methods = multiprocessing.get_all_start_methods()
        if multiprocessing_context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                             f"but got multiprocessing_context={multiprocessing_context!r}")
        multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
    if not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a string specifying the "
                        f"start method, but got multiprocessing_context={multiprocessing_context}")
    return multiprocessing_context


def _worker_count_warning(num_workers: int) -> str | None:
    """PyTorch's warning for more workers than the CPUs this process may use (None if not)."""
    cpuset_checked = hasattr(os, "sched_getaffinity")
    suggested = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
    if suggested is not None and num_workers <= suggested:
        return None
    if suggested is None:
        advice = "DataLoader is not able to compute a suggested max number of worker in current system."
    else:
        advice = (f"Our suggested max number of worker in current system is {suggested}"
                  f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller than what "
                  "this DataLoader is going to create.")
    return (f"This DataLoader will create {num_workers} worker processes in total. {advice} Please be aware that "
            "excessive worker creation might get DataLoader running slow or even freeze, lower the worker number to "
            "avoid potential slowness/freeze if necessary.")


def _check_iterable_options(shuffle, sampler, batch_sampler):
    if shuffle not in {False, None}:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                         f"shuffle={shuffle}")
    if sampler is not None:
        raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                         f"sampler={sampler}")
    if batch_sampler is not None:
        raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                         f"batch_sampler={batch_sampler}")


class DataLoader:
    """Iterate over batches of ``dataset``: keys from ``sampler`` (or ``shuffle``), grouped by
    ``batch_size`` (or ``batch_sampler``), each batch made by ``collate_fn``."""

    __initialized = False

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
        sampler, batch_sampler, batch_size, drop_last = self._samplers(
            dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = _collate.default_collate if self._auto_collation else _collate.default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    def _samplers(self, dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
        """The sampler and batch sampler the options ask for, after PyTorch's checks of their combinations."""
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        return sampler, batch_sampler, batch_size, drop_last

    def __setattr__(self, attr, val) -> None:
        if self.__initialized and attr in _FROZEN_ATTRIBUTES:
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context) -> None:
        self.__multiprocessing_context = _as_context(multiprocessing_context, self.num_workers)

    def check_worker_number_rationality(self) -> None:
        """Warn, as PyTorch, when the loader would start more workers than the CPUs it may use."""
        message = _worker_count_warning(self.num_workers) if self.num_workers > 0 else None
        if message is not None:
            warn_at_user_code(message)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if not (self.persistent_workers and self.num_workers > 0):
            return self._get_iterator()
        if self._iterator is None:              # one iterator, and its workers, for every epoch
            self._iterator = self._get_iterator()
        else:
            self._iterator._reset(self)
        return self._iterator

    def __len__(self) -> int:
        if not self._is_iterable:
            return len(self._index_sampler)
        length = self._IterableDataset_len_called = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
        return length



class _BaseDataLoaderIter:
    """One pass over a ``DataLoader``: what both iterators share (the sampler's keys, the
    workers' base seed, the check of an ``IterableDataset``'s reported length)."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._is_iterable = loader._is_iterable
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory:
            self._warn_pin_memory(loader)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # PyTorch draws the workers' base seed (an int64 random_()) even without workers
        self._base_seed = int(empty((), dtype=dtypes.int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    @staticmethod
    def _warn_pin_memory(loader) -> None:
        from ... import cuda
        if loader.pin_memory_device:
            warn_at_user_code("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                              f"ignore pin_memory_device='{loader.pin_memory_device}'.")
        if not cuda.is_available():
            warn_at_user_code("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                              "memory won't be used.")

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)

    def _reset(self, loader) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)     # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        self._check_reported_length()
        return data

    def _check_reported_length(self) -> None:
        reported = self._IterableDataset_len_called
        if not (self._is_iterable and reported is not None and self._num_yielded > reported):
            return
        message = (f"Length of IterableDataset {self._dataset} was reported to be {reported}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
        if self._num_workers > 0:
            message += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
        warn_at_user_code(message)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetch the samples for each key (or batch of keys) and collate them, in this process."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._dataset_fetcher = create_fetcher(self._is_iterable, self._dataset, self._auto_collation,
                                               self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._dataset_fetcher.fetch(index)       # may raise StopIteration


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Batches made by ``num_workers`` worker processes.

    Task ``i`` (the sampler's ``i``-th key or list of keys) goes to the index queue of the next
    active worker in turn; ``_task_info[i]`` is ``(worker,)`` while it is outstanding and
    ``(worker, data)`` once its result came out of order. At most ``prefetch_factor *
    num_workers`` tasks are outstanding: each batch returned sends the next task. A worker whose
    ``IterableDataset`` ended is marked inactive and its outstanding tasks are skipped.
    """

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or multiprocessing
        self._owner_pid = os.getpid()
        self._shutdown = False
        self._workers = []
        self._workers_status = []
        self._index_queues = []
        self._worker_result_queue = context.Queue()
        self._data_queue = self._worker_result_queue
        self._workers_done_event = context.Event()
        _running_queues[id(self)] = (self._index_queues, self._worker_result_queue)
        for worker_id in range(self._num_workers):
            self._start_worker(context, loader.worker_init_fn, worker_id)
        self._reset(loader, first_iter=True)

    def _start_worker(self, context, worker_init_fn, worker_id: int) -> None:
        index_queue = context.Queue()
        index_queue.cancel_join_thread()
        process = context.Process(
            target=_worker._worker_loop,
            args=(self._is_iterable, self._dataset, index_queue, self._worker_result_queue, self._workers_done_event,
                  self._auto_collation, self._collate_fn, self._drop_last, self._base_seed, worker_init_fn,
                  worker_id, self._num_workers))
        process.daemon = True
        try:
            process.start()
        except (TypeError, AttributeError, pickle.PicklingError):
            warn_at_user_code("Got pickle error when attempting to start a worker Process. This might be because "
                              "the worker Process arguments are not picklable. Python 3.14+ changed the "
                              "multiprocessing start method in non-Mac POSIX platforms to 'forkserver', which requires "
                              "the worker Process arguments to be picklable. You can also try "
                              "multiprocessing.set_start_method('fork').")
            raise
        self._index_queues.append(index_queue)
        self._workers.append(process)
        self._workers_status.append(True)

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader)
        self._send_idx = 0                  # the next task to send
        self._rcvd_idx = 0                  # the next task to return
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            self._resume_workers()
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _resume_workers(self) -> None:
        """A new epoch of persistent workers: each makes a new fetcher and acknowledges it;
        results left over from an unfinished epoch are dropped."""
        for index_queue in self._index_queues:
            index_queue.put(_worker._ResumeIteration())
        waiting = self._num_workers
        while waiting > 0:
            idx, _ = self._get_data()
            if isinstance(idx, _worker._ResumeIteration):
                waiting -= 1

    def _try_get_data(self, timeout: float = _worker.MP_STATUS_CHECK_INTERVAL):
        """(True, message) from the result queue, or (False, None) after ``timeout`` seconds;
        raises if a worker has died."""
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as e:
            failed = [worker_id for worker_id, w in enumerate(self._workers)
                      if self._workers_status[worker_id] and not w.is_alive()]
            for worker_id in failed:
                self._mark_worker_as_unavailable(worker_id)
            if failed:
                pids = ", ".join(str(self._workers[worker_id].pid) for worker_id in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from _worker_failure(
                    self._workers[failed[0]])
            if isinstance(e, queue.Empty):
                return False, None
            raise

    def _get_data(self):
        """The next message of the result queue, checking the workers every ``_LIVENESS_INTERVAL``;
        PyTorch's error after ``timeout`` seconds without one (when set)."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _LIVENESS_INTERVAL if deadline is None else min(_LIVENESS_INTERVAL, deadline - time.monotonic())
            success, data = self._try_get_data(max(wait, 0))
            if success:
                return data
            if deadline is not None and time.monotonic() >= deadline:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _next_data(self):
        while True:
            if not self._skip_to_next_task():
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:       # its result came earlier
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            if self._shutdown or self._tasks_outstanding <= 0:
                raise AssertionError("Invalid iterator state: shutdown or no outstanding tasks when fetching next "
                                     "data")
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._is_iterable and isinstance(data, _worker._IterableDatasetStopIteration):
                self._worker_ended(data.worker_id)
                continue
            if idx == self._rcvd_idx or not self._in_order:
                worker_id = self._task_info.pop(idx)[0]
                if idx == self._rcvd_idx:
                    self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            self._task_info[idx] += (data,)

    def _skip_to_next_task(self) -> bool:
        """Move ``_rcvd_idx`` past tasks already returned or lost with an ended worker; False when none is left."""
        while self._rcvd_idx < self._send_idx:
            info = self._task_info.get(self._rcvd_idx)
            if info:
                if len(info) == 2 or self._workers_status[info[0]]:
                    return True
                del self._task_info[self._rcvd_idx]
            self._rcvd_idx += 1
        return False

    def _worker_ended(self, worker_id: int) -> None:
        """A worker's IterableDataset is exhausted: send it no more tasks (and stop it, unless persistent)."""
        if self._persistent_workers:
            self._workers_status[worker_id] = False
        else:
            self._mark_worker_as_unavailable(worker_id)
        self._try_put_index()

    def _try_put_index(self) -> None:
        """Send the sampler's next keys to the next active worker (none if the sampler is done)."""
        max_tasks = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= max_tasks:
            raise AssertionError("Number of outstanding tasks exceeded maximum allowed tasks")
        try:
            index = self._next_index()
        except StopIteration:
            return
        worker_id = self._next_worker(max_tasks)
        if worker_id is None:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _next_worker(self, max_tasks: int):
        """The next active worker in turn (out of order: one without its share of tasks), or None."""
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if not self._workers_status[worker_id]:
                continue
            if self._in_order or self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status):
                return worker_id
        return None

    def _process_data(self, data, worker_id: int):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id: int) -> None:
        """Tell a worker to exit (``None`` on its queue) and send it nothing more."""
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stop every worker: set the done event, send each ``None``, join them (terminate the slow ones).
        Nothing in another process (a forked worker collecting its copy of this iterator)."""
        if _python_exiting or self._shutdown or os.getpid() != self._owner_pid:
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id)
            for w in self._workers:
                w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            _running_queues.pop(id(self), None)
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL)

    def __del__(self) -> None:
        if getattr(self, "_workers", None) is not None:
            self._shutdown_workers()

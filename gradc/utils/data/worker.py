"""DataLoader worker processes (``torch.utils.data._utils.worker``): the loop each worker runs,
``get_worker_info()``, and the wrapper that carries a worker's exception to the main process.

A worker seeds Python's ``random`` and gradc's default generator with ``base_seed + worker_id``
and NumPy's global generator with the four words ``numpy.random.SeedSequence`` makes of
``[worker_id, low 32 bits of base_seed, high bits, 0]`` (PyTorch's ``_generate_state`` is that
algorithm), so ``gradc.initial_seed()``, ``gradc.randn``, ``random.random()`` and
``np.random.rand()`` in a worker give PyTorch's numbers. It then runs ``worker_init_fn``, makes
its fetcher and answers ``(task index, keys)`` messages from its index queue with
``(task index, batch)`` on the shared result queue until it receives ``None``. An exception
while fetching is sent as an ``ExceptionWrapper`` (re-raised in the main process as PyTorch's
"Caught ValueError in DataLoader worker process 0." with the original traceback); the end of an
``IterableDataset`` is sent as ``_IterableDatasetStopIteration``.
"""
from __future__ import annotations

import dataclasses
import os
import queue
import random
import sys
import traceback

import numpy as np

from .fetch import create_fetcher

MP_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between checks that the other side (main process or worker) is still alive."""

_worker_info = None


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerInfo:
    """The current DataLoader worker: its ``id`` (0 to ``num_workers - 1``), ``num_workers``,
    ``seed`` and this process's copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


def get_worker_info() -> WorkerInfo | None:
    """The ``WorkerInfo`` of this DataLoader worker process; ``None`` in the main process."""
    return _worker_info


@dataclasses.dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's ``IterableDataset`` is exhausted."""

    worker_id: int


@dataclasses.dataclass(frozen=True)
class _ResumeIteration:
    """Start a new epoch (persistent workers): make a new fetcher."""

    seed: int | None = None


class KeyErrorMessage(str):
    """A KeyError's message printed as it is (KeyError shows the repr of its argument)."""

    def __repr__(self):
        return self


# gradc's exception classes that are PyTorch's too (torch.linalg.LinAlgError, ...); its other ones
# (ShapeError, ArgumentError, ...) stand for the builtin exception PyTorch raises
_PYTORCH_ERROR_NAMES = ("LinAlgError", "GradcheckError", "CheckpointError")


def _pytorch_name(exc_type) -> str:
    """The exception's name as PyTorch would report it: a gradc-internal class by its most derived
    builtin base, the one besides RuntimeError when it has two (ShapeError -> RuntimeError,
    EmptyReductionError -> IndexError, ArgumentError -> TypeError)."""
    if not exc_type.__module__.startswith("gradc.") or exc_type.__name__ in _PYTORCH_ERROR_NAMES:
        return exc_type.__name__
    bases = [cls for cls in exc_type.__mro__ if cls.__module__ == "builtins"]
    leaves = [cls for cls in bases if not any(other is not cls and issubclass(other, cls) for other in bases)]
    specific = [cls for cls in leaves if cls is not RuntimeError]
    return (specific or leaves)[0].__name__


class ExceptionWrapper:
    """An exception and its formatted traceback, to be raised again in another process."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise an exception of the wrapped type whose message names where it was caught and
        holds the original traceback (a RuntimeError when the type cannot take one message)."""
        msg = f"Caught {_pytorch_name(self.exc_type)} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _ManagerWatchdog:
    """Whether the process that started this worker is still alive (its parent id is unchanged)."""

    def __init__(self) -> None:
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self) -> bool:
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


def numpy_seed(base_seed: int, worker_id: int) -> list:
    """The four 32-bit words a worker seeds NumPy's global generator with (PyTorch's
    ``_generate_state``: NumPy's SeedSequence of these entropy words, pool size 4)."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(entropy).generate_state(4).tolist()


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed ``random``, gradc and NumPy as a PyTorch worker does, one kernel thread; the seed."""
    from ... import random_state, torch_functions
    seed = base_seed + worker_id
    torch_functions.set_num_threads(1)
    os.environ["GRADC_NUM_THREADS"] = "1"        # this worker's kernels run on one thread, as PyTorch's
    random.seed(seed)
    random_state.manual_seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    return seed


def _start(is_iterable, dataset, auto_collation, collate_fn, drop_last, init_fn, worker_id):
    """(fetcher, None) after ``init_fn``, or (None, the wrapped exception either raised)."""
    try:
        if init_fn is not None:
            init_fn(worker_id)
        return create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last), None
    except Exception:
        return None, ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")


def _fetch(fetcher, index, is_iterable: bool, worker_id: int):
    """(what to send for ``index``, whether the dataset's iterator has ended)."""
    try:
        return fetcher.fetch(index), False
    except Exception as e:
        if isinstance(e, StopIteration) and is_iterable:
            return _IterableDatasetStopIteration(worker_id), True
        return ExceptionWrapper(where=f"in DataLoader worker process {worker_id}"), False


def _worker_loop(is_iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers) -> None:
    """The body of worker ``worker_id``: answer the index queue's tasks until ``None`` arrives
    (or the main process has gone)."""
    global _worker_info
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        fetcher, init_error = _start(is_iterable, dataset, auto_collation, collate_fn, drop_last, init_fn, worker_id)
        iteration_end = False
        watchdog = _ManagerWatchdog()
        while watchdog.is_alive():
            try:
                message = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(message, _ResumeIteration):
                data_queue.put((message, None))
                iteration_end = False
                if init_error is None:
                    fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if message is None:         # the final message: the main process set done_event or saw our end
                break
            if done_event.is_set() or iteration_end:
                continue                # wait for None without fetching
            idx, index = message
            if init_error is not None:
                data = init_error
            else:
                data, iteration_end = _fetch(fetcher, index, is_iterable, worker_id)
            data_queue.put((idx, data))
            del data, idx, index, message
    except KeyboardInterrupt:
        pass                            # the main process raises it
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()

"""gradc.profiler: PyTorch's ``torch.profiler`` interface over ``gradc.autograd.profiler``.

``profile(activities=..., schedule=..., on_trace_ready=...)`` records the CPU events of the
eager ops (see ``gradc.autograd.profiler``) during the steps its ``schedule`` marks RECORD or
RECORD_AND_SAVE, hands itself to ``on_trace_ready`` at the end of each active cycle (and on
exit while recording), and ``step()`` moves to the next step. Only ``ProfilerActivity.CPU`` is
measured; other activities are accepted and record nothing more.
"""
from __future__ import annotations

import enum
import warnings

from .autograd import profiler as _autograd_profiler
from .autograd.profiler import EventList, record_function

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "record_function", "schedule", "supported_activities"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """PyTorch's step schedule: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recorded steps (the last of them RECORD_AND_SAVE), ``repeat`` times
    (0: for ever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _always_record(_step):
    return ProfilerAction.RECORD


class profile(_autograd_profiler.profile):
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        super().__init__(record_shapes=record_shapes)
        self.activities = set(activities) if activities else supported_activities()
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)

    def start(self):
        super().__enter__()
        self._running = self.current_action in _RECORDING
        return self

    def stop(self):
        recording = self._running
        super().__exit__(None, None, None)
        if recording and self.on_trace_ready:
            self.on_trace_ready(self)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self):
        """Move to the next step: a finished active cycle goes to ``on_trace_ready``, and a new
        cycle starts with no events."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev == ProfilerAction.RECORD_AND_SAVE:
            self._running = False
            if self.on_trace_ready:
                self.on_trace_ready(self)
        if self.current_action != ProfilerAction.NONE and prev in (ProfilerAction.NONE, ProfilerAction.RECORD_AND_SAVE):
            self._events = EventList()
        self._running = self.current_action in _RECORDING

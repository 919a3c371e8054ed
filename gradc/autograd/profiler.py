"""A CPU profiler with PyTorch's interface: ``profile`` and ``record_function``.

While a ``profile`` is entered, every eager op application (``Tensor._apply``, the one place
eager ops run, wrapped for the profile's duration only, so nothing is paid otherwise) and every
``record_function`` block is timed with ``time.perf_counter_ns``. An op is named ``aten::`` and
its gradc op name (``aten::matmul``, ``aten::relu``; the backward pass's ops appear as theirs);
ops run inside a block count towards the block's total but not its self time, as in PyTorch.
``key_averages().table()`` prints PyTorch's CPU columns (Self CPU %, Self CPU, CPU total %,
CPU total, CPU time avg, # of Calls). Each backward node run by the engine is an
``autograd::engine::evaluate_function: MulBackward0`` event around its ops, as in PyTorch.
Compiled functions (``@gradc.compile``) run as one native call and show up only through the
eager ops around them; factories (``ones``, ``randn``) are not table ops and are not timed.
There are no CUDA, memory, FLOP or stack columns: those arguments are accepted and ignored.
"""
from __future__ import annotations

import json
import time
from collections import OrderedDict

_active: list = []              # the profiles entered (innermost last); only the innermost records
_open: list = []                # the events being timed (innermost last), for parent links


class FunctionEvent:
    """One timed op application or ``record_function`` block (times in microseconds)."""

    def __init__(self, name, start_us, parent=None, input_shapes=None):
        self.name = self.key = name
        self.start_us = start_us
        self.end_us = start_us
        self.parent = parent
        self.cpu_children: list = []
        self.input_shapes = input_shapes or []
        self.count = 1

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent name={self.name} cpu_time_total={_format_time(self.cpu_time_total)} "
                f"self_cpu_time_total={_format_time(self.self_cpu_time_total)}>")


class FunctionEventAvg:
    """The events of one key added up: totals, call count and the mean total time per call."""

    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None

    def add(self, event):
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} count={self.count}>")


def _format_time(us):
    """PyTorch's time format: seconds, milliseconds or microseconds with three decimals."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


_SORT_KEYS = {"cpu_time_total", "self_cpu_time_total", "cpu_time", "count"}


class EventList(list):
    """A list of events (or of their averages) with PyTorch's ``key_averages`` and ``table``."""

    def key_averages(self, group_by_input_shape=False):
        groups: OrderedDict = OrderedDict()
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shape else e.key
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(e.key)
                avg.input_shapes = e.input_shapes if group_by_input_shape else None
            avg.add(e)
        return EventList(groups.values())

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def total_average(self):
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, header=None, top_level_events_only=False):
        """PyTorch's table of the CPU columns, rows sorted by ``sort_by`` (descending)."""
        rows = [e for e in self if not (top_level_events_only and getattr(e, "parent", None) is not None)]
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}'")
            rows = sorted(rows, key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_self = self.self_cpu_time_total
        total_self_for_pct = total_self or 1.0
        name_width = min(max([len(e.key) for e in rows] + [4]) + 4, max_name_column_width)
        widths = [name_width] + [12] * 6
        titles = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        line = "  ".join("-" * w for w in widths) + "  "

        def fmt(cells):
            return "  ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + "  "
        out = [] if header is None else ["=" * len(line), header]
        out += [line, fmt(titles), line]
        for e in rows:
            name = e.key if len(e.key) <= name_width else e.key[:name_width - 3] + "..."
            out.append(fmt([name, f"{100 * e.self_cpu_time_total / total_self_for_pct:.2f}%",
                            _format_time(e.self_cpu_time_total),
                            f"{100 * e.cpu_time_total / total_self_for_pct:.2f}%", _format_time(e.cpu_time_total),
                            _format_time(e.cpu_time), e.count]))
        out += [line, f"Self CPU time total: {_format_time(total_self)}", ""]
        return "\n".join(out)

    def __str__(self):
        return self.table()


def _now_us():
    return time.perf_counter_ns() / 1000.0


def _begin(name, input_shapes=None):
    prof = _active[-1]
    parent = _open[-1] if _open else None
    event = FunctionEvent(name, _now_us(), parent, input_shapes)
    if parent is not None:
        parent.cpu_children.append(event)
    prof._events.append(event)
    _open.append(event)
    return event


def _end(event):
    event.end_us = _now_us()
    _open.remove(event)


def _timed_run_node(original):
    """The engine's ``_run_node`` recording PyTorch's ``autograd::engine::evaluate_function: <node>``
    event around each backward node (its ops nest inside)."""
    def _run_node(node, grads, retain_graph):
        if not _active or not _active[-1]._running:
            return original(node, grads, retain_graph)
        event = _begin(f"autograd::engine::evaluate_function: {node.name()}")
        try:
            return original(node, grads, retain_graph)
        finally:
            _end(event)
    return _run_node


def _timed_apply(original):
    """``Tensor._apply`` recording one event per op application."""
    def _apply(cls, op, inputs, attrs, node_name=None):
        if not _active or not _active[-1]._running:
            return original(op, inputs, attrs, node_name)
        shapes = [list(x.shape) for x in inputs] if _active[-1].record_shapes else None
        event = _begin("aten::" + op.name, shapes)
        try:
            return original(op, inputs, attrs, node_name)
        finally:
            _end(event)
    return classmethod(_apply)


class profile:
    """``with profile() as prof: ...`` then ``prof.key_averages().table(sort_by="cpu_time_total")``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self._events = EventList()
        self._running = False
        self._original = None

    def __enter__(self):
        if not self.enabled:
            return self
        from ..tensor import Tensor
        from . import engine
        if not _active:
            self._original = (Tensor.__dict__["_apply"], engine._run_node)
            Tensor._apply = _timed_apply(Tensor._apply)
            engine._run_node = _timed_run_node(engine._run_node)
        _active.append(self)
        self._running = True
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        from ..tensor import Tensor
        from . import engine
        self._running = False
        _active.remove(self)
        if self._original is not None:
            Tensor._apply, engine._run_node = self._original
            self._original = None
        return False

    @property
    def function_events(self):
        """The events recorded so far (complete once the profile is exited)."""
        return self._events

    def events(self):
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return self.function_events.key_averages(group_by_input_shape)

    def table(self, sort_by=None, row_limit=100, max_name_column_width=55, header=None, top_level_events_only=False):
        return self.function_events.table(sort_by, row_limit, max_name_column_width, header, top_level_events_only)

    @property
    def self_cpu_time_total(self):
        return self.function_events.self_cpu_time_total

    def total_average(self):
        return self.function_events.total_average()

    def export_chrome_trace(self, path):
        """The events as a Chrome trace (``chrome://tracing``), complete events in microseconds."""
        trace = [{"name": e.name, "ph": "X", "ts": e.start_us, "dur": e.cpu_time_total, "pid": 0, "tid": 0,
                  "cat": "cpu_op" if e.name.startswith("aten::") else "user_annotation"}
                 for e in self.function_events]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace}, f)

    def __str__(self):
        return self.table()


class record_function:
    """A named block in the profile being recorded (a context manager or a decorator); outside
    a profile it only runs the code."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._event = None

    def __enter__(self):
        if _active and _active[-1]._running:
            self._event = _begin(self.name)
        return self

    def __exit__(self, *exc):
        if self._event is not None:
            _end(self._event)
            self._event = None
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper

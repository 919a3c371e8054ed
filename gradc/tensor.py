"""The eager Tensor: NumPy storage, dtype, device, version counter, autograd
metadata, printing and conversions. Ops come from ``TensorAPI`` and run through
``Tensor._apply``, which executes the op table's NumPy reference and records a
backward node whose VJP is the table's rule.

A tensor on ``cuda`` holds a ``DeviceArray`` (``codegen/cuda_driver.py``) instead of a
NumPy array; its ops run as compiled single-op GPU kernels (``codegen/backend_cuda.py``)
and it is copied to the host only to print or convert it. Contiguous views of CUDA tensors
(reshape, ``x[i]``, ``x[a:b]``) share the device buffer at an offset, with the base's version
counter and in-place history as on the CPU; other views (permute, expand, strided or advanced
indexing) are copies (``_CudaCopyView``) that share the base's version counter and recompute
themselves after an in-place change of the base; an in-place write to one raises."""
from __future__ import annotations

import threading
from types import MappingProxyType

import math

import numpy as np

from . import _printing, dtypes
from ._warnings import first_time, warn_at_user_code
from .arg_parser import bool_arg, parses
from . import autograd as _autograd     # (partly initialized here: its names are read at call time)
from .autograd import grad_mode
from .autograd.engine import run_unit_backward
from .autograd.node import AccumulateGrad, Node, RemovableHandle, leaf_hooks_seen, node_class, version_error_label
from .codegen import eager_cpu
from .codegen.cuda_driver import DeviceArray
from .ops import dispatch as _dispatch
from .ops import registry
from .ops.registry import ELEMENTWISE, NONDIFF, REDUCTION, VIEW, TypeInfo
from .tensor_api import Size, TensorAPI, is_tensor_like, norm_dim

NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information. "
    "(Triggered internally at /__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)")
SCALAR_OF_GRAD_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:822.)")




_new_object = object.__new__
# the gradient edge of a view made in no_grad (or inference) mode of a tensor that requires grad:
# it requires grad through its base but, a leaf without a grad accumulator of its own, it takes
# no gradient (PyTorch's grad_accumulator() is null for it); ``requires_grad_(True)`` gives it one
NO_EDGE = (None, 0)
NON_LEAF_REQUIRES_GRAD = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph "
    "that doesn't require differentiation use var_no_grad = var.detach().")
ONLY_FLOAT_REQUIRES_GRAD = "only Tensors of floating point dtype can require gradients"


class _VersionCounter:
    """How many in-place changes a tensor's storage has had (shared by its views).  ``internal``:
    the storage was made while ``@gradc.compile`` traced (``push_counter``); other
    storage is the traced function's outside state (closures), which the tracer records ops on
    instead of computing them once.  ``inference``: the storage was made in inference mode, so
    its tensors (and their views, which share the counter) are PyTorch's inference tensors."""
    value = 0      # a class default: making a counter (one per tensor) runs no __init__
    internal = False
    inference = False
    watchers = None    # weak references to the compiled calls' nodes that would read this storage
                       # again without having saved it (``CompiledFunctionBackward._watch``)


class _InternalCounter(_VersionCounter):
    internal = True


class _DataCounter(_VersionCounter):
    """The version counter of ``t.data``: a count of its own (PyTorch's ``.data`` does not share
    ``t``'s version), but an in-place write through it is announced to the watchers of ``t``'s
    storage (``before_write``), since it changes what ``t`` holds."""

    def __init__(self, shadow_of: _VersionCounter):
        self.shadow_of = shadow_of

    @property
    def watchers(self):
        return self.shadow_of.watchers

    @watchers.setter
    def watchers(self, value):
        self.shadow_of.watchers = value


class _InferenceCounter(_VersionCounter):
    inference = True


class _InternalInferenceCounter(_InternalCounter):
    inference = True


class _CounterStack(threading.local):
    """Per thread, what each new tensor's storage gets, innermost last: ``_VersionCounter``,
    ``_InternalCounter`` during a trace, an inference one in ``inference_mode``
    (``push_inference_counter``).  A tuple, so the class default serves a thread that pushed none."""
    stack = (_VersionCounter,)


_counters = _CounterStack()


# counters pushed in all threads together: while none is, every new storage's counter is a
# ``_VersionCounter`` and the hot paths skip the thread-local lookup (``_counter_class``)
_pushed = [0]
_push_lock = threading.Lock()


def push_counter(cls) -> None:
    with _push_lock:
        _pushed[0] += 1
    _counters.stack += (cls,)


def pop_counter() -> None:
    _counters.stack = _counters.stack[:-1]
    with _push_lock:
        _pushed[0] -= 1


def new_counter() -> _VersionCounter:
    """A version counter for new storage, of the kind the current thread's mode asks for."""
    return (_counters.stack[-1] if _pushed[0] else _VersionCounter)()

_COUNTERS = {(False, False): _VersionCounter, (True, False): _InternalCounter,
             (False, True): _InferenceCounter, (True, True): _InternalInferenceCounter}

INFERENCE_SAVE_ERROR = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


# whether inference mode was ever entered: until then no inference tensor exists, and the checks
# for one (a compiled call's, at every call) can be skipped
inference_seen = [False]


def push_inference_counter(enabled: bool) -> None:
    """Entering ``inference_mode(enabled)``: tensors made from now on are inference tensors (or,
    for ``inference_mode(False)``, normal ones); ``pop_inference_counter`` on exit."""
    if enabled:
        inference_seen[0] = True
    push_counter(_COUNTERS[_counters.stack[-1].internal, bool(enabled)])


def pop_inference_counter() -> None:
    pop_counter()


def check_inference_write(t) -> None:
    """PyTorch refuses an in-place change of an inference tensor outside inference mode."""
    if t._version_counter.inference and not grad_mode.is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")


def before_write(counter) -> None:
    """The storage ``counter`` counts the changes of is about to change in place: each compiled
    call's node watching it keeps a copy of what it reads (``CompiledFunctionBackward``), as eager
    autograd's nodes kept the values they saved.  (The writes that do not call this, a NumPy
    view's, leave PyTorch's version-counter error in place of the copy.)"""
    counter = getattr(counter, "shadow_of", counter)      # (a write through ``.data``: the tensor's storage)
    watchers, counter.watchers = counter.watchers, None
    for ref in watchers:
        node = ref()
        if node is not None:
            node._input_written(counter)


# PyTorch's device types, which its message for another lists
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                       "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:
    """torch.device: a type ('cpu' or 'cuda') and an optional index."""

    def __init__(self, spec="cpu", index=None):
        if isinstance(spec, device):
            spec, index = spec.type, spec.index
        spec = str(spec)
        if ":" in spec:
            spec, idx = spec.split(":", 1)
            index = int(idx)
        if spec not in ("cpu", "cuda"):
            if spec in _TORCH_DEVICE_TYPES:
                raise RuntimeError(f"gradc has cpu and cuda devices only, not {spec}")
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type at start of device "
                               f"string: {spec}")
        self.type = spec
        self.index = index
        self._hash = hash((spec, index or 0))
        self._key = "cpu" if spec == "cpu" else f"{spec}:{index or 0}"   # in @gradc.compile's guard keys

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index or 0) == (other.type, other.index or 0)

    def __hash__(self):
        return self._hash


CPU = device("cpu")
CUDA0 = device("cuda", 0)


def check_device(dev) -> device:
    d = device(dev) if dev is not None else CPU
    if d.type == "cuda":
        from .cuda import require_cuda
        require_cuda()
        if d.index not in (None, 0):
            raise RuntimeError(f"CUDA error: invalid device ordinal (gradc uses one GPU, cuda:0; got {d})")
        return CUDA0
    return d


class Tensor(TensorAPI):
    """An eager tensor. Create with ``gradc.tensor`` and the other factories."""
    _dispatch_priority = 1
    __array_priority__ = 1000     # NumPy's binary ops defer to ours: np.float64(2) * x is a Tensor
    # Per-tensor state that most tensors never change lives here as class defaults, so making a
    # tensor sets three attributes (storage, dtype, version counter); each of these is set on the
    # instance when it changes. ``_hooks`` is replaced by a dict of its own on first use.
    _device = CPU
    _grad_fn = None
    _output_nr = 0
    _grad = None
    _requires_grad = False
    _hooks = MappingProxyType({})
    _leaf_edge = None
    _retains_grad = False
    _base = None
    _view_of = None
    _parent_layout = None       # the layout of _view_of's parent when this view was taken
    _history_version = 0        # a view: its version when its grad_fn was made (see _refresh_view_history)
    _creation_meta = None       # a view PyTorch refuses to write in place (view_write_error): "multi_output",
                                # "no_grad", "inference", "custom_function" (its CreationMeta)
    _view_output_nr = 0         # that refusal's "Output k of ...": the view's place among its function's outputs
    _view_node_name = None      # (a view of a no_grad view: the grad_fn name PyTorch gives it, gradc makes no node)
    _fresh = False      # a gradient array nobody else holds (AccumulateGrad may keep it as .grad)
    _device_copy_view = False   # a CUDA view gradc had to copy (see _assign_inplace)
    _wide_scalar = None         # a scalar operand of a float16 mul/div, kept in float32 (PyTorch's)
    _storage_origin = None      # gradc.load's storage (a NumPy array) for a loaded tensor: storage_offset()

    def __init__(self, data, requires_grad=False, *, _version=None):
        dev = CPU
        if isinstance(data, DeviceArray):
            dev = CUDA0
        elif not isinstance(data, np.ndarray):
            data = np.asarray(data)
        self._data = data
        self._dtype = dtypes.from_numpy(data.dtype)
        if self._dtype.np != data.dtype:
            self._data = data = data.astype(self._dtype.np)
        if dev is not CPU:
            self._device = dev
        self._version_counter = _version or new_counter()
        if requires_grad:
            self.requires_grad_(True)

    # ---- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def _version(self) -> int:
        if self._version_counter.inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._version_counter.value

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (PyTorch's ``Tensor._is_view``)."""
        return self._base is not None

    def is_inference(self) -> bool:
        """Whether this tensor was made in inference mode (or is a view of one that was)."""
        return self._version_counter.inference

    @property
    def requires_grad(self) -> bool:
        if (self._view_of is not None and self._history_version != self._version_counter.value
                and self._creation_meta is None):      # (PyTorch's requires_grad does not regenerate grad_fn)
            _refresh_view_history(self)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        self.requires_grad_(value)

    @parses("requires_grad_", "(bool requires_grad = True)")
    def requires_grad_(self, requires_grad=True):
        requires_grad = bool_arg(requires_grad)
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(NON_LEAF_REQUIRES_GRAD)
            return self
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError(ONLY_FLOAT_REQUIRES_GRAD)
        if requires_grad and self._version_counter.inference and not grad_mode.is_inference_mode_enabled():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if self._creation_meta in ("no_grad", "inference") and self._base.requires_grad:
            # a view made in no_grad mode requires grad while its base does; its own flag says
            # whether gradients reaching it accumulate into its .grad
            self._leaf_edge = None if requires_grad else NO_EDGE
            self._requires_grad = True
            return self
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        if self._view_of is not None and self._history_version != self._version_counter.value:
            _refresh_view_history(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad:
            warn_at_user_code(NONLEAF_GRAD_WARNING, UserWarning)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                                   f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                                   "the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype.c_type}' to a tensor with "
                    f"grad_dtype '{self.dtype.tensor_type[:-6]}'. The gradient must match the tensor's grad_dtype "
                    "(defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a "
                    "specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes "
                    "of a tensor and its gradient may break downstream systems that assume they match.")
        self._grad = value

    @property
    def data(self):
        if _dispatch.capturing.items and id(self) in _dispatch.capturing[-1].rewritten:    # (see detach)
            return _dispatch.apply("detach", self)
        t = Tensor(self._data)
        t._device = self._device
        c = self._version_counter
        t._version_counter = _DataCounter(getattr(c, "shadow_of", c))
        return t

    @data.setter
    def data(self, value):
        if _dispatch.capturing.items and is_tensor_like(value) and not isinstance(value, Tensor):
            _dispatch.capturing[-1].write_state(self, value.detach())   # a traced value: traced on
            return
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        self._data = value._data
        self._dtype = value._dtype

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def is_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    def stride(self, dim=None):
        st = tuple(s // self._dtype.itemsize for s in self._data.strides)
        if dim is None:
            return st
        if not st:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return st[norm_dim(dim, len(st))]

    # ---- in-place shape changes (t_, transpose_, squeeze_, unsqueeze_) ----------------------
    def _restride_(self, view, node_name):
        """Make this tensor ``view`` (a view of it just made) in place, as PyTorch's in-place view
        ops do: the same object with the new shape and strides, its version bumped, and (when
        recording) the view's node, renamed ``node_name``, as its grad_fn."""
        check_inference_write(self)
        tracking = grad_mode.is_grad_enabled()
        if self._creation_meta is not None:
            self._check_view_write()
        if tracking and self._requires_grad and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        source = self
        if self._base is not None:     # a view: the new one is a view of (an object standing for) the old one
            source = Tensor._wrap(self._data)
            source._version_counter, source._base, source._view_of = self._version_counter, self._base, self._view_of
            source._grad_fn, source._output_nr = self._grad_fn, self._output_nr
            source._requires_grad, source._parent_layout = self._requires_grad, self._parent_layout
            source._creation_meta = self._creation_meta
        result = view(source)
        if self._version_counter.watchers:
            before_write(self._version_counter)
        self._data = result._data
        if source is not self:
            self._view_of, self._parent_layout = result._view_of, result._parent_layout
        self._version_counter.value += 1
        if tracking and result._grad_fn is not None:
            node = result._grad_fn
            node.__class__ = node_class(node_name)
            self._grad_fn, self._output_nr, self._requires_grad = node, 0, True
            node._rebind_output(result, self)
        return self

    def t_(self): return self._restride_(lambda x: x.t(), "TBackward1")
    def transpose_(self, dim0, dim1): return self._restride_(lambda x: x.transpose(dim0, dim1), "TransposeBackward1")
    def swapdims_(self, dim0, dim1): return self.transpose_(dim0, dim1)
    def swapaxes_(self, axis0, axis1): return self.transpose_(axis0, axis1)
    def unsqueeze_(self, dim): return self._restride_(lambda x: x.unsqueeze(dim), "UnsqueezeBackward1")

    def squeeze_(self, dim=None):
        return self._restride_(lambda x: x.squeeze() if dim is None else x.squeeze(dim),
                               "SqueezeBackward3" if dim is None else "SqueezeBackward1")

    def _view_as_dtype(self, dt):
        """``view(dtype)``: the same memory read as ``dt`` (PyTorch's rules for a different element
        size: the last dim scales and must be contiguous); no history, as PyTorch's."""
        src, dt = self._dtype, dtypes.as_dtype(dt)
        if not isinstance(self._data, np.ndarray):
            raise RuntimeError("gradc: view(dtype) of a CUDA tensor is not supported")
        if dt.itemsize != src.itemsize:
            what = f"to view {src.tensor_type[:-6]} as {dt.tensor_type[:-6]} (different element sizes)"
            if self._data.ndim == 0:
                raise RuntimeError(f"self.dim() cannot be 0 {what}")
            step = self._data.strides[-1] // src.itemsize if self._data.shape[-1] > 1 else 1
            if step != 1:
                raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {step}")
            if dt.itemsize > src.itemsize and (self._data.shape[-1] * src.itemsize) % dt.itemsize:
                raise RuntimeError(f"self.size(-1) must be divisible by {dt.itemsize // src.itemsize} {what}, but got "
                                   f"{self._data.shape[-1]}")
        t = Tensor(self._data.view(dt.np))
        t._version_counter = self._version_counter
        return t

    def resize_(self, *sizes):
        """PyTorch's resize_: the first elements kept (in row-major order), new ones zero (PyTorch
        leaves them uninitialised); refused for a tensor that requires grad."""
        from .tensor_api import _shape_args
        shape = _shape_args(sizes)
        check_inference_write(self)
        if self._requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        if not isinstance(self._data, np.ndarray):
            raise RuntimeError("gradc: resize_ of a CUDA tensor is not supported")
        n = math.prod(shape)
        if self._version_counter.watchers:
            before_write(self._version_counter)
        flat = self._data.reshape(-1)
        if n <= flat.size and self._data.flags.c_contiguous:
            self._data = flat[:n].reshape(shape)
        else:
            grown = np.zeros(n, self._data.dtype)
            grown[:min(n, flat.size)] = flat[:n]
            self._data = grown.reshape(shape)
        self._version_counter.value += 1
        return self

    def resize_as_(self, other):
        return self.resize_(*other.shape)

    def storage_offset(self) -> int:
        """Elements from the start of the storage (the base tensor's memory, or the storage gradc.load
        made) to this view's first."""
        if not isinstance(self._data, np.ndarray):
            return 0
        root = self if self._base is None else self._base
        origin = root._storage_origin
        if origin is None:
            if root is self:
                return 0
            origin = root._data
        start = origin.__array_interface__["data"][0]
        return (self._data.__array_interface__["data"][0] - start) // self._dtype.itemsize

    def data_ptr(self) -> int:
        if isinstance(self._data, DeviceArray):
            return id(self._data.buffer) + self._data.offset
        return self._data.__array_interface__["data"][0]

    # ---- ops -----------------------------------------------------------------------------------
    @classmethod
    def _apply(cls, op, inputs, attrs, node_name=None):
        info = op.__dict__.get("_eager_info") or _EagerOpInfo.of(op)
        dev = None
        if len(inputs) == 1 and type(inputs[0]) is Tensor:       # (a view or a unary op: nothing to compare)
            dev = inputs[0]._device
        else:
            for x in inputs:
                if not isinstance(x, Tensor):
                    raise TypeError(f"gradc.{op.name}: expected Tensor inputs, got {type(x).__name__}")
                if dev is None:
                    dev = x._device
                elif x._device is not dev and x._device != dev:
                    raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                       f"devices, {dev} and {x._device}!")
        types, out_types, route = info.types(op, inputs, attrs)
        if dev is CPU or dev is None or dev.type == "cpu":
            if info.is_view:         # (a view op never runs as a kernel or in float32 for float16)
                outs = [_host_view(op, inputs, attrs, out_types, node_name)]
            else:
                outs = _wrap_host_results(_run_on_host(info, op, inputs, attrs, types, route), out_types)
        else:
            outs = []
            for a in _run_on_device(op, inputs, attrs, types, out_types):
                t = Tensor._wrap(a)
                t._device = dev
                outs.append(t)
            if info.is_view:
                _link_device_view(op, inputs, attrs, outs[0], node_name)
        if info.records and grad_mode._state.enabled:
            wanted = False
            for x in inputs:
                if x._view_of is not None and x._history_version != x._version_counter.value:
                    _refresh_view_history(x)
                if x._requires_grad:
                    wanted = True
            if wanted:              # (else no input needs a gradient: no node)
                _record(info, op, inputs, attrs, node_name, outs, types, out_types)
        return outs[0] if op.num_outputs == 1 else tuple(outs)

    @classmethod
    def _wrap(cls, array):
        """A new leaf Tensor owning ``array`` (already one of gradc's dtypes): no checks or copies."""
        t = _new_object(cls)           # (made on every op and compiled call: kept lean)
        t._data = array
        t._dtype = dtypes.BY_NUMPY.get(array.dtype) or dtypes.from_numpy(array.dtype)
        t._version_counter = (_counters.stack[-1] if _pushed[0] else _VersionCounter)()   # (new_counter, inline)
        return t

    @classmethod
    def _wrap_all(cls, arrays) -> list:
        """``[cls._wrap(a) for a in arrays]`` in one loop, no call per array (a compiled call's
        outputs and gradients: a third less time for W5's four gradients)."""
        new_counter = _counters.stack[-1] if _pushed[0] else _VersionCounter
        by_numpy = dtypes.BY_NUMPY
        out = []
        for array in arrays:
            t = _new_object(cls)
            t._data = array
            t._dtype = by_numpy.get(array.dtype) or dtypes.from_numpy(array.dtype)
            t._version_counter = new_counter()
            out.append(t)
        return out

    def _grad_edge(self):
        if self._view_of is not None and self._history_version != self._version_counter.value:
            _refresh_view_history(self)
        if self._grad_fn is not None:
            return (self._grad_fn, self._output_nr)
        edge = self._leaf_edge
        if edge is None:           # one AccumulateGrad per leaf, one edge tuple shared by every node
            edge = self._leaf_edge = (AccumulateGrad(self), 0)
        return edge

    def _scalar(self, value, dtype):
        dt = dtypes.as_dtype(dtype)
        if isinstance(value, float) and dt.category == 1 and not dtypes.fits(value, dt):
            raise dtypes.overflow_error(dt)         # NaN, inf or out of range into an integer tensor
        try:
            if dt is dtypes.float16:        # (a float beyond float16's range is inf, silently)
                with np.errstate(over="ignore"):
                    t = Tensor._wrap(np.asarray(value, dtype=dt.np))
            else:
                t = Tensor._wrap(np.asarray(dtypes.unsigned_wrap(value, dt), dtype=dt.np))     # (of dt: no checks needed)
        except OverflowError:
            if isinstance(value, int) and not -2**63 <= value < 2**64:
                raise OverflowError("int too big to convert") from None
            raise dtypes.overflow_error(dt) from None
        if dt is dtypes.float16 and isinstance(value, float):
            t._wide_scalar = np.asarray(value, np.float32)   # the operand a float16 op computes with
        return t._to_device(self._device) if self._device.type != "cpu" else t

    def _index_tensor(self, value):
        if isinstance(value, Tensor):
            value = value._host()
        arr = np.asarray(value)
        if arr.dtype.kind not in "iub":
            if arr.size == 0:
                arr = arr.astype(np.int64)
            else:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        t = Tensor(arr if arr.dtype.kind == "b" else arr.astype(np.int64))
        return t._to_device(self._device) if self._device.type != "cpu" else t

    def _check_view_write(self, result=None, via=None):
        """PyTorch's refusal of an in-place write, while gradients are recorded and something
        involved requires grad, to a view made by a function returning several views (unbind,
        split, chunk) or made in no_grad mode, or to a view of one (``via``: the grad_fn name of
        the view setitem writes through)."""
        if self._creation_meta is None or not grad_mode.is_grad_enabled():
            return
        if self._requires_grad or self._base._requires_grad or (result is not None and result._requires_grad):
            raise view_write_error(self, indirect=False, via=via)

    def _assign_inplace(self, result):
        check_inference_write(self)
        tracking = grad_mode.is_grad_enabled()
        if self._creation_meta is not None:
            self._check_view_write(result)
        if tracking and self._requires_grad and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        if type(result)._dispatch_priority > 1:       # a traced value written into an eager tensor
            return result._trace.write_state(self, result)
        base = self._base
        rebase = tracking and base is not None and (base._requires_grad or result._requires_grad)
        if rebase and base._requires_grad and base._grad_fn is None:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        if self._device_copy_view:
            raise RuntimeError(
                "gradc: in-place operation on a non-contiguous view of a CUDA tensor. gradc keeps such views "
                "(permute, transpose, expand, strided or advanced indexing) as copies on the GPU, so the write "
                "would not reach the tensor it views, as it does in PyTorch. Write to the base tensor, or "
                "clone() the view first to get an independent tensor.")
        if not self._data.flags.writeable:
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to "
                               "a single memory location. Please clone() the tensor before performing the "
                               "operation.")
        if result._device != self._device:
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               f"{self._device} and {result._device}!")
        if tracking and result._grad_fn is not None:
            _save_original_self(result._grad_fn, self)
        if self._version_counter.watchers:
            before_write(self._version_counter)
        if isinstance(self._data, DeviceArray):
            src = result._data
            if src.dtype != self._data.dtype or src.shape != self._data.shape:
                src = result.detach().to(self._dtype).expand(*self._data.shape)._data
            self._data.driver.copy(self._data, src)
        else:
            np.copyto(self._data, result._data, casting="unsafe")
        self._version_counter.value += 1
        if rebase:
            _rebase_view(self, result)
            if result._grad_fn is not None:
                result._grad_fn._rebind_output(result, self)
            return
        if tracking and result._grad_fn is not None:
            node = result._grad_fn
            self._grad_fn = node
            self._output_nr = result._output_nr
            self._requires_grad = True
            node._rebind_output(result, self)

    # ---- autograd entry points -----------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        node = self._grad_fn
        if (gradient is None and inputs is None and create_graph is False and node is not None
                and self._data.ndim == 0 and (retain_graph is None or type(retain_graph) is bool)):
            if run_unit_backward(node, bool(retain_graph)):      # a compiled scalar loss: no graph walk
                return
        _autograd.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs)

    def register_hook(self, hook):
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:         # (the property: a view written through since raises, as PyTorch's)
            if type(self._hooks) is MappingProxyType:
                self._hooks = {}
                leaf_hooks_seen[0] = True
            store = self._hooks
        else:
            store = self._grad_fn._hook_dict("_tensor_pre_hooks").setdefault(self._output_nr, {})
        handle = RemovableHandle(store)
        store[handle.id] = hook
        return handle

    def retain_grad(self):
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        import weakref
        self._grad_fn._hook_dict("_retains_grad")[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    def detach(self):
        if _dispatch.capturing.items and id(self) in _dispatch.capturing[-1].rewritten:
            # a traced value was written into it (under @gradc.compile): its data here is stale
            return _dispatch.apply("detach", self)
        t = Tensor(self._data, _version=self._version_counter)
        t._device = self._device
        return t

    def detach_(self):
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    def contiguous(self):
        if self._data.flags.c_contiguous:
            return self
        t = self.clone()          # (clone keeps a dense layout's strides, as PyTorch's preserve_format)
        if isinstance(t._data, np.ndarray) and not t._data.flags.c_contiguous:
            t._data = np.ascontiguousarray(t._data)      # the clone's own fresh storage: row-major
        return t

    def _to_device(self, dev):
        d = check_device(dev)
        if d == self._device:
            return self
        from .cuda import require_cuda
        drv = require_cuda()
        data = drv.to_device(self._data) if d.type == "cuda" else drv.to_host(self._data)
        out = Tensor(data)
        out._device = d
        if grad_mode.is_grad_enabled() and self._requires_grad:
            node = ToCopyBackward0(self._device)
            node._next = (self._grad_edge(),)
            out._grad_fn, out._output_nr, out._requires_grad = node, 0, True
        return out

    def cpu(self):
        return self._to_device("cpu")

    def cuda(self, device=None):
        return self._to_device("cuda" if device is None else device)

    # ---- conversions ---------------------------------------------------------------------
    def numpy(self, *, force=False):
        if isinstance(self._data, DeviceArray):
            raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to copy "
                            "the tensor to host memory first.")
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A NumPy ufunc's result on tensors (``np.exp(t)``, ``t * ndarray``, which NumPy computes)
        comes back as a tensor sharing its memory, as PyTorch's does, bool results as uint8;
        a dtype gradc has no tensors of stays an ndarray."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        try:
            dt = dtypes.from_numpy(array.dtype)
        except (TypeError, KeyError, ValueError):
            return array
        return Tensor(array) if dt.np == array.dtype else array

    def _host(self) -> np.ndarray:
        """The values as a NumPy array (a host copy for a CUDA tensor)."""
        return self._data.get() if isinstance(self._data, DeviceArray) else self._data

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._host().reshape(()).item()

    def tolist(self):
        return self._host().tolist()

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._host().reshape(()))

    def __float__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        # (PyTorch warns for float() only: not int(), item() or bool())
        if self._requires_grad and grad_mode.is_grad_enabled() and first_time("float"):
            warn_at_user_code(SCALAR_OF_GRAD_WARNING)
        return float(self.item())

    def __int__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self._dtype.is_floating_point or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    def __repr__(self, *, tensor_contents=None):
        suffix = None
        try:
            node = self.grad_fn      # (a view written through since: its regenerated history)
        except RuntimeError:         # a view PyTorch refuses to regenerate (view_write_error)
            suffix = "grad_fn=<Invalid>"
            node = None
        if node is not None:
            suffix = f"grad_fn=<{type(node).__name__}>"
        elif suffix is None and self._requires_grad:
            suffix = "requires_grad=True"
        return _printing.tensor_repr(self._host(), self._dtype.name, device=str(self._device), grad_suffix=suffix)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        import copy
        t = _rebuild(self._host().copy(), self._requires_grad, str(self._device), type(self))
        memo[id(self)] = t
        if self._grad is not None:
            t._grad = copy.deepcopy(self._grad, memo)
        t.__dict__.update(copy.deepcopy(self._user_state(), memo))
        return t

    def __copy__(self):
        """``copy.copy``: as PyTorch's, a new leaf on the same memory (a write through one shows in
        the other; one version counter), with ``requires_grad``, the class and the attributes."""
        t = self.detach()
        if type(self) is not Tensor:
            t.__class__ = type(self)
        t.__dict__.update(self._user_state())
        return t.requires_grad_(True) if self.requires_grad else t

    def __reduce__(self):
        """Pickled as PyTorch pickles a tensor: its values (a contiguous copy), ``requires_grad``
        (a non-leaf loads as a leaf that requires grad), the device, and, for a subclass (an
        ``nn.Parameter``) or a tensor given attributes, its class and those attributes."""
        args = (self._host().copy(), self.requires_grad, str(self._device))
        state = self._user_state()
        if type(self) is Tensor and not state:
            return (_rebuild, args)
        return (_rebuild_with_state, (type(self), args, state))

    def _user_state(self) -> dict:
        """The attributes set on this tensor from outside (PyTorch copies and pickles them): the
        public ones and an ``nn.Buffer``'s flag; gradc's own state is in private attributes."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_") or k == "_is_buffer"}


def _rebase_view(view, result):
    """After an in-place op on a view, give the base (and the views between) the history of their
    new value, like PyTorch's CopySlices: each parent's new value is its old value with the
    child's region replaced, built from table ops (index_put for an index view, the inverse
    reshape or permute otherwise); then the views are replayed from the base's new value
    (PyTorch shows such regenerated view nodes as AsStridedBackward0)."""
    chain = []
    t = view
    while t._view_of is not None:
        chain.append(t)
        t = t._view_of[0]
    base = t
    new = result
    for k, v in enumerate(chain):
        parent, op, attrs, extra = v._view_of
        if _layout(parent) != v._parent_layout:
            raise RuntimeError("gradc: an in-place write through a view of a tensor whose shape was changed in place "
                               "after the view was taken (t_, transpose_, squeeze_, unsqueeze_) is not supported "
                               "while gradients are recorded; take the view again after the change")
        name = "CopySlices" if k == len(chain) - 1 else None
        if op.name == "index":
            new = Tensor._apply(op_get("index_put"), [parent, new, *extra], {"key": attrs["key"]},
                                name or "IndexPutBackward0")
        elif op.name == "reshape" or op.name == "expand":     # (a writable expand repeats nothing: a reshape)
            new = Tensor._apply(op_get("reshape"), [new], {"shape": list(parent.shape)}, name or "ViewBackward0")
        elif op.name == "permute":
            dims = list(attrs["dims"])
            new = Tensor._apply(op_get("permute"), [new], {"dims": [dims.index(i) for i in range(len(dims))]},
                                name or "PermuteBackward0")
        else:  # expand views are read-only: the write above has already failed
            raise RuntimeError(f"gradc cannot write through a view made by gradc.{op.name}")
    if new._grad_fn is not None:
        base._grad_fn, base._output_nr, base._requires_grad = new._grad_fn, 0, True
    cur = new
    for v in reversed(chain):
        parent, op, attrs, extra = v._view_of
        cur = Tensor._apply(op, [cur, *extra], attrs, "AsStridedBackward0")
        if cur._grad_fn is not None:
            _take_history(v, cur)
        v._history_version = v._version_counter.value


def _take_history(view, replay):
    """Give ``view`` the node of its replayed value; a retained gradient moves to that node."""
    view._grad_fn, view._output_nr, view._requires_grad = replay._grad_fn, 0, True
    if view._retains_grad:
        import weakref
        view._grad_fn._hook_dict("_retains_grad")[0] = weakref.ref(view)


def _refresh_view_history(view):
    """A view whose base was written in place since its grad_fn was made gets the history of its
    new value: replayed from the base's current history through the chain of view ops, shown as
    AsStridedBackward0 (PyTorch regenerates a view's grad_fn the same way when it sees the
    version changed).  Only while gradients are recorded, and only if the base requires grad."""
    counter = view._version_counter.value
    chain, t = [], view
    while t._view_of is not None:
        chain.append(t)
        t = t._view_of[0]
    if view._creation_meta is not None and (view._grad_fn is not None or t._requires_grad):
        raise view_write_error(view, indirect=True)      # (in any grad mode, as PyTorch's)
    if not grad_mode.is_grad_enabled():
        return
    if not t._requires_grad or any(_layout(v._view_of[0]) != v._parent_layout for v in chain):
        view._history_version = counter
        return
    cur = t
    for v in reversed(chain):
        parent, op, attrs, extra = v._view_of
        cur = Tensor._apply(op, [cur, *extra], attrs, "AsStridedBackward0")
        if cur._grad_fn is not None and v._history_version != counter:
            _take_history(v, cur)
        v._history_version = counter


def op_get(name):
    return registry.get(name)


def _save_original_self(node, t):
    """An in-place op is computed out of place and copied into ``t``; if its node saved ``t`` as
    an input, that must be the value before the copy (PyTorch saves ``original_self = self.clone()``).
    The copy keeps ``t``'s current place in the graph, so double backward still reaches it. Only
    ``self`` (the first input that is ``t``) is copied: ``b.mul_(b)`` also saved ``b`` as ``other``,
    which the write modifies, so its backward raises the version error, as PyTorch's does."""
    from .autograd.node import SavedTensor
    saved = getattr(node, "_saved", None)
    if not saved:
        return
    keys = sorted(key for key, s in saved.items() if key[0] == "in" and s.holds(t))
    if keys:
        snap = Tensor(t._data.copy()) if not isinstance(t._data, DeviceArray) else t.detach().clone()
        snap._device = t._device
        snap._grad_fn, snap._output_nr, snap._requires_grad = t._grad_fn, t._output_nr, t._requires_grad
        saved[keys[0]] = SavedTensor(snap)


def _rebuild(data, requires_grad, device="cpu", cls=None):
    """A tensor of ``data`` (made a ``cls``: a Tensor subclass such as nn.Parameter)."""
    t = Tensor(data)
    if device != "cpu":
        t = t._to_device(device)
    if cls is not None and cls is not Tensor:
        t.__class__ = cls
    return t.requires_grad_(True) if requires_grad else t


def _rebuild_with_state(cls, args, state):
    """An unpickled tensor of a subclass, or one with attributes set on it."""
    t = _rebuild(*args, cls=cls)
    t.__dict__.update(state)
    return t


class ToCopyBackward0(Node):
    """grad_fn of a copy between devices: the gradient goes back to the source device."""
    __module__ = "builtins"

    def __init__(self, source):
        super().__init__()
        self._source = source
        self._output_types = (None,)

    def apply(self, grads, retain_graph=True):
        g = grads[0]
        return [None if g is None else g._to_device(self._source)]

    def release(self):
        pass


def _run_on_device(op, inputs, attrs, types, out_types):
    """Outputs (device arrays) of ``op`` on CUDA tensors: a compiled single-op kernel, or the
    NumPy reference on host copies where the output types depend on the data (mask indexing)."""
    from .codegen import backend_cuda
    drv = inputs[0]._data.driver
    if op.name == "index" and len(inputs) == 1:
        view = _contiguous_device_view(inputs[0]._data, attrs["key"])
        if view is not None:
            return (view,)
    if out_types is None:
        res = op.forward(*[x._host() for x in inputs], **attrs)
        res = res if isinstance(res, tuple) else (res,)
        return tuple(drv.to_device(np.asarray(r)) for r in res)
    return backend_cuda.run_op(drv, op, [x._data for x in inputs], attrs, types)


class _CudaCopyView(Tensor):
    """A non-contiguous view of a CUDA tensor (permute, expand, strided or advanced indexing),
    which gradc keeps as a copy: it has no strided device arrays. It shares its base's version
    counter, as a PyTorch view does, so a backward that saved it notices an in-place change of
    the base, and reading it after such a change recomputes the copy: it shows the base's
    current values. Writing to it raises (``_assign_inplace``): the write could not reach the base."""
    _device_copy_view = True

    @property
    def _data(self):
        d = self.__dict__
        base, op, attrs, extra, seen = d["_copy_of"]
        if self._version_counter.value != seen:          # the base changed in place since
            with grad_mode.no_grad():
                d["_copy"] = Tensor._apply(op, [base, *extra], attrs)._data
            d["_copy_of"] = (base, op, attrs, extra, self._version_counter.value)
        return d["_copy"]

    @_data.setter
    def _data(self, value):
        self.__dict__["_copy"] = value


def _contiguous_device_view(d: DeviceArray, key):
    """``d[key]`` for a key of ints, slices, None and Ellipsis that selects one contiguous block
    (``x[i]``, ``x[2:5]``, ``x[1, :, None]``): the same device buffer at an offset, so writes to
    the view reach ``d`` as in PyTorch. None for any other key (the caller copies)."""
    from .ops.index import split_index
    basic, advanced = split_index(d.ndim, key, [])
    if advanced is not None:
        return None
    # NumPy works out the view's offset and strides on a stand-in with d's layout whose memory
    # is never read (as_strided over one element)
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, d.dtype), d.shape, d.strides)
    try:
        v = probe[basic]
    except IndexError:
        return None                      # the NumPy reference raises the proper error
    if v.size and not v.flags.c_contiguous:
        return None
    offset = v.__array_interface__["data"][0] - probe.__array_interface__["data"][0] if v.size else 0
    return DeviceArray(d.driver, d.buffer, v.shape, d.dtype, d.offset + offset)


# PyTorch's float16 mul and div take a scalar operand (a Python float, a 0-d float tensor) at float32;
# its other ops (add, sub, pow, fmod, atan2, ...) round it to float16 first (measured, torch 2.13 CPU)
_WIDE_SCALAR_OPS = frozenset({"mul", "div"})
# ops that compute float16 operands as float16 themselves: nextafter (its result is not the float32
# one rounded), pow (its reference tells float16 apart: no rsqrt for an exponent -0.5, as PyTorch's)
_FLOAT16_OPS = frozenset({"nextafter", "pow"})


def _record(info, op, inputs, attrs, node_name, outs, types, out_types) -> None:
    """Give the outputs of an op whose inputs include one that requires grad a backward node (when
    one of its differentiable inputs does), with an edge per input and PyTorch's name."""
    n = len(inputs)
    positions = info.positions.get(n) or info.positions_for(op, n)
    needs = tuple([i in positions and bool(x._requires_grad) for i, x in enumerate(inputs)])
    if True not in needs:
        return
    next_functions = tuple([x._grad_edge() if w else (None, 0) for x, w in zip(inputs, needs)])
    edges = getattr(node_name, "edges", None)
    node = (info.node_class if node_name is None and info.node_class is not None
            else node_class(node_name or op.grad_fn_name(attrs)))(
        op, attrs, inputs, outs, types, next_functions, needs, out_types,
        edges if edges is not None else positions)
    for k in op.differentiable_outputs:
        t = outs[k]
        if t._dtype.is_floating_point:
            t._grad_fn = node
            t._output_nr = k
            t._requires_grad = True


def _wrap_host_results(result, out_types) -> list:
    """Tensors owning the array(s) an op's NumPy reference returned, each cast to its output type
    (``out_types``; None for a boolean-mask index, whose arrays are kept as they are)."""
    if type(result) is not tuple:        # (one ndarray of the output's dtype: the common case)
        if out_types is not None and type(result) is np.ndarray and result.dtype is out_types[0].dtype.np:
            t = _new_object(Tensor)      # Tensor._wrap with the dtype known
            t._data = result
            t._dtype = out_types[0].dtype
            t._version_counter = (_counters.stack[-1] if _pushed[0] else _VersionCounter)()
            return [t]
        result = (result,)
    outs = []
    for k, a in enumerate(result):
        if type(a) is not np.ndarray:
            a = np.asarray(a)
        if out_types is not None:
            want = out_types[k].dtype.np
            if a.dtype is not want and a.dtype != want:
                a = _cast_quietly(a, want)
        outs.append(Tensor._wrap(a))
    return outs


def _cast_quietly(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` cast to ``dtype``; rounding to float16 overflows to inf silently, as PyTorch's."""
    if dtype != np.float16:
        return a.astype(dtype)
    with np.errstate(over="ignore"):
        return a.astype(dtype)


_HALF = -1      # the ``route`` of a call with a float16 operand (``_EagerOpInfo.types``)


def _run_on_host(info, op, inputs, attrs, types, route):
    """The result(s) of ``op`` on CPU tensors: a compiled kernel when an operand is large
    (``codegen/eager_cpu.py``), otherwise the op's NumPy reference. ``route``: ``_HALF`` when
    an operand is float16 (and the op is no view), else the largest operand's element count."""
    n = len(inputs)
    if route == _HALF and op.name not in _FLOAT16_OPS:
        # float16 computes in float32 and rounds once, as PyTorch's CPU kernels do (the caller
        # casts the result to the op's float16 output type)
        wide = op.name in _WIDE_SCALAR_OPS
        return op.forward(*[(x._wide_scalar if wide and x._wide_scalar is not None else x._data.astype(np.float32))
                            if x._dtype is dtypes.float16 else x._data for x in inputs], **attrs)
    if info.native and route >= eager_cpu.MIN_ELEMENTS:
        result = eager_cpu.run(op, [x._data for x in inputs], attrs, types)
        if result is not None:
            return result
    if n == 2:            # (the common arities without a list comprehension: eager ops are small)
        return op.forward(inputs[0]._data, inputs[1]._data, **attrs)
    if n == 1:
        return op.forward(inputs[0]._data, **attrs)
    return op.forward(*[x._data for x in inputs], **attrs)


def _layout(t):
    """A tensor's shape and strides: a view checks that its parent still has the layout it was taken
    from (an in-place ``t_`` changes it)."""
    return t._data.shape, getattr(t._data, "strides", None)


def _host_view(op, inputs, attrs, out_types, node_name):
    """The result of a view op (or an index) of CPU tensors: a tensor of the array its NumPy
    reference returns, linked as a view (``_mark_view``) when that array is in the input's memory
    (made here with the input's version counter rather than a new one), else a new tensor. An
    empty array holds no memory to compare: it is a view when NumPy made it one of the same
    array (``x[5:9]`` of 3 rows is a view in PyTorch, with its storage offset)."""
    parent = inputs[0]
    src = parent._data
    a = op.forward(*[x._data for x in inputs], **attrs)
    if (out_types is None or type(a) is not np.ndarray or a.dtype is not out_types[0].dtype.np
            or not (np.may_share_memory(a, src) if a.size else a.base is (src if src.base is None else src.base))):
        return _wrap_host_results(a, out_types)[0]      # a copy (an advanced index, a reshape that copies)
    t = _new_object(Tensor)
    t._data = a
    t._dtype = out_types[0].dtype
    _mark_view(t, parent, op, attrs, inputs, node_name)
    return t


def _mark_view(t, parent, op, attrs, inputs, node_name):
    """Make ``t``, a view of ``parent``'s memory made by ``op`` of ``inputs`` (``parent`` first),
    share its version counter and base, as PyTorch's views do, and remember how it was made (for
    in-place rebase)."""
    counter = t._version_counter = parent._version_counter
    base = parent._base
    t._base = parent if base is None else base
    t._view_of = (parent, op, attrs, tuple(inputs[1:]))
    t._parent_layout = _layout(parent)
    t._history_version = counter.value
    if not grad_mode._state.enabled or parent._creation_meta is not None:    # (the common case: nothing to mark)
        _inherit_creation_meta(t, parent, node_name if isinstance(node_name, str) else op.grad_fn_name(attrs))


def _link_device_view(op, inputs, attrs, t, node_name=None):
    """Make the result ``t`` of a view op (or an index) of CUDA tensors a view (``_mark_view``) when
    it is in the same device buffer as its input, else a copy that follows its base."""
    if t._data.buffer is inputs[0]._data.buffer:
        _mark_view(t, inputs[0], op, attrs, inputs, node_name)
    else:                               # a non-contiguous CUDA view: a copy that follows its base
        t.__class__ = _CudaCopyView
        t._version_counter = inputs[0]._version_counter
        d = t.__dict__
        d["_copy"] = d.pop("_data")
        d["_copy_of"] = (inputs[0], op, attrs, tuple(inputs[1:]), t._version_counter.value)


def view_as_index_of(t, parent, array, key, tensors):
    """Make ``t``, the result of ``parent``'s index by ``key``, a view: its values become ``array``
    (the same values, in ``parent``'s memory) and it is linked as ``_mark_view`` links views, so
    an in-place write through it reaches ``parent`` with index_put history (``diagonal``)."""
    t._data = array
    _mark_view(t, parent, registry.get("index"), {"key": key}, [parent, *tensors], "AsStridedBackward0")


def _inherit_creation_meta(view, parent, node_name):
    """A view made in no_grad (or inference) mode is marked so (PyTorch's CreationMeta::NO_GRAD_MODE,
    INFERENCE_MODE); one made while recording inherits its parent's mark, and an inference mark
    stays."""
    if parent._creation_meta == "inference":          # (kept through any later view, as PyTorch's)
        view._creation_meta = "inference"
        view._view_node_name = node_name if grad_mode._state.enabled else None
    elif not grad_mode._state.enabled:
        view._creation_meta = "inference" if grad_mode.is_inference_mode_enabled() else "no_grad"
    elif parent._creation_meta is not None:
        view._creation_meta = parent._creation_meta
        view._view_node_name = node_name
    if not grad_mode._state.enabled and parent._requires_grad:
        view._requires_grad, view._leaf_edge = True, NO_EDGE     # (see NO_EDGE)


def mark_multi_output_views(x, outs):
    """Mark the views ``outs`` of ``x`` that unbind/split/chunk return (PyTorch's
    CreationMeta::MULTI_OUTPUT_NODE): writing to one in place (or to a view of one) while
    gradients are recorded raises ``view_write_error``. Made in no_grad mode they keep that mark."""
    if grad_mode.is_grad_enabled():
        for k, t in enumerate(outs):
            if isinstance(t, Tensor) and t is not x and t._base is not None and t._creation_meta != "inference":
                t._creation_meta, t._view_output_nr = "multi_output", k
    return outs


_VIEW_WRITE_ADVICE = {
    "multi_output": " This view is the output of a function that returns multiple views. Such functions do not "
                    "allow the output views to be modified inplace. You should replace the inplace operation by an "
                    "out-of-place one.",
    "no_grad": " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code "
               "by moving both the view and the inplace either both inside the no_grad block (if you don't want "
               "the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
    "inference": " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
                 "code by moving both the view and the inplace either both inside the inference_mode block (if you "
                 "don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
    "custom_function": " This view was created inside a custom Function (or because an input was returned as-is) "
                       "and the autograd logic to handle view+inplace would override the custom backward associated "
                       "with the custom Function, leading to incorrect gradients. This behavior is forbidden. You "
                       "can fix this by cloning the output of the custom Function.",
}


def view_write_error(view, indirect, via=None):
    """PyTorch's error (handle_view_on_rebase) for an in-place write to a marked view: ``indirect``
    when its base or another view was written and the view is used afterwards."""
    meta = view._creation_meta
    tracked = view._grad_fn is not None or view._base._requires_grad      # PyTorch's view has a grad_fn
    if via is not None:
        name, nr = (via if tracked else None), 0
    elif view._grad_fn is not None:
        name, nr = view._grad_fn, view._view_output_nr
    else:
        name, nr = (view._view_node_name if tracked else None), view._view_output_nr
    modified = "its base or another view of its base has been" if indirect else "is being"
    # PyTorch's label: SelectBackward0 -> Select, SqueezeBackward1 -> Squeeze1
    short = version_error_label(name) if name else None
    if meta in ("no_grad", "inference") or short is None:
        prefix = (f"Output {nr} of {short} is a view of a view which was created in" if short
                  else "A view was created in")
        message = (f"{prefix} inference mode and {modified} modified inplace in normal mode." if meta == "inference"
                   else f"{prefix} no_grad mode and {modified} modified inplace with grad mode enabled.")
    else:
        message = f"Output {nr} of {short} is a view and {modified} modified inplace."
    return RuntimeError(message + _VIEW_WRITE_ADVICE[meta])


class _EagerOpInfo:
    """What ``Tensor._apply`` needs to know about one table op, worked out on its first eager use
    and kept on the op: its traits as flags, its node class, and a memo of its shape rule's
    answers (a rule is a pure function of the operand types and attrs; the memo saves making
    TypeInfos and running the rule on every op, about a fifth of a small op's time)."""
    __slots__ = ("is_view", "records", "bool_index", "native", "node_class", "positions", "memo")
    MEMO_LIMIT = 256

    @classmethod
    def of(cls, op) -> "_EagerOpInfo":
        info = cls()
        info.is_view = op.has(VIEW) or op.name == "index"
        info.records = not op.has(NONDIFF)
        info.bool_index = op.name in _BOOL_INDEX_OPS
        # large operands may run as a compiled kernel (codegen/eager_cpu.py)
        info.native = ((op.has(ELEMENTWISE) or op.has(REDUCTION)) and not info.is_view
                       and not info.bool_index)
        name = op.node_name
        info.node_class = None if callable(name) else node_class(op.grad_fn_name({}))
        info.positions = {}
        info.memo = {}
        op.__dict__["_eager_info"] = info        # (OpDef is a frozen dataclass)
        return info

    def positions_for(self, op, n_inputs: int) -> tuple:
        p = self.positions[n_inputs] = op.differentiable_positions(n_inputs)
        return p

    def types(self, op, inputs, attrs):
        """(input TypeInfos, output TypeInfos or None for a boolean-mask index, route) of a call;
        the route tells ``_run_on_host`` how to run it (``_route``)."""
        if self.bool_index and _has_bool_index(op, inputs):     # the result's shape depends on the mask
            types = tuple([TypeInfo(x._data.shape, x._dtype) for x in inputs])
            return types, None, self.route(types)
        if len(inputs) == 1:        # (a view or a unary op: no comprehension)
            x = inputs[0]
            key = [(x._data.shape, x._dtype)]
        else:
            key = [(x._data.shape, x._dtype) for x in inputs]
        if attrs:
            for name, v in attrs.items():
                t = type(v)
                if t in _PLAIN_ATTR:
                    key.append((name, t, v))
                elif (t is list or t is tuple) and _PLAIN_ATTR.issuperset(map(type, v)):
                    key.append((name, t, tuple(v)))       # dims, shapes
                else:                                     # an index key (encode_index) is a list of lists
                    entries = t is list and tuple([tuple(e) for e in v if type(e) is list
                                                   and _PLAIN_ATTR.issuperset(map(type, e))])
                    if not entries or len(entries) != len(v):  # tensors, slices, deeper lists: no memo
                        types = tuple([TypeInfo(x._data.shape, x._dtype) for x in inputs])
                        return types, op.infer(types, attrs), self.route(types)
                    key.append((name, t, entries))
        key = tuple(key)
        hit = self.memo.get(key)
        if hit is None:
            types = tuple([TypeInfo(s, d) for s, d in key[:len(inputs)]])
            hit = (types, tuple(op.infer(types, attrs)), self.route(types))   # infer raises (not memoized) on bad operands
            if len(self.memo) >= self.MEMO_LIMIT:
                self.memo.clear()
            self.memo[key] = hit
        return hit


    def route(self, types) -> int:
        """``_HALF`` when a call with operands ``types`` computes in float32 for float16 operands
        (not for a view), otherwise its largest operand's element count (a large one may run as a
        compiled kernel): a function of the types, so memoized with them."""
        if not self.is_view and any([t.dtype is dtypes.float16 for t in types]):
            return _HALF
        return max([math.prod(t.shape) for t in types], default=0)


_BOOL_INDEX_OPS = {"index": 1, "index_put": 2, "index_backward": 1}     # op -> position of its first index
_PLAIN_ATTR = frozenset({int, float, bool, str, type(None)})    # attr values a memo key may hold


def _has_bool_index(op, inputs):
    first = _BOOL_INDEX_OPS.get(op.name)     # (index_put's value, a bool tensor, is no index)
    return first is not None and len(inputs) > first and any(x._dtype is dtypes.bool_ for x in inputs[first:])


def zeros_for(t: TypeInfo):
    return Tensor(np.zeros(t.shape, dtype=t.dtype.np))

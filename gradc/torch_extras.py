"""More of PyTorch's ``torch.*`` surface, each a thin spelling of what gradc already has:

* top-level forms of ``nn.functional`` functions with ATen's signatures (losses with an integer
  ``reduction``, ``instance_norm``, ``constant_pad_nd``, the ``(input, p, train)`` dropouts,
  ``rrelu``, ``bilinear``, ``channel_shuffle``) and ``native_layer_norm`` / ``native_batch_norm`` /
  ``embedding_bag``, which return the saved statistics and bag bookkeeping as PyTorch's do;
* the ``*_copy`` forms of the view functions (``view_copy``, ``permute_copy``, ...): the view's
  values in a new tensor, shown as PyTorch's ``{View}Backward0_copy`` node;
* ``vmap`` (``gradc.func.vmap``);
* the Tensor flags libraries check (``is_sparse``, ``is_meta``, ... all False; ``is_pinned()``,
  ``is_shared()`` / ``share_memory_()``, ``pin_memory()``, which needs an accelerator), and
  ``new_empty_strided`` and the deprecated ``resize`` / ``resize_as``.
"""
from __future__ import annotations

from ._warnings import warn_at_user_code
from . import dtypes
from .autograd.node import grad_fn_named
from .compositions import bind_methods
from .torch_functions import _F, _reduction, check_dropout_p


# ---- nn.functional spellings with ATen's signatures ---------------------------------------------
# (as for torch_functions' losses: torch.* called without a reduction reduces nothing)
def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return _F().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def pdist(input, p=2):
    return _F().pdist(input, p)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def constant_pad_nd(input, pad, value=0):
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    return _F().pad(input, list(pad), "constant", value)


def bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


def channel_shuffle(input, groups):
    return _F().channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """channel_shuffle without a derivative, as PyTorch's (a backward through it raises)."""
    return without_derivative("native_channel_shuffle", _F().channel_shuffle(input, groups), input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _F().rrelu_(input, lower, upper, training)


def alpha_dropout(input, p, train):
    check_dropout_p(p)
    return _F().alpha_dropout(input, p, train)


def _check_features(input, p, train):
    check_dropout_p(p)
    if train and p != 0 and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")


def feature_alpha_dropout(input, p, train):
    _check_features(input, p, train)
    return _F().feature_alpha_dropout(input, p, train)


def feature_dropout(input, p, train):
    """Zero whole channels (dim 1, any number of trailing dims) with probability ``p``."""
    _check_features(input, p, train)
    return _F()._feature_dropout(input, p, train)


def _in_place(fn):
    """The ``torch.X_(input, p, train)`` form of the dropout ``fn``: its result written into input."""
    def inplace(input, p, train):
        check_dropout_p(p)
        if not train or p == 0:
            return input
        return input._inplace(fn(input, p, train))
    inplace.__name__ = fn.__name__ + "_"
    inplace.__doc__ = f"``{fn.__name__}`` written into ``input``."
    return inplace


alpha_dropout_ = _in_place(alpha_dropout)
feature_alpha_dropout_ = _in_place(feature_alpha_dropout)
feature_dropout_ = _in_place(feature_dropout)


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """ATen's embedding_bag of 1-D ``indices`` cut at ``offsets``: (output, offset2bag, bag_size,
    max_indices), the last three as PyTorch's CPU kernels fill them (offset2bag is empty on the
    float32 sum path; bag_size counts the non-padding indices of each bag for mean and max;
    max_indices is bag_size for mean, each feature's row for max, zeros for sum)."""
    import numpy as np

    from . import factories
    out = _F().embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq, mode=_BAG_MODES[mode],
                             sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding_idx)
    idx, starts = indices.numpy().reshape(-1), offsets.numpy()
    starts = starts[:-1] if include_last_offset else starts
    bags = len(starts)
    bag_of = np.searchsorted(starts, np.arange(idx.size), "right") - 1
    kept = idx != padding_idx if padding_idx is not None else np.ones(idx.size, bool)
    bag_size = np.bincount(bag_of[kept], minlength=bags) if mode else np.zeros(bags, np.int64)
    if mode == 0 and weight.dtype is dtypes.float32 and padding_idx is None:
        bag_of = np.zeros(0, np.int64)
    if mode == 2:
        table = weight.detach().numpy()
        max_indices = np.zeros((bags, table.shape[1]), np.int64)
        for b in range(bags):
            rows = idx[(bag_of == b) & kept]
            if rows.size:
                max_indices[b] = rows[table[rows].argmax(0)]
    else:
        max_indices = bag_size.copy()
    return (out,) + tuple(factories.tensor(a.astype(np.int64), device=weight.device)
                          for a in (bag_of, bag_size, max_indices))


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(layer_norm's output, the mean, 1 / sqrt(biased var + eps)), the statistics of shape
    input.shape[:axis] + (1,) * len(normalized_shape) and without history, as PyTorch's."""
    shape = [int(n) for n in normalized_shape] if isinstance(normalized_shape, (list, tuple)) else [
        int(normalized_shape)]
    out = _F().layer_norm(input, shape, weight, bias, eps)
    mean, rstd = _statistics(input.detach(), tuple(range(input.ndim - len(shape), input.ndim)), eps, True)
    return out, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(batch_norm's output, save_mean, save_invstd): the batch's mean and 1 / sqrt(biased var +
    eps) per channel when ``training``, empty tensors when not, as PyTorch's."""
    out = _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = input.new_empty(0).detach()
        return out, empty, empty.clone()
    dims = tuple(d for d in range(input.ndim) if d != 1)
    mean, invstd = _statistics(input.detach(), dims, eps, False)
    return out, mean, invstd


def _statistics(x, dims, eps, keepdim):
    mean = x.mean(dims, keepdim=keepdim)
    var = x.var(dims, unbiased=False, keepdim=keepdim)
    return mean, (var + eps).rsqrt()


# ---- vmap ------------------------------------------------------------------------------------------
def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    from .func import vmap as _vmap
    return _vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


# ---- the *_copy forms of the views ------------------------------------------------------------------
def _copy_of(node, view):
    """``view(input, ...)``'s values in a new tensor, shown as PyTorch's ``{node}_copy`` node (a
    function of the arguments giving ``node`` where it depends on them)."""
    def name(input, *args, **kwargs):
        base = node(input, *args, **kwargs) if callable(node) else node
        return base and base + "_copy"

    @grad_fn_named(name, edges=lambda input, *args, **kwargs: (input,))
    def copy(input, *args, **kwargs):
        result = view(input, *args, **kwargs)
        return result.clone().contiguous()
    copy.__doc__ = f"The values of the view ``{view.__name__}`` in a new tensor."
    return copy


def _pieces_copy(node, split):
    """``split(input, ...)``'s pieces, each in a new tensor shown as PyTorch's ``{node}_copy``."""
    @grad_fn_named(node + "_copy")
    def copy(input, *args, **kwargs):
        return tuple(piece.clone() for piece in split(input, *args, **kwargs))
    copy.__doc__ = f"The pieces of ``{split.__name__}``, each in a new tensor."
    return copy


def _view(input, *shape):
    if len(shape) == 1 and isinstance(shape[0], dtypes.dtype):
        return input.view(shape[0])
    return input.view(*shape)


def _slice(input, dim=0, start=None, end=None, step=1):
    key = [slice(None)] * (dim % max(input.ndim, 1)) + [slice(start, end, step)]
    return input[tuple(key)]


def _squeeze(input, *dim):
    return input.squeeze(*dim)


def _alias(input):
    return input.view(input.shape)


view_copy = _copy_of(lambda input, *s: None if isinstance(s[0], dtypes.dtype) else "ViewBackward0", _view)
permute_copy = _copy_of("PermuteBackward0", lambda input, dims: input.permute(*dims))
expand_copy = _copy_of("ExpandBackward0", lambda input, size, *, implicit=False: input.expand(*size))
t_copy = _copy_of("TBackward0", lambda input: input.t())
transpose_copy = _copy_of("TransposeBackward0", lambda input, dim0, dim1: input.transpose(dim0, dim1))
squeeze_copy = _copy_of(lambda input, *dim: "SqueezeBackward1" if dim and isinstance(dim[0], int)
                        else "SqueezeBackward2" if dim else "SqueezeBackward0", _squeeze)
unsqueeze_copy = _copy_of("UnsqueezeBackward0", lambda input, dim: input.unsqueeze(dim))
select_copy = _copy_of("SelectBackward0", lambda input, dim, index: input.select(dim, index))
slice_copy = _copy_of("SliceBackward0", _slice)
diagonal_copy = _copy_of("DiagonalBackward0",
                         lambda input, offset=0, dim1=0, dim2=1: input.diagonal(offset, dim1, dim2))
alias_copy = _copy_of("AliasBackward0", _alias)
unfold_copy = _copy_of("UnfoldBackward0", lambda input, dimension, size, step: input.unfold(dimension, size, step))
as_strided_copy = _copy_of("AsStridedBackward0", lambda input, size, stride, storage_offset=None:
                           input.as_strided(size, stride, storage_offset))
unbind_copy = _pieces_copy("UnbindBackward0", lambda input, dim=0: input.unbind(dim))
split_copy = _pieces_copy("SplitBackward0", lambda input, split_size, dim=0: input.split(split_size, dim))
split_with_sizes_copy = _pieces_copy("SplitWithSizesBackward0",
                                     lambda input, split_sizes, dim=0: input.split(list(split_sizes), dim))


def detach_copy(input):
    """A copy of ``input``'s values; where input requires grad, it does too, through PyTorch's
    NotImplemented node (a backward through it raises)."""
    return without_derivative("detach_copy", input.detach().clone(), input)


def _not_implemented_class():
    from .autograd.node import _CompositeNode

    def apply(self, grads, retain_graph=True):
        raise RuntimeError(f"derivative for aten::{self._op} is not implemented")
    return type("NotImplemented", (_CompositeNode,), {
        "__module__": "builtins", "apply": apply, "name": lambda self: "torch::autograd::NotImplemented"})


_NotImplemented = _not_implemented_class()


def without_derivative(op, result, input):
    """``result`` (computed from ``input``) with PyTorch's NotImplemented node for ``op`` where
    input requires grad: a backward through it raises PyTorch's error."""
    from .autograd import grad_mode
    from .autograd.node import _one_node
    from .ops.dispatch import capturing
    from .ops.registry import TypeInfo
    from .tensor import Tensor
    if capturing or not isinstance(input, Tensor) or not (input.requires_grad and grad_mode.is_grad_enabled()):
        return result
    node = _NotImplemented()
    node._op, node._arguments = op, (input,)
    node._edges = (input._grad_edge(),)
    node._output_types = (TypeInfo(tuple(result.shape), result.dtype),)
    return _one_node(node, result.detach(), (input,))


# ---- Tensor flags and legacy methods -------------------------------------------------------------
FALSE_FLAGS = ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "is_xpu", "is_mps",
               "is_xla", "is_ipu", "is_mtia", "is_maia", "is_vulkan")


def _is_pinned(self, device=None) -> bool:
    return False


def _is_shared(self) -> bool:
    return bool(getattr(self, "_shared_memory", False))


def _share_memory_(self):
    """Marks the tensor shared (gradc's tensors live in this process; nothing moves)."""
    self._shared_memory = True
    return self


def _pin_memory(self, device=None):
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                       requires_grad=False):
    from .torch_factories import empty_strided
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def _resize_error(sizes, numel, have):
    return RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({numel} elements in total), but the given "
                        f"tensor has a size of {'x'.join(map(str, have))} ({have.numel()} elements). autograd's resize "
                        "can only change the shape of a given tensor, while preserving the number of elements. ")


@grad_fn_named("ResizeBackward", edges=lambda self, sizes: (self,))
def _reshaped(self, sizes):
    import functools
    import operator
    numel = functools.reduce(operator.mul, sizes, 1)       # (PyTorch's count: a tuple argument is no number)
    if numel != self.numel():
        raise _resize_error(sizes, numel, self.shape)
    return (self if self.is_contiguous() else self.contiguous()).view(*sizes)


def _resize(self, *sizes):
    """The deprecated out-of-place resize: a reshape that keeps the number of elements."""
    warn_at_user_code("non-inplace resize is deprecated", UserWarning)
    return _reshaped(self, sizes)


def _resize_as(self, tensor):
    warn_at_user_code("non-inplace resize_as is deprecated", UserWarning)
    return _reshaped(self, tuple(tensor.shape))


_SPECIAL_METHODS = {"is_pinned": _is_pinned, "is_shared": _is_shared, "share_memory_": _share_memory_,
                    "pin_memory": _pin_memory, "new_empty_strided": _new_empty_strided, "resize": _resize,
                    "resize_as": _resize_as}


def _bind():
    from .tensor_api import TensorAPI
    for name in FALSE_FLAGS:
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, property(lambda self: False))
    for name, fn in _SPECIAL_METHODS.items():
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, fn)


METHODS = ()

FUNCTIONS = (
    "cosine_embedding_loss", "hinge_embedding_loss", "triplet_margin_loss", "poisson_nll_loss", "pdist",
    "instance_norm", "embedding_bag", "constant_pad_nd", "bilinear", "channel_shuffle", "native_channel_shuffle", "rrelu", "rrelu_",
    "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout",
    "feature_dropout_", "native_layer_norm", "native_batch_norm", "vmap",
    "view_copy", "permute_copy", "expand_copy", "t_copy", "transpose_copy", "squeeze_copy", "unsqueeze_copy",
    "select_copy", "slice_copy", "diagonal_copy", "alias_copy", "unfold_copy", "as_strided_copy", "unbind_copy",
    "split_copy", "split_with_sizes_copy", "detach_copy",
)

bind_methods(globals(), METHODS)
_bind()

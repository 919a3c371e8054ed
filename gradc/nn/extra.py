"""More of PyTorch's layers: instance norm, bilinear, local response norm, LP pooling, channel
dropout and alpha dropout, channel shuffle, Softmax2d, Unflatten, the padding modules, RReLU,
max unpooling and the loss modules beyond those in ``modules.py``; each calls its
``nn.functional`` form, with PyTorch's constructor arguments, parameters and repr."""
from __future__ import annotations

import math

from .._warnings import warn_at_user_code
from .. import factories
from . import functional as F
from . import init
from .modules import Dropout, Module, PairwiseDistance, _Loss, _NormBase
from .parameter import Parameter


# ---- normalisation --------------------------------------------------------------------------------
class _InstanceNorm(_NormBase):
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

    def forward(self, input):
        want = self._dims
        if input.ndim not in want:
            raise ValueError(f"expected {want[0]}D or {want[1]}D input (got {input.ndim}D input)")
        feature_dim = 0 if input.ndim == want[0] else 1      # the channel dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warn_at_user_code(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                              "warning by not passing in num_features, which is not used because affine=False",
                              UserWarning)
        unbatched = input.ndim == want[0]
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    _dims = (4, 5)


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


# ---- bilinear -------------------------------------------------------------------------------------------
class Bilinear(Module):
    """y = x1^T A x2 + b: weight (out_features, in1_features, in2_features), both weight and bias
    uniform in +-1/sqrt(in1_features), as PyTorch's."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(factories.empty(out_features, in1_features, in2_features, dtype=dtype))
        self.bias = Parameter(factories.empty(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


# ---- pooling and unpooling -------------------------------------------------------------------------------
class _LPPool(Module):
    _fn = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPool):
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    _fn = staticmethod(F.lp_pool3d)


class _FractionalMaxPool(Module):
    """FractionalMaxPool2d/3d: ``F.fractional_max_pool{n}d`` with the module's options (its
    ``_random_samples``, if given, fix the windows)."""
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        from ..compositions import _ntuple
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, self._n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, self._n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"FractionalMaxPool{self._n}d requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = F.fractional_max_pool2d if self._n == 2 else F.fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                  _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPool):
    _n = 2


class FractionalMaxPool3d(_FractionalMaxPool):
    _n = 3


class _MaxUnpool(Module):
    _n = 0
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        from ..compositions import _pair, _single, _triple
        t = {1: _single, 2: _pair, 3: _triple}[self._n]
        self.kernel_size = t(kernel_size)
        self.stride = t(stride if stride is not None else kernel_size)
        self.padding = t(padding)

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    _n = 1
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpool):
    _n = 2
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    _n = 3
    _fn = staticmethod(F.max_unpool3d)


# ---- dropout ----------------------------------------------------------------------------------------------
class Dropout1d(Dropout):
    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    def forward(self, x):
        return F.dropout3d(x, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    def forward(self, x):
        return F.alpha_dropout(x, self.p, self.training)     # (PyTorch's module ignores inplace)


class FeatureAlphaDropout(Dropout):
    def forward(self, x):
        return F.feature_alpha_dropout(x, self.p, self.training)     # (PyTorch's module ignores inplace)


# ---- shape and small modules -----------------------------------------------------------------------------
class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class Softmax2d(Module):
    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return input.softmax(-3)


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            if not isinstance(unflattened_size, (tuple, list)):
                raise TypeError("unflattened_size must be tuple of ints, but found type "
                                f"{type(unflattened_size).__name__}")
        elif isinstance(dim, str):
            raise NotImplementedError("gradc.nn.Unflatten: named dims are not supported")
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


# ---- padding ----------------------------------------------------------------------------------------------
def _padding_tuple(padding, n):
    return tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * (2 * n)


class _PadNd(Module):
    _mode = "constant"
    _n = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding_tuple(padding, self._n)

    def forward(self, input):
        if self._mode == "circular" and input.ndim not in (self._n + 1, self._n + 2):
            raise ValueError(f"expected {self._n + 1}D or {self._n + 2}D input (got {input.ndim}D input)")
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    _n = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    _mode, _n = "reflect", 1


class ReflectionPad2d(_PadNd):
    _mode, _n = "reflect", 2


class ReplicationPad1d(_PadNd):
    _mode, _n = "replicate", 1


class ReplicationPad2d(_PadNd):
    _mode, _n = "replicate", 2


class CircularPad1d(_PadNd):
    _mode, _n = "circular", 1


class CircularPad2d(_PadNd):
    _mode, _n = "circular", 2


class ReflectionPad3d(_PadNd):
    _mode, _n = "reflect", 3


class ReplicationPad3d(_PadNd):
    _mode, _n = "replicate", 3


class CircularPad3d(_PadNd):
    _mode, _n = "circular", 3


# ---- losses -----------------------------------------------------------------------------------------------
class HingeEmbeddingLoss(_Loss):
    _fn = staticmethod(F.hinge_embedding_loss)

    def __init__(self, margin=1.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction, margin=margin)
        self.margin = margin


class SoftMarginLoss(_Loss):
    _fn = staticmethod(F.soft_margin_loss)

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)


class MultiLabelSoftMarginLoss(_Loss):
    _fn = staticmethod(F.multilabel_soft_margin_loss)

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction, weight=weight)


class MultiLabelMarginLoss(_Loss):
    _fn = staticmethod(F.multilabel_margin_loss)

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)


class MultiMarginLoss(_Loss):
    _fn = staticmethod(F.multi_margin_loss)

    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead")
        super().__init__(reduction, weight=weight, p=p, margin=margin)
        self.p, self.margin = p, margin


class CTCLoss(_Loss):
    _fn = staticmethod(F.ctc_loss)

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__(reduction, blank=blank, zero_infinity=zero_infinity)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class PoissonNLLLoss(_Loss):
    _fn = staticmethod(F.poisson_nll_loss)

    def __init__(self, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None, reduction="mean"):
        super().__init__(reduction, log_input=log_input, full=full, eps=eps)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, self.margin, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)

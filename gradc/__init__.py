"""gradc: PyTorch-compatible eager autograd and an autograd graph compiler built on llvmlite.

``import gradc as torch`` gives eager tensors with PyTorch's autograd semantics;
``@gradc.compile`` traces a function to gradc's SSA IR, differentiates it and
compiles forward and backward to native code.
"""
from . import autograd, dtypes, nn, optim  # noqa: F401
from . import cuda  # noqa: F401
from . import func, linalg, profiler, return_types, special, storage  # noqa: F401
from ._printing import set_printoptions
from .autograd import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: F401
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .dtypes import bool_ as bool  # noqa: A001  (torch.bool)
from .dtypes import dtype, finfo, float16, float32, float64, iinfo, int8, int16, int32, int64, uint8
from .factories import (arange, as_tensor, empty, empty_like, from_numpy, full, full_like, linspace,
                        bernoulli, manual_seed, multinomial, normal, ones, ones_like, rand, rand_like, randint, randn,
                        randn_like, randperm,
                        seed, tensor, zeros, zeros_like)
from .functional import *  # noqa: F401,F403
from .functional import _accepts_out, is_tensor
for _name in ("arange", "linspace", "empty", "full", "ones", "zeros", "rand", "randn", "randint", "randperm", "normal",
              "bernoulli", "multinomial"):
    globals()[_name] = _accepts_out(globals()[_name], _name)      # PyTorch's factories take out= too


def _install_factory_options():
    from . import torch_factories
    for name in torch_factories.OPTION_FACTORIES:
        if name in globals():
            globals()[name] = torch_factories.with_factory_options(globals()[name], name)


_install_factory_options()
from .ops.registry import ShapeError
from .tensor import Tensor, device
from .tensor_api import Size
from .serialization import load, save  # noqa: F401
from .random_state import Generator, default_generator, get_rng_state, initial_seed, set_rng_state  # noqa: F401
from .compile import CompiledFunction, compile  # noqa: E402,A004  (after Tensor: compile imports it)
from . import utils  # noqa: E402,F401  (torch.utils.checkpoint)
from . import compiler  # noqa: E402,F401  (torch.compiler)
from . import backends, testing  # noqa: E402,F401  (torch.backends, torch.testing)
from . import amp, cpu  # noqa: E402,F401  (torch.amp, torch.cpu)
from .amp import GradScaler, autocast  # noqa: E402,F401
from .autocast_state import (autocast_decrement_nesting, autocast_increment_nesting,  # noqa: E402,F401
                             clear_autocast_cache, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled,
                             set_autocast_cache_enabled, set_autocast_dtype, set_autocast_enabled)
from .autocast_state import DEPRECATED as _DEPRECATED_AUTOCAST  # noqa: E402
globals().update(_DEPRECATED_AUTOCAST)

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16

__version__ = "0.1.0"


def __getattr__(name):
    """``gradc.bfloat16``: an AttributeError that says why (PyTorch's CPU autocast default)."""
    if name == "bfloat16":
        from .autocast_state import NO_BFLOAT16
        raise AttributeError(f"module 'gradc' has no attribute 'bfloat16': {NO_BFLOAT16}")
    raise AttributeError(f"module 'gradc' has no attribute '{name}'")


def get_default_dtype():
    """The dtype of float tensors made from Python floats and of float factories' results."""
    return dtypes.default_float


def set_default_dtype(d):
    """Make ``d`` (float32 or float64) the default float dtype, as ``torch.set_default_dtype``."""
    if not isinstance(d, dtypes.dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dtypes.default_float = d


def _install_numpy_aliases():
    from . import _numpy_aliases, tensor_api
    from .ir.emitter import IRTensor
    from .ir.tracer import Proxy
    _numpy_aliases.install((tensor_api.TensorAPI, Tensor, IRTensor, Proxy), globals())


_install_numpy_aliases()


def _install_inplace_forms():
    from . import inplace_forms, tensor_api
    inplace_forms.bind((tensor_api.TensorAPI, Tensor))


_install_inplace_forms()


def _install_torch_inplace_functions():
    from . import torch_functions
    globals().update(torch_functions.inplace_functions(Tensor))


_install_torch_inplace_functions()

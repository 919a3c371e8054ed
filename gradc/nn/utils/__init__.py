"""``torch.nn.utils``: gradient clipping (``clip_grad``), flattening parameters to one vector
(``convert_parameters``), ``stateless``, ``rnn``, weight and spectral norms, parametrizations, fusion."""
from __future__ import annotations

from . import clip_grad, convert_parameters, fusion, parametrizations, parametrize, rnn, stateless  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: F401
                     fuse_linear_bn_weights)
from .init import skip_init  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

"""nn.MultiheadAttention: PyTorch's parameters (a packed ``in_proj_weight``, ``out_proj``), masks
and returned weights, computed with table ops (so it compiles like any other module)."""
from __future__ import annotations

import math

from .. import factories
from . import functional as F
from . import init
from .modules import Linear, Module
from .parameter import Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """PyTorch's name for MultiheadAttention's output projection (it prints under this name)."""


class MultiheadAttention(Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("gradc.nn.MultiheadAttention: add_bias_kv, add_zero_attn and kdim/vdim other "
                                      "than embed_dim are not supported")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        self.in_proj_weight = Parameter(factories.empty(3 * embed_dim, embed_dim, dtype=dtype))
        init.xavier_uniform_(self.in_proj_weight)
        self.in_proj_bias = Parameter(factories.zeros(3 * embed_dim, dtype=dtype)) if bias else None
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if bias:
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = query.ndim == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        L, N, E = query.shape
        S, H, D = key.shape[0], self.num_heads, self.head_dim
        w, b = self.in_proj_weight, self.in_proj_bias
        q, k, v = (F.linear(t, w[i * E:(i + 1) * E], None if b is None else b[i * E:(i + 1) * E])
                   for i, t in enumerate((query, key, value)))
        q, k, v = (t.reshape(t.shape[0], N * H, D).transpose(0, 1) for t in (q, k, v))   # (N*H, len, D)
        scores = (q * math.sqrt(1.0 / D)) @ k.transpose(-2, -1)
        bias = self._mask_bias(attn_mask, key_padding_mask, is_causal, L, S, N, scores.dtype)
        if bias is not None:
            scores = scores + bias
        weights = scores.softmax(-1)
        if self.dropout > 0.0 and self.training:
            weights = F.dropout(weights, self.dropout)
        out = (weights @ v).transpose(0, 1).reshape(L * N, E)
        out = self.out_proj(out).reshape(L, N, E)
        if batched and self.batch_first:
            out = out.transpose(0, 1)
        elif not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        weights = weights.reshape(N, H, L, S)
        if average_attn_weights:
            weights = weights.mean(1)
        return out, (weights if batched else weights.squeeze(0))

    def _mask_bias(self, attn_mask, key_padding_mask, is_causal, L, S, N, dtype):
        """One additive bias, (L, S), (N*H, L, S) or None: bool masks are True where attention is
        *not* allowed (PyTorch's convention here, the opposite of scaled_dot_product_attention's)."""
        from ..tensor_api import where

        def additive(mask):
            if mask.dtype.name == "bool":
                return where(mask, factories.full(tuple(mask.shape), -math.inf, dtype=dtype, device=mask.device), 0.0)
            return mask.to(dtype)
        bias = None
        if is_causal and attn_mask is None:
            attn_mask = factories.ones(L, S).triu(1) > 0
        if attn_mask is not None:
            bias = additive(attn_mask)
        if key_padding_mask is not None:
            pad = additive(key_padding_mask).reshape(N, 1, 1, S).expand(N, self.num_heads, 1, S)
            pad = pad.reshape(N * self.num_heads, 1, S)
            bias = pad if bias is None else bias + pad
        return bias


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and LayerNorm
    (after it, or before it with ``norm_first``), as PyTorch's (same submodules and names)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, dtype=None):
        super().__init__()
        from .modules import Dropout, LayerNorm
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in ("relu", "gelu"):
                raise RuntimeError(f"activation should be relu/gelu, not {activation}")
            activation = F.relu if activation == "relu" else F.gelu
        self.activation = activation

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        import copy

        from .containers import ModuleList
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x

"""Recurrent layers: nn.RNN, nn.LSTM and nn.GRU with PyTorch's parameters (names, shapes, gate
order, initialisation) and outputs.  Each time step is table ops, so a compiled loss unrolls
the sequence into one function; the input projections of all steps run as one matmul first."""
from __future__ import annotations

import math

from .. import factories
from . import functional as F
from . import init
from .modules import Module
from .parameter import Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _uniform_by_hidden_size(module):
    """PyTorch's recurrent initialisation: every parameter uniform in +-1/sqrt(hidden_size)."""
    bound = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


class RNNBase(Module):
    """The multi-layer recurrent nets: ``RNNBase(mode, input_size, hidden_size, ...)`` as PyTorch's
    (mode 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU'), or a subclass's ``(input_size, hidden_size,
    ...)`` with the class's mode."""
    mode = "RNN_TANH"

    def __init__(self, *args, **kwargs):
        if args and isinstance(args[0], str):          # PyTorch's RNNBase(mode, input_size, ...)
            args, kwargs = args[1:], {**kwargs, "mode": args[0]}
        self._build(*args, **kwargs)

    def _build(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
               bidirectional=False, proj_size=0, device=None, dtype=None, *, mode=None):
        super().__init__()
        if mode is not None and mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if mode is not None:
            self.mode = mode
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, float(dropout), bidirectional
        if proj_size and self.mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.proj_size = proj_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        gates = _GATES[self.mode] * hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(directions):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                width = input_size if layer == 0 else real_hidden * directions
                shapes = [("weight_ih", (gates, width)), ("weight_hh", (gates, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                for name, shape in shapes:
                    self.register_parameter(name + sfx, Parameter(factories.empty(*shape, dtype=dtype)))
                    self._flat_weights_names.append(name + sfx)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_by_hidden_size(self)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---- the recurrence --------------------------------------------------------------------
    def _cell(self, gi, h, c, w_hh, b_hh, w_hr=None):
        """One step: ``gi`` is the input projection (with its bias) of this step; an LSTM's
        output is projected by ``w_hr`` where it has projections."""
        gh = F.linear(h, w_hh, b_hh)      # (PyTorch's cells: linear, so autocast casts them)
        if self.mode == "LSTM":
            i, f, g, o = (gi + gh).chunk(4, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
            return (h if w_hr is None else h @ w_hr.t()), c
        if self.mode == "GRU":
            ri, zi, ni = gi.chunk(3, 1)
            rh, zh, nh = gh.chunk(3, 1)
            r, z = (ri + rh).sigmoid(), (zi + zh).sigmoid()
            n = (ni + r * nh).tanh()
            return (1 - z) * n + z * h, None
        pre = gi + gh
        return (pre.tanh() if self.mode == "RNN_TANH" else pre.relu()), None

    def _weights(self, layer, reverse):
        sfx = f"_l{layer}" + ("_reverse" if reverse else "")
        w_ih, w_hh = getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx)
        b_ih = getattr(self, "bias_ih" + sfx) if self.bias else None
        b_hh = getattr(self, "bias_hh" + sfx) if self.bias else None
        w_hr = getattr(self, "weight_hr" + sfx) if self.proj_size > 0 else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _direction(self, x, h, c, layer, reverse):
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, reverse)
        steps, batch = x.shape[0], x.shape[1]
        gi_all = F.linear(x.reshape(steps * batch, x.shape[2]), w_ih, b_ih)
        gi_all = gi_all.reshape(steps, batch, gi_all.shape[1])
        outs = [None] * steps
        for t in (reversed(range(steps)) if reverse else range(steps)):
            h, c = self._cell(gi_all[t], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
        from ..tensor_api import stack
        return stack(outs, 0), h, c

    def _direction_packed(self, x, sizes, h0, c0, layer, reverse):
        """One direction over packed data ``x`` (sum(sizes), features): step t runs the first
        ``sizes[t]`` sequences (sorted by decreasing length); a sequence's final state is its
        state after its own last step (reverse: each sequence starts from its h0 row)."""
        from ..tensor_api import cat
        w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, reverse)
        gi_all = F.linear(x, w_ih, b_ih)
        offsets = [0]
        for b in sizes:
            offsets.append(offsets[-1] + b)
        outs = [None] * len(sizes)
        lstm = c0 is not None
        if not reverse:
            h, c = h0, c0
            for t, b in enumerate(sizes):
                hb, cb = self._cell(gi_all[offsets[t]:offsets[t + 1]], h[:b], c[:b] if lstm else None, w_hh, b_hh,
                                    w_hr)
                outs[t] = hb
                full = h.shape[0]
                h = hb if b == full else cat([hb, h[b:]])
                if lstm:
                    c = cb if b == full else cat([cb, c[b:]])
            return cat(outs), h, c
        h = c = None
        for t in reversed(range(len(sizes))):
            b = sizes[t]
            have = 0 if h is None else h.shape[0]
            if have < b:
                h = h0[:b] if h is None else cat([h, h0[have:b]])
                if lstm:
                    c = c0[:b] if c is None else cat([c, c0[have:b]])
            h, c = self._cell(gi_all[offsets[t]:offsets[t + 1]], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
        return cat(outs), h, c

    def _forward_packed(self, packed, hx):
        from .utils.rnn import PackedSequence
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        sizes = [int(b) for b in batch_sizes.tolist()]
        lstm = self.mode == "LSTM"
        h0, c0 = self._initial_state(hx, sizes[0], data, None if sorted_indices is None else
                                     (lambda h: h.index_select(1, sorted_indices)))
        x, h_n, c_n = self._layers(data, h0, c0, 1, lambda x, h, c, layer, reverse:
                                   self._direction_packed(x, sizes, h, c, layer, reverse))
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
        output = PackedSequence(x, batch_sizes, sorted_indices, unsorted_indices)
        return output, ((h_n, c_n) if lstm else h_n)

    def _check_hx_dims(self, hx, batched):
        """PyTorch's error for an initial state with other dims than the input's (2-D unbatched, 3-D batched)."""
        if hx is None:
            return
        want, kind = (3, "batched 3-D") if batched else (2, "unbatched 2-D")
        if self.mode == "LSTM":
            if hx[0].ndim != want or hx[1].ndim != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got ({hx[0].ndim}-D, "
                                   f"{hx[1].ndim}-D) tensors")
        elif hx.ndim != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.ndim}-D tensor")

    def _initial_state(self, hx, batch, like, adapt=None):
        """(h0, c0; c0 None but for an LSTM): zeros like ``like``, or ``hx`` with ``adapt`` applied to
        each (a packed batch's order, an unbatched input's batch dim) checked against PyTorch's sizes."""
        lstm = self.mode == "LSTM"
        states = self.num_layers * (2 if self.bidirectional else 1)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            h0 = factories.zeros(states, batch, real_hidden, dtype=like.dtype, device=like.device)
            c0 = factories.zeros(states, batch, self.hidden_size, dtype=like.dtype,
                                 device=like.device) if lstm else None
            return h0, c0
        h0, c0 = hx if lstm else (hx, None)
        if adapt is not None:
            h0 = adapt(h0)
            c0 = adapt(c0) if c0 is not None else None
        self._check_hidden(h0, (states, batch, real_hidden), "hidden[0]" if lstm else "hidden")
        if lstm:
            self._check_hidden(c0, (states, batch, self.hidden_size), "hidden[1]")
        return h0, c0

    def _layers(self, x, h0, c0, feature_dim, direction):
        """The stacked layers over ``x``, each direction by ``direction(x, h, c, layer, reverse)``
        (-> output, h, c), the directions' outputs joined along ``feature_dim``, dropout between
        layers: (last layer's output, h_n, c_n)."""
        from ..tensor_api import cat, stack
        directions = 2 if self.bidirectional else 1
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                out, h, c = direction(x, h0[k], c0[k] if c0 is not None else None, layer, bool(d))
                outs.append(out)
                hs.append(h)
                cs.append(c)
            x = outs[0] if directions == 1 else cat(outs, feature_dim)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout)
        return x, stack(hs, 0), (stack(cs, 0) if c0 is not None else None)

    @staticmethod
    def _check_hidden(h, want, label):
        if tuple(h.shape) != want:
            raise RuntimeError(f"Expected {label} size {want}, got {list(h.shape)}")

    def forward(self, input, hx=None):
        from .utils.rnn import PackedSequence
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        batched = input.ndim == 3
        if input.ndim not in (2, 3):
            word = " tensor" if type(self).__name__ == "RNN" else ""        # (PyTorch's wording differs so)
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D{word} instead")
        self._check_hx_dims(hx, batched)
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype is not weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). Convert "
                             f"input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        x = input if batched else input.unsqueeze(1)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if x.shape[2] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{x.shape[2]}")
        lstm = self.mode == "LSTM"
        h0, c0 = self._initial_state(hx, x.shape[1], x, None if batched else (lambda h: h.unsqueeze(1)))
        output, h_n, c_n = self._layers(x, h0, c0, 2, self._direction)
        if batched and self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return output, ((h_n, c_n) if lstm else h_n)


class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, dtype=dtype,
                         mode="RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU")
        self.nonlinearity = nonlinearity         # (PyTorch's repr does not show it)


class LSTM(RNNBase):
    mode = "LSTM"


class GRU(RNNBase):
    mode = "GRU"


class RNNCellBase(Module):
    """One step of an RNN/LSTM/GRU: PyTorch's ``weight_ih`` (gates * hidden, input),
    ``weight_hh`` (gates * hidden, hidden), ``bias_ih``/``bias_hh``, all uniform in
    +-1/sqrt(hidden_size); the gate code is ``RNNBase._cell``'s."""
    mode = "RNN_TANH"

    def __init__(self, input_size, hidden_size, bias=True, num_chunks=1, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(factories.empty(gates, input_size, dtype=dtype))
        self.weight_hh = Parameter(factories.empty(gates, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(factories.empty(gates, dtype=dtype))
            self.bias_hh = Parameter(factories.empty(gates, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _uniform_by_hidden_size(self)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _check(self, input, hx):
        name = type(self).__name__
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        for i, h in enumerate(hx if isinstance(hx, tuple) else (hx,)):
            if h is not None and h.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected hx[{i}] to be 1D or 2D, got {h.ndim}D instead" if
                                 self.mode == "LSTM" else
                                 f"{name}: Expected hidden to be 1D or 2D, got {h.ndim}D instead")
        if getattr(self, "nonlinearity", "tanh") not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected "
                               f"{self.input_size}")

    def _step(self, input, h, c):
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        zeros = None
        if h is None:
            zeros = factories.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            h = zeros
        elif not batched:
            h = h.unsqueeze(0)
        if self.mode == "LSTM":
            c = zeros if c is None and zeros is not None else (c if batched or c is None else c.unsqueeze(0))
        for name, t in (("hidden", h), ("cell", c)):
            label = 0 if name == "hidden" else 1
            if t is not None and t.shape[0] != x.shape[0]:
                raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{label} batch size "
                                   f"{t.shape[0]}")
            if t is not None and t.ndim < 2:
                raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
            if t is not None and t.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {t.shape[1]}, expected "
                                   f"{self.hidden_size}")
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        h, c = RNNBase._cell(self, gi, h, c, self.weight_hh, self.bias_hh)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return h, c


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, dtype=dtype)     # (a bad nonlinearity: an error
                                                                            # at the call, as PyTorch's)
        self.nonlinearity = nonlinearity
        self.mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"

    def forward(self, input, hx=None):
        self._check(input, hx)
        return self._step(input, hx, None)[0]


class LSTMCell(RNNCellBase):
    mode = "LSTM"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, dtype=dtype)

    def forward(self, input, hx=None):
        self._check(input, hx)
        h, c = (None, None) if hx is None else hx
        return self._step(input, h, c)


class GRUCell(RNNCellBase):
    mode = "GRU"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, dtype=dtype)

    def forward(self, input, hx=None):
        self._check(input, hx)
        return self._step(input, hx, None)[0]

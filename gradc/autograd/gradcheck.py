"""gradcheck / gradgradcheck: compare autograd Jacobians with central finite differences."""
from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    pass


def _tensors(xs):
    from ..tensor import Tensor
    return [x for x in xs if isinstance(x, Tensor)]


def _outputs(func, inputs):
    out = func(*inputs)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _differentiable(o) -> bool:
    return o.requires_grad and o.dtype.is_floating_point


def _numerical_jacobian(func, inputs, wrt, eps):
    """For each differentiable input, d(flattened outputs)/d(flattened input) by central differences.

    ``func`` runs with grad mode as the caller has it (gradgradcheck's function needs a graph to
    differentiate); the input is perturbed in place element by element, whatever its strides."""
    jac = []
    for x in wrt:
        data = x._data
        cols = []
        for idx in np.ndindex(data.shape):
            orig = data[idx].copy()
            data[idx] = orig + eps
            plus = [o._data.astype(np.float64).ravel().copy() for o in _outputs(func, inputs)]
            data[idx] = orig - eps
            minus = [o._data.astype(np.float64).ravel().copy() for o in _outputs(func, inputs)]
            data[idx] = orig
            cols.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)]))
        total = sum(o.numel() for o in _outputs(func, inputs))
        jac.append(np.stack(cols, axis=1) if cols else np.zeros((total, 0)))
    return jac


def _analytical_jacobian(func, inputs, wrt):
    from ..tensor import Tensor
    from . import grad as autograd_grad
    outs = _outputs(func, inputs)
    total = sum(o.numel() for o in outs)
    rows = [np.zeros((total, x.numel())) for x in wrt]
    r = 0
    for o in outs:
        for j in range(o.numel()):
            if _differentiable(o):
                g = np.zeros(o.numel(), dtype=o.dtype.np)
                g[j] = 1
                grads = autograd_grad([o], wrt, [Tensor(g.reshape(o.shape))], retain_graph=True,
                                      allow_unused=True)
                for k, gk in enumerate(grads):
                    if gk is not None:
                        rows[k][r] = gk._data.astype(np.float64).ravel()
            r += 1
    return rows, [o.numel() for o in outs]


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored) -> bool:
    """True when autograd's Jacobian matches central finite differences (use float64 inputs)."""
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    wrt = [x for x in _tensors(inputs) if x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the "
                         "them have requires_grad=True.")
    numerical = _numerical_jacobian(func, inputs, wrt, eps)
    analytical, sizes = _analytical_jacobian(func, inputs, wrt)
    bounds = np.cumsum([0] + sizes)
    for k, (n, a) in enumerate(zip(numerical, analytical)):
        for i in range(len(sizes)):
            ns, an = n[bounds[i]:bounds[i + 1]], a[bounds[i]:bounds[i + 1]]
            if not np.allclose(an, ns, atol=atol, rtol=rtol, equal_nan=True):
                if raise_exception:
                    raise GradcheckError(f"Jacobian mismatch for output {i} with respect to input {k},\n"
                                         f"numerical:{ns}\nanalytical:{an}\n")
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  seed=0, **_ignored) -> bool:
    """gradcheck applied to the first derivative (built with create_graph=True).

    ``grad_outputs`` (random by default) are one per differentiable output of ``func``."""
    from ..tensor import Tensor
    from . import grad as autograd_grad
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    outs = [o for o in _outputs(func, inputs) if _differentiable(o)]
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [Tensor(rng.standard_normal(o.shape).astype(o.dtype.np), requires_grad=True)
                        for o in outs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outs):
        raise ValueError(f"gradgradcheck: got {len(grad_outputs)} grad_outputs for {len(outs)} differentiable "
                         "outputs")
    n = len(inputs)

    def first_derivative(*args):
        xs, gos = args[:n], args[n:]
        ys = [o for o in _outputs(func, xs) if _differentiable(o)]
        wrt_now = [x for x in _tensors(xs) if x.requires_grad]
        grads = autograd_grad(ys, wrt_now, list(gos), create_graph=True, allow_unused=True)
        return tuple(g if g is not None else x * 0 for g, x in zip(grads, wrt_now))

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)

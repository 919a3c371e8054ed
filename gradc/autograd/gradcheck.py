"""gradcheck / gradgradcheck: compare autograd Jacobians with central finite differences."""
from __future__ import annotations

import numpy as np

from . import grad_mode


class GradcheckError(RuntimeError):
    pass


def _tensors(xs):
    from ..tensor import Tensor
    return [x for x in xs if isinstance(x, Tensor)]


def _outputs(func, inputs):
    out = func(*inputs)
    return out if isinstance(out, (tuple, list)) else (out,)


def _numerical_jacobian(func, inputs, wrt, eps):
    """For each differentiable input, d(flattened outputs)/d(flattened input) by central differences."""
    jac = []
    for x in wrt:
        flat = x._data.reshape(-1)
        cols = []
        for i in range(flat.size):
            orig = flat[i].copy()
            with grad_mode.no_grad():
                flat[i] = orig + eps
                plus = [o._data.astype(np.float64).ravel().copy() for o in _outputs(func, inputs)]
                flat[i] = orig - eps
                minus = [o._data.astype(np.float64).ravel().copy() for o in _outputs(func, inputs)]
            flat[i] = orig
            cols.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(plus, minus)]))
        jac.append(np.stack(cols, axis=1) if cols else np.zeros((0, 0)))
    return jac


def _analytical_jacobian(func, inputs, wrt):
    from ..tensor import Tensor
    from . import grad as autograd_grad
    outs = [o for o in _outputs(func, inputs)]
    total = sum(o.numel() for o in outs)
    rows = [np.zeros((total, x.numel())) for x in wrt]
    r = 0
    for o in outs:
        for j in range(o.numel()):
            if o.requires_grad:
                g = np.zeros(o.numel(), dtype=o.dtype.np)
                g[j] = 1
                grads = autograd_grad([o], wrt, [Tensor(g.reshape(o.shape))], retain_graph=True,
                                      allow_unused=True)
                for k, gk in enumerate(grads):
                    if gk is not None:
                        rows[k][r] = gk._data.astype(np.float64).ravel()
            r += 1
    return rows


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored) -> bool:
    """True when autograd's Jacobian matches central finite differences (use float64 inputs)."""
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    wrt = [x for x in _tensors(inputs) if x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    numerical = _numerical_jacobian(func, inputs, wrt, eps)
    analytical = _analytical_jacobian(func, inputs, wrt)
    for k, (n, a) in enumerate(zip(numerical, analytical)):
        if not np.allclose(a, n, atol=atol, rtol=rtol, equal_nan=True):
            if raise_exception:
                raise GradcheckError(f"Jacobian mismatch for output 0 with respect to input {k},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  seed=0, **_ignored) -> bool:
    """gradcheck applied to the first derivative (built with create_graph=True)."""
    from ..tensor import Tensor
    from . import grad as autograd_grad
    if not isinstance(inputs, (tuple, list)):
        inputs = (inputs,)
    wrt = [x for x in _tensors(inputs) if x.requires_grad]
    outs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = [Tensor(rng.standard_normal(o.shape).astype(o.dtype.np), requires_grad=True) for o in outs]
    grad_outputs = list(grad_outputs)

    def first_derivative(*args):
        xs, gos = args[:len(inputs)], args[len(inputs):]
        ys = [o for o in _outputs(func, xs) if o.requires_grad]
        wrt_now = [x for x in _tensors(xs) if x.requires_grad]
        grads = autograd_grad(ys, wrt_now, gos[:len(ys)], create_graph=True, allow_unused=True)
        return tuple(g if g is not None else x * 0 for g, x in zip(grads, wrt_now))

    return gradcheck(first_derivative, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)

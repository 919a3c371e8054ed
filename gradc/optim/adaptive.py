"""NAdam, RAdam, Adamax, Adadelta, ASGD, Rprop and Adafactor: torch.optim's single-tensor
(``foreach=False``) update rules, op for op, so a trajectory rounds as PyTorch's does.

PyTorch keeps some per-parameter scalars as float32 tensors (NAdam's ``mu_product``, ASGD's
``eta`` and ``mu``); they are float32 tensors here too, since their rounding reaches the update.
``step`` is a Python int, as in the other gradc optimizers. ``foreach`` and ``capturable`` are
accepted and stored (the update is the same); ``differentiable=True`` is refused.
"""
from __future__ import annotations

from ..autograd import grad_mode
from .optimizer import Optimizer, _check_betas, _check_nonnegative


def _flags(foreach, maximize, capturable, differentiable):
    """The keyword flags PyTorch stores in every group."""
    if differentiable:
        raise NotImplementedError("gradc.optim: differentiable=True is not supported")
    return dict(foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable)


def _scalar_state(value):
    """A per-parameter scalar kept, as PyTorch keeps it, in a float32 0-d tensor."""
    from ..factories import tensor
    from ..dtypes import float32
    return tensor(value, dtype=float32)


class _Lazy(Optimizer):
    """An optimizer whose per-parameter state is created at the parameter's first step."""

    def _state(self, p, init):
        """The state of ``p``, filled by ``init()`` (a dict) on first use; its step counted."""
        state = self.state.setdefault(id(p), {})
        if not state:
            state.update(init())
        state["step"] += 1
        return state


def _adam_checks(lr, betas, eps, weight_decay):
    _check_nonnegative(learning_rate=lr, epsilon=eps)
    _check_betas(betas)
    _check_nonnegative(weight_decay=weight_decay)


def _moments(p):
    from ..factories import zeros_like
    return {"step": 0, "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}


def _decay(g, p, grad, decoupled):
    """Weight decay: ``p *= 1 - lr * wd`` when decoupled, else ``grad + wd * p``."""
    if g["weight_decay"] != 0:
        if decoupled:
            p.mul_(1 - g["lr"] * g["weight_decay"])
        else:
            grad = grad.add(p, alpha=g["weight_decay"])
    return grad


class NAdam(_Lazy):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _adam_checks(lr, betas, eps, weight_decay)
        _check_nonnegative(momentum_decay=momentum_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    @grad_mode.no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            state = self._state(p, lambda: {**_moments(p), "mu_product": _scalar_state(1.0)})
            grad = _decay(g, p, p._grad if not g["maximize"] else -p._grad, g["decoupled_weight_decay"])
            (b1, b2), step, lr = g["betas"], state["step"], g["lr"]
            bias_correction2 = 1 - b2 ** step
            mu = b1 * (1.0 - 0.5 * (0.96 ** (step * g["momentum_decay"])))
            mu_next = b1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * g["momentum_decay"])))
            state["mu_product"].mul_(mu)
            mu_product = state["mu_product"].item()
            state["exp_avg"].lerp_(grad, 1 - b1)
            state["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
            denom = state["exp_avg_sq"].div(bias_correction2).sqrt().add_(g["eps"])
            p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
            p.addcdiv_(state["exp_avg"], denom, value=(-lr * mu_next) / (1.0 - mu_product * mu_next))
        return loss


class RAdam(_Lazy):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _adam_checks(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    @grad_mode.no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            state = self._state(p, lambda: _moments(p))
            grad = _decay(g, p, p._grad if not g["maximize"] else -p._grad, g["decoupled_weight_decay"])
            (b1, b2), step, lr = g["betas"], state["step"], g["lr"]
            state["exp_avg"].lerp_(grad, 1 - b1)
            state["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
            bias_correction1 = 1 - b1 ** step
            bias_correction2 = 1 - b2 ** step
            corrected = state["exp_avg"] / bias_correction1
            rho_inf = 2 / (1 - b2) - 1
            rho_t = rho_inf - 2 * step * (b2 ** step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive_lr = (bias_correction2 ** 0.5) / state["exp_avg_sq"].sqrt().add_(g["eps"])
                p.add_(corrected * lr * adaptive_lr * rect, alpha=-1.0)
            else:
                p.add_(corrected * lr, alpha=-1.0)
        return loss


class Adamax(_Lazy):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _adam_checks(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    @grad_mode.no_grad()
    def step(self, closure=None):
        from ..factories import zeros_like
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            state = self._state(p, lambda: {"step": 0, "exp_avg": zeros_like(p), "exp_inf": zeros_like(p)})
            grad = _decay(g, p, p._grad if not g["maximize"] else -p._grad, False)
            b1, b2 = g["betas"]
            state["exp_avg"].lerp_(grad, 1 - b1)
            exp_inf = state["exp_inf"]
            exp_inf.copy_(exp_inf.mul_(b2).maximum(grad.abs().add_(g["eps"])))
            clr = g["lr"] / (1 - b1 ** state["step"])
            p.addcdiv_(state["exp_avg"], exp_inf, value=-clr)
        return loss


class Adadelta(_Lazy):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_nonnegative(learning_rate=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(epsilon=eps, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    @grad_mode.no_grad()
    def step(self, closure=None):
        from ..factories import zeros_like
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            state = self._state(p, lambda: {"step": 0, "square_avg": zeros_like(p), "acc_delta": zeros_like(p)})
            grad = _decay(g, p, p._grad if not g["maximize"] else -p._grad, False)
            rho, eps = g["rho"], g["eps"]
            state["square_avg"].mul_(rho).addcmul_(grad, grad, value=1 - rho)
            std = state["square_avg"].add(eps).sqrt_()
            delta = state["acc_delta"].add(eps).sqrt_().div_(std).mul_(grad)
            state["acc_delta"].mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-g["lr"])
        return loss


class ASGD(_Lazy):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_nonnegative(learning_rate=lr, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    @grad_mode.no_grad()
    def step(self, closure=None):
        from ..factories import zeros_like
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            state = self._state(p, lambda: {"step": 0, "eta": _scalar_state(g["lr"]), "mu": _scalar_state(1.0),
                                            "ax": zeros_like(p)})
            grad = _decay(g, p, p._grad if not g["maximize"] else -p._grad, False)
            lr, lambd, step = g["lr"], g["lambd"], state["step"]
            eta = state["eta"].item()
            p.mul_(1 - lambd * eta)
            p.add_(grad, alpha=-eta)
            if state["mu"].item() != 1:
                state["ax"].add_(p.sub(state["ax"]).mul_(state["mu"]))
            else:
                state["ax"].copy_(p)
            state["eta"].fill_(lr / ((1 + lambd * lr * step) ** g["alpha"]))
            state["mu"].fill_(1 / max(1, step - g["t0"]))
        return loss


class Rprop(_Lazy):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_nonnegative(learning_rate=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                      **_flags(foreach, maximize, capturable, differentiable)))

    @grad_mode.no_grad()
    def step(self, closure=None):
        from ..factories import full_like, zeros_like
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            state = self._state(p, lambda: {"step": 0, "prev": zeros_like(p), "step_size": full_like(p, g["lr"])})
            grad = p._grad if not g["maximize"] else -p._grad
            (etaminus, etaplus), (size_min, size_max) = g["etas"], g["step_sizes"]
            sign = grad.mul(state["prev"]).sign()
            factor = sign.new_ones(sign.shape).masked_fill_(sign.gt(0), etaplus).masked_fill_(sign.lt(0), etaminus)
            state["step_size"].mul_(factor).clamp_(size_min, size_max)
            grad = grad.masked_fill(sign.lt(0), 0)
            p.addcmul_(grad.sign(), state["step_size"], value=-1)
            state["prev"].copy_(grad)
        return loss


class Adafactor(_Lazy):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    @staticmethod
    def _initial(grad):
        """Factored second moments (row and column) for a matrix, a full one for a vector."""
        from ..factories import zeros_like
        if grad.dim() > 1:
            return {"step": 0, "row_var": grad.new_zeros(list(grad.shape[:-1]) + [1]),
                    "col_var": grad.new_zeros(list(grad.shape[:-2]) + [1, grad.shape[-1]])}
        return {"step": 0, "variance": zeros_like(grad)}

    @grad_mode.no_grad()
    def step(self, closure=None):
        from ..dtypes import finfo
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            state = self._state(p, lambda: self._initial(p._grad))
            grad = p._grad if not g["maximize"] else -p._grad
            eps1, eps2 = g["eps"]
            eps1 = finfo(p.dtype).eps if eps1 is None else eps1
            step, lr = float(state["step"]), g["lr"]
            one_minus_beta2_t = step ** g["beta2_decay"]
            rho_t = min(lr, 1 / (step ** 0.5))
            alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
            if g["weight_decay"] != 0:
                p.mul_(1 - lr * g["weight_decay"])
            if grad.dim() > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1)), one_minus_beta2_t)
                col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2)), one_minus_beta2_t)
                var_estimate = row_var @ col_var
                var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
            else:
                state["variance"].lerp_(grad * grad, one_minus_beta2_t)
                var_estimate = state["variance"].clone()
            update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * g["d"]))
            p.add_(update, alpha=-alpha / denom)
        return loss


__all__ = ["NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop", "Adafactor"]

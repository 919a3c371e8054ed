"""Optimizers updating parameters in place under no_grad, matching torch.optim's update rules."""
from __future__ import annotations

import math

import functools
from collections import OrderedDict

from .._warnings import warn_at_user_code
from ..autograd import grad_mode
from ..autograd.profiler import record_function
from ..nn.modules import RemovableHandle

_global_pre_hooks: OrderedDict = OrderedDict()
_global_post_hooks: OrderedDict = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; it may return
    ``(new_args, new_kwargs)`` (``args`` starts with the optimizer)."""
    return RemovableHandle(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    return RemovableHandle(_global_post_hooks, hook)


def _hooked_step(step):
    """``step`` run as PyTorch runs it: in a ``record_function("Optimizer.step#SGD.step")`` block,
    between the global and the optimizer's own pre and post hooks. A subclass's step calling its
    base's (AdamW's is Adam's) runs the hooks once, for the outer call."""
    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]
        if self.__dict__.get("_stepping"):
            return step(*args, **kwargs)
        with record_function(f"Optimizer.step#{type(self).__name__}.step"):
            for hook in list(_global_pre_hooks.values()) + list(self._optimizer_step_pre_hooks.values()):
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                                           f"{result}.")
                    args, kwargs = result
            self._stepping = True
            try:
                out = step(*args, **kwargs)
            finally:
                self._stepping = False
            for hook in list(self._optimizer_step_post_hooks.values()) + list(_global_post_hooks.values()):
                hook(self, args, kwargs)
            return out
    wrapper.hooked = True
    return wrapper


def _check_nonnegative(**values):
    """PyTorch's ValueError for a negative hyperparameter (``Invalid eps value: -1``); keyword
    names are the message's, checked in the order given."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid learning rate: {value}" if name == "learning_rate"
                             else f"Invalid {name} value: {value}")


def _check_below_zero(**values):
    """SGD's form of the check (``value < 0.0``, so a non-number's TypeError reads as PyTorch's)."""
    for name, value in values.items():
        if value < 0.0:
            raise ValueError(f"Invalid learning rate: {value}" if name == "learning_rate"
                             else f"Invalid {name} value: {value}")


def _check_betas(betas):
    for k in range(2):                  # (indexed, as PyTorch's: a float's TypeError is its)
        if not 0.0 <= betas[k] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {k}: {betas[k]}")


def _copied(value):
    """A state value as state_dict/load_state_dict hand it over: tensors cloned, lists (LBFGS's
    history) copied element by element, anything else as is."""
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value.clone() if hasattr(value, "clone") else value


class Optimizer:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` before this optimizer's ``step``; it may return
        ``(new_args, new_kwargs)``."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` after this optimizer's ``step``."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)

    def __init__(self, params, defaults):
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        from ..tensor_api import is_tensor_like
        if is_tensor_like(params):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got torch.{params.dtype.tensor_type}")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if isinstance(params[0], dict):
            groups = params
        else:
            groups = [{"params": params}]
        self.defaults = defaults
        self.param_groups = []
        self.state: dict = {}
        for g in groups:
            self.add_param_group(g)

    def state_dict(self):
        """PyTorch's layout: ``state`` keyed by each parameter's position across the groups,
        ``param_groups`` with those positions in place of the parameters."""
        index, groups = {}, []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in g["params"]]
            groups.append(packed)
        params = {id(p): p for g in self.param_groups for p in g["params"]}
        state = {index[pid]: {k: _copied(v) for k, v in st.items()}
                 for pid, st in self.state.items() if pid in params}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
        self.state = {}
        for mine, saved in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], saved["params"]):
                if i in state_dict["state"]:
                    self.state[id(p)] = {k: _copied(v) for k, v in state_dict["state"][i].items()}
            mine.update({k: v for k, v in saved.items() if k != "params"})

    def add_param_group(self, param_group):
        """Add a group, its parameters checked as PyTorch checks them (tensors, leaves, each in one
        group; a repeat within the group is warned about)."""
        from ..tensor_api import is_tensor_like
        group = dict(self.defaults)
        group.update(param_group)
        params = group["params"]
        params = [params] if is_tensor_like(params) else list(params)
        for p in params:
            if not is_tensor_like(p):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        if len({id(p) for p in params}) != len(params):
            warn_at_user_code("optimizer contains a parameter group with duplicate parameters; in future, this will "
                              "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                              UserWarning)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        group["params"] = params
        self.param_groups.append(group)

    def zero_grad(self, set_to_none=True):
        with record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
            self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none):
        for g in self.param_groups:
            for p in g["params"]:
                if set_to_none:
                    p.grad = None
                elif p._grad is not None:
                    p._grad.zero_()

    @staticmethod
    def _closure_loss(closure):
        """PyTorch's optional ``closure``: called with gradients enabled before the update, its
        loss returned by ``step``."""
        if closure is None:
            return None
        with grad_mode.enable_grad():
            return closure()

    def _params_with_grad(self):
        for g in self.param_groups:
            for p in g["params"]:
                if p._grad is not None:
                    yield g, p

    @staticmethod
    def _gradient(g, p, coupled_decay=True):
        """The step's gradient: negated for ``maximize``, plus ``weight_decay * p`` (L2) unless the
        optimizer decays the parameter itself (AdamW)."""
        grad = p._grad if not g["maximize"] else -p._grad
        if coupled_decay and g["weight_decay"]:
            grad = grad + p * g["weight_decay"]
        return grad


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False):
        _check_below_zero(learning_rate=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    @grad_mode.no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            d = self._gradient(g, p)
            if g["momentum"]:
                state = self.state.setdefault(id(p), {})
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = d.clone()
                else:
                    buf.mul_(g["momentum"]).add_(d, alpha=1 - g["dampening"])
                d = d + buf * g["momentum"] if g["nesterov"] else buf
            p.sub_(d * g["lr"])
        return loss


class Adam(Optimizer):
    _decoupled = False            # AdamW: weight decay scales the parameter, not the gradient

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 maximize=False):
        _check_nonnegative(learning_rate=lr, epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    @grad_mode.no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            grad = self._gradient(g, p, coupled_decay=not self._decoupled)
            if g["weight_decay"] and self._decoupled:
                p.mul_(1 - g["lr"] * g["weight_decay"])
            b1, b2 = g["betas"]
            state = self.state.setdefault(id(p), {})
            if not state:
                from ..factories import zeros_like
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if g["amsgrad"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            t = state["step"]
            m, v = state["exp_avg"], state["exp_avg_sq"]
            m.mul_(b1).add_(grad, alpha=1 - b1)
            v.mul_(b2).add_(grad * grad, alpha=1 - b2)
            bias1 = 1 - b1 ** t
            bias2 = 1 - b2 ** t
            if g["amsgrad"]:
                mx = state["max_exp_avg_sq"]
                mx.copy_(mx.maximum(v))
                denom = (mx.sqrt() / math.sqrt(bias2)) + g["eps"]
            else:
                denom = (v.sqrt() / math.sqrt(bias2)) + g["eps"]
            p.sub_((m / denom) * (g["lr"] / bias1))
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam step."""
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
                 maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                 maximize=False):
        _check_nonnegative(learning_rate=lr, epsilon=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    @grad_mode.no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        from ..factories import zeros_like
        for g, p in self._params_with_grad():
            grad = self._gradient(g, p)
            state = self.state.setdefault(id(p), {})
            if not state:
                state["step"] = 0
                state["square_avg"] = zeros_like(p)
                if g["momentum"] > 0:
                    state["momentum_buffer"] = zeros_like(p)
                if g["centered"]:
                    state["grad_avg"] = zeros_like(p)
            state["step"] += 1
            a = g["alpha"]
            sq = state["square_avg"]
            sq.mul_(a).add_(grad * grad, alpha=1 - a)
            if g["centered"]:
                ga = state["grad_avg"]
                ga.mul_(a).add_(grad, alpha=1 - a)
                avg = (sq - ga * ga).sqrt() + g["eps"]
            else:
                avg = sq.sqrt() + g["eps"]
            if g["momentum"] > 0:
                buf = state["momentum_buffer"]
                buf.mul_(g["momentum"]).add_(grad / avg)
                p.sub_(buf * g["lr"])
            else:
                p.sub_((grad / avg) * g["lr"])
        return loss


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                 maximize=False):
        _check_nonnegative(learning_rate=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, epsilon=eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                                      initial_accumulator_value=initial_accumulator_value, maximize=maximize))
        from ..factories import full_like
        for group in self.param_groups:
            for p in group["params"]:
                self.state[id(p)] = {"step": 0, "sum": full_like(p, group["initial_accumulator_value"])}

    @grad_mode.no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for g, p in self._params_with_grad():
            grad = self._gradient(g, p)
            state = self.state[id(p)]
            state["step"] += 1
            clr = g["lr"] / (1 + (state["step"] - 1) * g["lr_decay"])
            state["sum"].add_(grad * grad)
            p.sub_((grad / (state["sum"].sqrt() + g["eps"])) * clr)
        return loss

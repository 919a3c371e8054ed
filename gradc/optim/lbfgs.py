"""L-BFGS with an optional strong-Wolfe line search: torch.optim.LBFGS's algorithm step for step
(the closure-based ``step``, one parameter group, the flat-gradient history in the state of the
first parameter). The scalars PyTorch keeps as 0-d tensors (``ys``, ``ro``, ``H_diag``, the
first step ``t``, ``gtd``) are 0-d tensors here too, so float32 problems round as in PyTorch."""
from __future__ import annotations

from ..autograd import grad_mode
from .optimizer import Optimizer, _check_nonnegative


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through two points with their derivatives, clamped to ``bounds``."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _bracket_from(t_prev, f_prev, g_prev, gtd_prev, t, f_new, g_new, gtd_new):
    return [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Bracketing, then zooming (cubic interpolation), until the strong Wolfe conditions hold:
    ``(loss, flat_grad, t, evaluations)``."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    bracket_gtd = None
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f, bracket_g, bracket_gtd = _bracket_from(t_prev, f_prev, g_prev, gtd_prev, t, f_new,
                                                                       g_new, gtd_new)
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f, bracket_g, bracket_gtd = _bracket_from(t_prev, f_prev, g_prev, gtd_prev, t, f_new,
                                                                       g_new, gtd_new)
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.clone(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) else min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.clone(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos], bracket_gtd[high_pos] = bracket_g[low_pos], bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.clone(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9,
                 history_size=100, line_search_fn=None):
        _check_nonnegative(learning_rate=lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change, history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        from ..tensor_api import cat
        return cat([p.new_zeros(p.numel()) if p._grad is None else p._grad.reshape(-1) for p in self._params], 0)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=float(step_size))
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, data in zip(self._params, x):
            p.copy_(data)
        return loss, flat_grad

    def _direction(self, state, flat_grad, history_size):
        """The two-loop recursion: ``-H g`` from the stored (y, s) pairs, after storing the newest."""
        y = flat_grad.sub(state["prev_flat_grad"])
        s = state["d"].mul(state["t"])
        ys = y.dot(s)
        if ys > 1e-10:
            if len(state["old_dirs"]) == history_size:
                for key in ("old_dirs", "old_stps", "ro"):
                    state[key].pop(0)
            state["old_dirs"].append(y)
            state["old_stps"].append(s)
            state["ro"].append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-float(al[i]))
        r = q * state["H_diag"]
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=float(al[i] - be_i))
        return r

    @grad_mode.no_grad()
    def step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]

        def evaluate():
            with grad_mode.enable_grad():
                return closure()

        state = self.state.setdefault(id(self._params[0]), {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = evaluate()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                state.update(d=flat_grad.neg(), old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                state["d"] = self._direction(state, flat_grad, group["history_size"])
            d = state["d"]
            if state.get("prev_flat_grad") is None:
                state["prev_flat_grad"] = flat_grad.clone()
            else:
                state["prev_flat_grad"].copy_(flat_grad)
            prev_loss = state["prev_loss"] = loss
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:
                state["t"] = t
                break

            ls_func_evals = 0
            opt_cond = False
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    lambda x, step, direction: self._directional_evaluate(evaluate, x, step, direction),
                    x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(evaluate())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    ls_func_evals = 1
            state["t"] = t
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals
            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or d.mul(t).abs().max() <= tolerance_change or abs(loss - prev_loss) < tolerance_change):
                break
        return orig_loss

"""``gradc demo``: train a small MLP on two interleaved spirals with a compiled loss.

This module owns the demo: the data set (generated here, nothing downloaded),
the model (``gradc.nn``), the training loop and its report. The loss is a
``@gradc.compile``d function that takes the input, the labels and the model's
parameters as arguments (forward, cross-entropy and accuracy compiled; calling
``.backward()`` on its loss runs the compiled backward), and the
``gradc.optim.Adam`` step runs eagerly. After training the same number of
benchmark steps runs compiled and eager from the same initial weights, so the
speed comparison comes from one process on one machine.

Progress is a one-line bar rewritten in place (``\\r``) when stdout is a
terminal, and a line every tenth of the run otherwise. ``--plot`` draws the loss
curve and the decision boundary with matplotlib, when it is installed.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import math
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import gradc
from gradc import nn
from gradc.nn import functional as F


# ---- data and model ------------------------------------------------------------------------------
def two_spirals(n_per_class: int = 200, seed: int = 0, turns: float = 2.5, noise: float = 0.03):
    """Points of two interleaved spirals in [-1, 1]^2 (float32) and their labels 0/1 (int64)."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for label in (0, 1):
        t = np.sqrt(rng.uniform(0.02, 1.0, n_per_class))          # radius, denser far from the centre
        angle = t * turns * 2 * math.pi + label * math.pi
        pts = np.stack([t * np.cos(angle), t * np.sin(angle)], axis=1)
        xs.append(pts + rng.normal(0.0, noise, pts.shape))
        ys.append(np.full(n_per_class, label))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def make_model(hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 2))


def apply_model(model: nn.Sequential, params, x):
    """``model(x)`` with ``params`` (one per model parameter, in order) in place of its parameters,
    so they can be arguments of a compiled function."""
    it = iter(params)
    for layer in model:
        if isinstance(layer, nn.Linear):
            weight = next(it)
            bias = next(it) if layer.bias is not None else None
            x = F.linear(x, weight, bias)
        else:
            x = layer(x)
    return x


def make_loss(model: nn.Sequential):
    """The compiled loss: (cross-entropy, number of correct predictions)."""
    @gradc.compile
    def spiral_loss(x, y, *params):
        logits = apply_model(model, params, x)
        return F.cross_entropy(logits, y), (logits.argmax(1) == y).sum()
    return spiral_loss


# ---- BLAS threads --------------------------------------------------------------------------------
@contextlib.contextmanager
def blas_threads(n: int):
    """Run with NumPy's OpenBLAS limited to ``n`` threads (``n <= 0``: unchanged).

    With matrices this small, OpenBLAS's threads spinning between calls compete with
    everything else for the cores (10x slower steps measured on 2 cores)."""
    setter, getter = (None, None) if n <= 0 else _openblas_threads()
    if setter is None:
        yield
        return
    old = getter()
    setter(n)
    try:
        yield
    finally:
        setter(max(1, old))


def _openblas_threads():
    libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs", "*openblas*"))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for suffix in ("64_", "_64_", ""):
            for prefix in ("scipy_openblas_", "openblas_"):
                s, g = getattr(lib, f"{prefix}set_num_threads{suffix}", None), \
                    getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                if s is not None and g is not None:
                    s.argtypes, s.restype, g.restype = [ctypes.c_int], None, ctypes.c_int
                    return s, g
    return None, None


# ---- training ------------------------------------------------------------------------------------
@dataclass
class DemoResult:
    accuracy: float
    losses: list = field(default_factory=list)
    compile_seconds: float = 0.0
    compiled_step_ms: float = 0.0
    eager_step_ms: float = 0.0
    compiled_fwd_bwd_ms: float = 0.0
    eager_fwd_bwd_ms: float = 0.0


class Progress:
    """One line rewritten in place (``\\r``) on a terminal, a line every tenth of the run otherwise."""

    def __init__(self, total: int, out, tty: bool | None = None):
        self.total, self.out = total, out
        self.tty = out.isatty() if tty is None else tty
        self.every = max(1, total // 10)
        self.last = 0.0

    def update(self, step: int, loss: float, acc: float) -> None:
        if self.tty:   # at most ~20 redraws a second
            now = time.perf_counter()
            if step not in (1, self.total) and now - self.last < 0.05:
                return
            self.last = now
        text = f"step {step:>{len(str(self.total))}}/{self.total}  loss {loss:.4f}  accuracy {acc * 100:5.1f}%"
        if self.tty:
            width = 24
            done = int(width * step / self.total)
            self.out.write(f"\r[{'#' * done}{'.' * (width - done)}] {text}")
            if step == self.total:
                self.out.write("\n")
            self.out.flush()
        elif step % self.every == 0 or step == self.total or step == 1:
            self.out.write(text + "\n")
            self.out.flush()


def _train_step(loss_fn, opt, x, y, params):
    opt.zero_grad()
    loss, correct = loss_fn(x, y, *params)
    loss.backward()
    t = time.perf_counter()
    opt.step()
    return loss, correct, t


def _eager_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    t = time.perf_counter()
    opt.step()
    return loss, t


def _bench(step, n: int) -> tuple[float, float]:
    """(ms per whole step, ms per forward+backward) over ``n`` steps."""
    total = fwd_bwd = 0.0
    for _ in range(n):
        t0 = time.perf_counter()
        t_opt = step()
        t1 = time.perf_counter()
        total += t1 - t0
        fwd_bwd += t_opt - t0
    return total / n * 1e3, fwd_bwd / n * 1e3


def run(steps: int = 500, hidden: int = 64, seed: int = 0, lr: float = 0.02, points: int = 200,
        bench_steps: int = 50, blas: int = 1, plot: str | None = None, out=None, err=None,
        tty: bool | None = None) -> DemoResult:
    out = out or sys.stdout
    err = err or sys.stderr
    X, Y = two_spirals(points, seed)
    gradc.manual_seed(seed)
    model = make_model(hidden)
    init_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    params = list(model.parameters())
    x, y = gradc.tensor(X), gradc.tensor(Y)
    n_params = sum(p.numel() for p in params)
    out.write(f"gradc demo: two spirals, {len(Y)} points; MLP 2-{hidden}-{hidden}-2 ({n_params} parameters); "
              f"Adam lr={lr}; {steps} steps\n")
    out.flush()
    result = DemoResult(0.0)
    with blas_threads(blas):
        loss_fn = make_loss(model)
        opt = gradc.optim.Adam(params, lr=lr)
        progress = Progress(steps, out, tty)
        t0 = time.perf_counter()
        for step in range(1, steps + 1):
            loss, correct, _ = _train_step(loss_fn, opt, x, y, params)
            if step == 1:
                result.compile_seconds = time.perf_counter() - t0
            value = loss.item()
            result.losses.append(value)
            progress.update(step, value, correct.item() / len(Y))
        train_seconds = time.perf_counter() - t0
        with gradc.no_grad():
            pred = model(x).argmax(1)
        n_correct = int((pred == y).sum().item())
        result.accuracy = n_correct / len(Y)
        if bench_steps > 0:
            _benchmark(result, hidden, init_state, lr, x, y, bench_steps)
    out.write(f"final training accuracy: {result.accuracy * 100:.1f}% ({n_correct}/{len(Y)})\n")
    out.write(f"compile time: {result.compile_seconds:.2f} s (trace, autodiff, passes, fuse, LLVM; first step); "
              f"training took {train_seconds:.1f} s\n")
    if bench_steps > 0:
        out.write(f"speed over {bench_steps} steps each: compiled {result.compiled_step_ms:.2f} ms/step, "
                  f"eager {result.eager_step_ms:.2f} ms/step "
                  f"({_ratio(result.eager_step_ms, result.compiled_step_ms)}; Adam runs eagerly in both)\n")
        out.write(f"  forward+backward only: compiled {result.compiled_fwd_bwd_ms:.2f} ms, "
                  f"eager {result.eager_fwd_bwd_ms:.2f} ms "
                  f"({_ratio(result.eager_fwd_bwd_ms, result.compiled_fwd_bwd_ms)})\n")
    if plot:
        _plot(plot, result, model, X, Y, out, err)
    out.flush()
    return result


def _ratio(eager: float, compiled: float) -> str:
    if compiled <= 0:
        return "n/a"
    r = eager / compiled
    if 0.95 <= r <= 1.05:
        return "about the same"
    return f"compiled {r:.1f}x faster" if r >= 1 else f"compiled {1 / r:.1f}x slower"


def _benchmark(result: DemoResult, hidden: int, init_state: dict, lr: float, x, y, n: int) -> None:
    """Time ``n`` compiled and ``n`` eager training steps from the same initial weights."""
    runs = {}
    for mode in ("compiled", "eager"):
        model = make_model(hidden)
        model.load_state_dict({k: v.clone() for k, v in init_state.items()})
        params = list(model.parameters())
        opt = gradc.optim.Adam(params, lr=lr)
        if mode == "compiled":
            loss_fn = make_loss(model)
            step = lambda: _train_step(loss_fn, opt, x, y, params)[2]  # noqa: E731
        else:
            step = lambda: _eager_step(model, opt, x, y)[1]  # noqa: E731
        step()   # warm up (and compile)
        runs[mode] = _bench(step, n)
    result.compiled_step_ms, result.compiled_fwd_bwd_ms = runs["compiled"]
    result.eager_step_ms, result.eager_fwd_bwd_ms = runs["eager"]


def _plot(path: str, result: DemoResult, model, X, Y, out, err) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        err.write(f"gradc demo: matplotlib is not installed, so no plot was drawn "
                  f"(pip install matplotlib to get {path})\n")
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    ax1.plot(np.arange(1, len(result.losses) + 1), result.losses)
    ax1.set_yscale("log")
    ax1.set_xlabel("step")
    ax1.set_ylabel("cross-entropy loss")
    ax1.set_title("training loss")
    lo, hi = X.min(0) - 0.15, X.max(0) + 0.15
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 200))
    grid = np.stack([gx.ravel(), gy.ravel()], 1).astype(np.float32)
    with gradc.no_grad():
        logits = model(gradc.tensor(grid)).numpy()
    prob = np.exp(logits[:, 1] - np.logaddexp(logits[:, 0], logits[:, 1])).reshape(gx.shape)
    ax2.contourf(gx, gy, prob, levels=20, cmap="RdBu_r", alpha=0.6)
    ax2.contour(gx, gy, prob, levels=[0.5], colors="k", linewidths=1)
    ax2.scatter(X[:, 0], X[:, 1], c=Y, cmap="RdBu_r", s=8, edgecolors="k", linewidths=0.3)
    ax2.set_title(f"decision boundary (accuracy {result.accuracy * 100:.1f}%)")
    ax2.set_aspect("equal")
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        err.write(f"gradc demo: cannot write '{path}': {e.strerror or e}\n")
    else:
        out.write(f"plot written to {path}\n")
    finally:
        plt.close(fig)

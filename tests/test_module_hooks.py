"""nn.Module hooks against PyTorch 2.13: forward pre-hooks and hooks (prepend, with_kwargs,
always_call), full backward hooks and pre-hooks (what they see, what their results replace,
their errors), the deprecated register_backward_hook, and removal through the handles."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradc

torch = pytest.importorskip("torch")


def _shapes(values):
    return tuple(None if v is None else tuple(v.shape) for v in values)


def _scenario(m, body):
    """Run ``body`` (source) with ``m`` as the library; the log it appends to, the leaves'
    gradients and the error it raised (type name and message)."""
    nn = m.nn
    ns = {"m": m, "nn": nn, "log": [], "shapes": _shapes}

    class Two(nn.Module):
        """(x, scale, y) -> (x * scale + y, x.sum()): a non-tensor argument and two results."""

        def forward(self, x, scale, y):
            return x * scale + y, x.sum()

    class Affine(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(m.tensor([1.0, 2.0, 3.0]))

        def forward(self, x, bias=0.0):
            return x * self.w + bias

    ns.update(Two=Two, Affine=Affine, x=m.tensor([1.0, -2.0, 0.5], requires_grad=True),
              y=m.tensor([0.5, 0.5, 0.5], requires_grad=True))
    err = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(body, ns)
        except Exception as e:       # noqa: BLE001
            err = (type(e).__name__, str(e))
    grads = [None if ns[k].grad is None else ns[k].grad.tolist() for k in ("x", "y")]
    log = [tuple(np.round(np.asarray(v.detach().numpy(), dtype=float), 6).tolist() if hasattr(v, "detach") else v
                 for v in entry) if isinstance(entry, tuple) else entry for entry in ns["log"]]
    return log, grads, err


SCENARIOS = {
    "full-hook-sees-grads": """
mod = Two()
mod.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", shapes(gi), shapes(go))))
a, b = mod(x, 2.0, y)
(a.sum() + b * 3).backward()
""",
    "full-hook-replaces-grad-input": """
mod = Two()
mod.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10, None, gi[2]))
a, b = mod(x, 2.0, y)
(a.sum() + b).backward()
""",
    "pre-hook-replaces-grad-output": """
mod = Two()
mod.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0, go[1]))
mod.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", shapes(gi), [float(g.sum()) for g in go])))
a, b = mod(x, 2.0, y)
(a.sum() + b).backward()
""",
    "pre-hook-wrong-count": """
mod = Two()
mod.register_full_backward_pre_hook(lambda mod, go: (go[0],))
a, b = mod(x, 2.0, y)
(a.sum() + b).backward()
""",
    "hook-wrong-count": """
mod = Two()
mod.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
a, b = mod(x, 2.0, y)
(a.sum() + b).backward()
""",
    "no-input-requires-grad": """
mod = Affine()
mod.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", gi, shapes(go))))
mod(x.detach()).sum().backward()
log.append(("w", mod.w.grad.tolist()))
""",
    "no-input-requires-grad-returns-values": """
mod = Affine()
mod.register_full_backward_hook(lambda mod, gi, go: (go[0],))
mod(x.detach()).sum().backward()
""",
    "sequential-order-and-prepend": """
net = nn.Sequential(Affine(), nn.Tanh(), Affine())
for i, sub in enumerate(net):
    sub.register_full_backward_hook(lambda mod, gi, go, i=i: log.append(("bwd", i)))
    sub.register_full_backward_pre_hook(lambda mod, go, i=i: log.append(("pre", i)))
net[0].register_full_backward_hook(lambda mod, gi, go: log.append(("first", 0)), prepend=True)
net(x).sum().backward()
""",
    "remove": """
mod = Affine()
h = mod.register_full_backward_hook(lambda mod, gi, go: log.append("hook"))
p = mod.register_full_backward_pre_hook(lambda mod, go: log.append("pre"))
mod(x).sum().backward()
h.remove(); p.remove()
mod(x).sum().backward()
log.append(type(mod(x).grad_fn).__name__)
""",
    "grad-fn-names": """
mod = Affine()
mod.register_full_backward_hook(lambda mod, gi, go: None)
out = mod(x)
log.append(type(out.grad_fn).__name__)
log.append(out._is_view())
""",
    "mixing-hook-kinds": """
mod = Affine()
mod.register_backward_hook(lambda mod, gi, go: None)
mod.register_full_backward_hook(lambda mod, gi, go: None)
""",
    "legacy-backward-hook": """
mod = Affine()
mod.register_backward_hook(lambda mod, gi, go: log.append(("legacy", shapes(gi), shapes(go))))
mod(x).sum().backward()
""",
    "forward-hooks-kwargs-prepend": """
mod = Affine()
mod.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"bias": 1.0}), with_kwargs=True)
mod.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", kwargs["bias"])), with_kwargs=True)
mod.register_forward_hook(lambda mod, args, out: log.append(("first",)), prepend=True)
log.append(("out", mod(x).tolist()))
""",
    "forward-pre-hook-bad-kwargs-result": """
mod = Affine()
mod.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
mod(x)
""",
    "always-call": """
class Bad(nn.Module):
    def forward(self, x):
        raise ValueError("boom")
mod = Bad()
mod.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
mod.register_forward_hook(lambda mod, args, out: log.append(("never",)))
mod(x)
""",
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_module_hooks_match_pytorch(name):
    want = _scenario(torch, SCENARIOS[name])
    got = _scenario(gradc, SCENARIOS[name])
    assert (got[0], got[2]) == (want[0], want[2])
    for g, w in zip(got[1], want[1]):
        assert (g is None) == (w is None) and (w is None or np.allclose(g, w, rtol=1e-5, atol=1e-6))


def test_backward_hooks_under_compile_are_a_trace_error():
    from gradc.ir.errors import TraceError
    mod = gradc.nn.Linear(3, 2)
    mod.register_full_backward_hook(lambda mod, gi, go: None)
    with pytest.raises(TraceError, match="backward hooks of Linear"):
        gradc.compile(lambda x: mod(x).sum())(gradc.ones(4, 3, requires_grad=True))

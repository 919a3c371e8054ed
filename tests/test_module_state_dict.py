"""nn.Module state_dict and load_state_dict against PyTorch 2.13: keys and order, keep_vars, prefix,
extra state, state_dict and load_state_dict hooks, strict and lenient loading (the keys reported
either way), assign=True, 0-d entries from one-element tensors, get_buffer and set_submodule."""
from __future__ import annotations

import warnings

import pytest

import gradc

torch = pytest.importorskip("torch")

SCENARIO = 'class Extra(nn.Module):\n    def __init__(self):\n        super().__init__(); self.lin = nn.Linear(2, 2); self.count = 3\n    def get_extra_state(self): return {"count": self.count}\n    def set_extra_state(self, s): self.count = s["count"]\nnet = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), Extra())\nshow("keys", lambda: list(net.state_dict()))\nshow("keep_vars", lambda: [type(v).__name__ for v in net.state_dict(keep_vars=True).values()][:2])\nshow("prefix", lambda: list(net.state_dict(prefix="m."))[:2])\nshow("positional", lambda: list(net.state_dict(None, "p."))[:1])\nlog = []\nnet[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix)))\nnet[2].register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append(("post", prefix, len(sd))))\nsd = net.state_dict(); show("hooks", lambda: log)\nsd2 = {k: (v.clone() if hasattr(v, "clone") else {"count": 9}) for k, v in sd.items()}\nnet2 = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), Extra())\nshow("load", lambda: (net2.load_state_dict(sd2), net2[2].count))\nbad = dict(sd2); bad.pop("0.bias"); bad["1.extra"] = torch.ones(1); bad["zz.w"] = torch.ones(1); bad["2.lin.weight"] = torch.ones(3, 3)\nshow("strict", lambda: net2.load_state_dict(bad))\nshow("lenient", lambda: net2.load_state_dict({k: v for k, v in bad.items() if k != "2.lin.weight"}, strict=False))\nnoextra = {k: v for k, v in sd2.items() if not k.endswith("_extra_state")}\nshow("missing extra", lambda: net2.load_state_dict(noextra))\nshow("unexpected extra", lambda: nn.Linear(2, 3).load_state_dict({"weight": torch.ones(3, 2), "bias": torch.ones(3), "_extra_state": 1}))\nshow("non-tensor", lambda: nn.Linear(2, 3).load_state_dict({"weight": [1], "bias": torch.ones(3)}))\nl = nn.Linear(2, 3); w = torch.ones(3, 2)\nshow("assign", lambda: (l.load_state_dict({"weight": w, "bias": torch.zeros(3)}, assign=True), l.weight.data_ptr() == w.data_ptr(), type(l.weight).__name__, l.weight.requires_grad))\nlg = []\nl.register_load_state_dict_pre_hook(lambda mod, sd, prefix, meta, strict, mk, uk, em: lg.append(("pre", prefix, strict)))\nl.register_load_state_dict_post_hook(lambda mod, keys: lg.append(("post", list(keys.missing_keys))))\nl.load_state_dict({"weight": w}, strict=False); show("load hooks", lambda: lg)\nshow("get_buffer", lambda: tuple(net.get_buffer("1.running_mean").shape))\nshow("get_buffer bad", lambda: net.get_buffer("1.weight"))\nnet.set_submodule("2.lin", nn.Linear(2, 5)); show("set_submodule", lambda: net[2].lin.out_features)\nshow("set_submodule bad", lambda: net.set_submodule("0.weight", nn.Linear(1, 1)))\nshow("0-d from 1", lambda: nn.BatchNorm1d(3).load_state_dict({**nn.BatchNorm1d(3).state_dict(), "num_batches_tracked": torch.tensor([5])}))\nshow("not dict", lambda: nn.Linear(1, 1).load_state_dict([1]))\n'


def _run(m):
    lines = []

    def show(label, f):
        try:
            lines.append((label, repr(f())))
        except Exception as e:      # noqa: BLE001
            lines.append((label, "ERR", type(e).__name__, str(e)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(SCENARIO, {"torch": m, "nn": m.nn, "show": show})
    return lines


def test_state_dict_and_load_state_dict_match_pytorch():
    want, got = _run(torch), _run(gradc)
    assert [w[0] for w in want] == [g[0] for g in got]
    for w, g in zip(want, got):
        assert g == w


def test_module_casts_and_empty_copies_match_pytorch():
    for m in (torch, gradc):
        lin = m.nn.Linear(2, 3)
        assert lin.half().weight.dtype == m.float16 and lin.type(m.float64).bias.dtype == m.float64
        assert lin.share_memory() is lin and lin.to_empty(device="cpu").weight.shape == (3, 2)
        bn = m.nn.BatchNorm1d(2).half()
        assert bn.num_batches_tracked.dtype == m.int64 and bn.running_var.dtype == m.float16
        assert not m.nn.Module.call_super_init and not m.nn.Module.dump_patches

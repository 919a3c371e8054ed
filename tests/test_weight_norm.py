"""nn.utils.weight_norm/remove_weight_norm (hooks), nn.utils.parametrize and
parametrizations.weight_norm against PyTorch: parameter names, state_dict keys, reprs, class
names, values and gradients, errors; and a compiled forward through a parametrized weight."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradc

SCRIPTS = {
    "hooks": '''
import sys, warnings
torch = __import__(sys.argv[1])
warnings.simplefilter("ignore")
import numpy as np
rng = np.random.default_rng(0)
W = rng.standard_normal((2, 3)); B = rng.standard_normal(2); X = rng.standard_normal((4, 3))
lin = torch.nn.Linear(3, 2).double()
with torch.no_grad():
    lin.weight.copy_(torch.tensor(W)); lin.bias.copy_(torch.tensor(B))
torch.nn.utils.weight_norm(lin)
print([n for n, _ in lin.named_parameters()], list(lin.state_dict().keys()), tuple(lin.weight_g.shape),
      type(lin.weight.grad_fn).__name__)
x = torch.tensor(X)
y = lin(x); (y ** 2).sum().backward()
print(np.round(y.detach().numpy(), 8).tolist(), np.round(lin.weight_g.grad.numpy(), 8).tolist(),
      np.round(lin.weight_v.grad.numpy(), 8).tolist())
with torch.no_grad():
    lin.weight_g.mul_(2)
print(np.round(lin(x).detach().numpy(), 8).tolist())
torch.nn.utils.remove_weight_norm(lin)
print([n for n, _ in lin.named_parameters()], np.round(lin.weight.detach().numpy(), 8).tolist())
for f in [lambda: torch.nn.utils.remove_weight_norm(lin),
          lambda: torch.nn.utils.weight_norm(torch.nn.utils.weight_norm(torch.nn.Conv1d(2, 4, 3), dim=1))]:
    try: f()
    except Exception as e: print(type(e).__name__, e)
print(tuple(torch.nn.utils.weight_norm(torch.nn.Conv1d(2, 4, 3), dim=1).weight_g.shape),
      tuple(torch.nn.utils.weight_norm(torch.nn.Linear(3, 2), dim=None).weight_g.shape))
''',
    "parametrize": '''
import sys, warnings
torch = __import__(sys.argv[1])
warnings.simplefilter("ignore")
import numpy as np
parametrize = torch.nn.utils.parametrize
rng = np.random.default_rng(0)
W = rng.standard_normal((2, 3)); B = rng.standard_normal(2); X = rng.standard_normal((4, 3))
lin = torch.nn.Linear(3, 2).double()
with torch.no_grad():
    lin.weight.copy_(torch.tensor(W)); lin.bias.copy_(torch.tensor(B))
torch.nn.utils.parametrizations.weight_norm(lin)
print(lin); print(list(lin.state_dict().keys()), [n for n, _ in lin.named_parameters()], type(lin).__name__)
print(tuple(lin.parametrizations.weight.original0.shape), type(lin.weight.grad_fn).__name__,
      parametrize.is_parametrized(lin), parametrize.is_parametrized(lin, "bias"))
x = torch.tensor(X)
y = lin(x); (y ** 2).sum().backward()
print(np.round(y.detach().numpy(), 8).tolist(), np.round(lin.parametrizations.weight.original0.grad.numpy(), 8).tolist(),
      np.round(lin.parametrizations.weight.original1.grad.numpy(), 8).tolist())
class Sym(torch.nn.Module):
    def forward(self, X): return X.triu() + X.triu(1).transpose(-1, -2)
m = torch.nn.Linear(3, 3).double()
with torch.no_grad(): m.weight.copy_(torch.tensor(np.arange(9.).reshape(3, 3)))
parametrize.register_parametrization(m, "weight", Sym())
print(m); print(list(m.state_dict().keys()), type(m.weight.grad_fn).__name__, m.weight.tolist())
parametrize.remove_parametrizations(m, "weight")
print(m, [n for n, _ in m.named_parameters()], type(m).__name__, m.weight.tolist())
try: parametrize.remove_parametrizations(m, "weight")
except Exception as e: print(type(e).__name__, e)
parametrize.remove_parametrizations(lin, "weight")
print(lin, type(lin).__name__, np.round(lin.weight.detach().numpy(), 8).tolist())
''',
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_same_output_as_pytorch(name, tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "script.py"
    script.write_text(SCRIPTS[name])
    outputs = [subprocess.run([sys.executable, str(script), lib], capture_output=True, text=True,
                              cwd=Path(__file__).parent) for lib in ("torch", "gradc")]
    assert outputs[0].returncode == 0, outputs[0].stderr
    assert outputs[1].returncode == 0, outputs[1].stderr
    assert outputs[1].stdout == outputs[0].stdout


def test_parametrized_weight_compiles(compiled_vs_eager):
    lin = gradc.nn.Linear(3, 2).double()
    gradc.nn.utils.parametrizations.weight_norm(lin)
    compiled_vs_eager(lambda x: (lin(x) ** 2).sum(), np.arange(12.0).reshape(4, 3) / 7)

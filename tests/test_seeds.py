"""Replay the seed transcripts (tests/seeds/*.txt, Jupyter sessions of PyTorch) with ``import gradc as torch``.

Every cell of every transcript is listed below with its code copied verbatim and its expected
output as PyTorch 2.13 prints it (the transcripts come from several PyTorch releases; where an
old release printed something else, the expectation is the modern text and a comment says so).
Cells run in document order in one namespace per transcript, like a notebook: stdout is captured
and the value of a trailing expression is displayed the way IPython displays it.

Expectation kinds:
  * ``out``: exact text.  ``{@EXPR}`` stands for ``hex(id(EXPR))`` and ``{id:EXPR}`` for
    ``id(EXPR)``, evaluated in the namespace after the cell (object addresses).
  * ``error``: the cell must raise RuntimeError with exactly this message; ``out`` is what it
    printed before raising.
  * ``warns``: how many "non-leaf .grad" UserWarnings the cell must emit.
  * ``check``: for cells that print random values, a function that checks the printed format
    and the numeric relations (e.g. x.grad == 1024 after ten doublings).

The transcripts themselves are kept verbatim in tests/seeds/; ``test_cells_cover_transcript``
fails if a cell is missing, reordered or its code differs from the transcript.
When PyTorch is installed, every expectation is also checked against real PyTorch, so the
expected texts are known to be what PyTorch prints.
"""
from __future__ import annotations

import ast
import contextlib
import io
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import gradc

SEED_DIR = Path(__file__).parent / "seeds"
RNG_SEED = 0   # each transcript starts from torch.manual_seed(RNG_SEED)

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward.")
IMPLICIT = "grad can be implicitly created only for scalar outputs"
NONLEAF_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
    "you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


def version_error(what: str, version: int = 1) -> str:
    """PyTorch 2.13's saved-tensor version error ('output 0 of Exp': the node name without 'Backward0')."""
    return ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"{what} is at version {version}; expected version {version - 1} instead. Hint: enable anomaly "
            "detection to find the operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")


# ---- helpers for cells that print random values ---------------------------------------------
_NUM = re.compile(r"(?<![\w.])-?(?:\d+\.?\d*(?:e[+-]\d+)?|inf|nan)(?![\w])")


def skeleton(text: str) -> str:
    """The printed text with every number replaced by N and padding collapsed."""
    s = _NUM.sub("N", text)
    s = re.sub(r" +", " ", s)
    return re.sub(r"([\[(]) ", r"\1", s)


def numbers(text: str) -> list:
    return [float(m) for m in _NUM.findall(text)]


def values(t) -> list:
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def assert_printed(line: str, expected_values, skel: str):
    """``line`` prints the given values (to print precision) in the given format."""
    assert skeleton(line) == skel, f"format: {line!r}"
    got, want = numbers(re.sub(r"device='[^']*'", "", line)), list(expected_values)
    assert len(got) == len(want), (line, want)
    for g, w in zip(got, want):
        assert abs(g - w) <= 1e-4 * (1 + abs(w)), (line, want)


def doubling_check(ns, out):
    """``y = x * 2`` then ``y = y * 2`` while ``y.data.norm() < 1000``: y == x * 2**k for the smallest k."""
    x, y = ns["x"], ns["y"]
    lines = out.split("\n")
    assert len(lines) == 2, out
    assert_printed(lines[0], values(x), "tensor([N, N, N], requires_grad=True)")
    assert_printed(lines[1], values(y), "tensor([N, N, N], grad_fn=<MulBackward0>)")
    k = _doublings(ns)
    assert k >= 1 and float(y.detach().norm()) >= 1000
    assert k == 1 or float((y.detach() / 2).norm()) < 1000
    assert values(y) == [v * 2 ** k for v in values(x)]


def _doublings(ns) -> int:
    x, y = values(ns["x"]), values(ns["y"])
    ratios = {round(b / a) for a, b in zip(x, y) if a != 0}
    assert len(ratios) == 1, (x, y)
    k = int(np.log2(ratios.pop()))
    return k


def display_check(name, skel):
    def check(ns, out):
        assert_printed(out, values(ns[name]), skel)
    return check


def grad_is_power_of_two(ns, out):
    k = _doublings(ns)
    v = 2 ** k
    assert out == f"tensor([{v}., {v}., {v}.])"
    assert values(ns["x"].grad) == [float(v)] * 3


def weighted_grad_check(ns, out):
    k = _doublings(ns)
    w = [1.0, 0.1, 0.001]
    want = [float(np.float32(wi)) * 2 ** k for wi in w]
    assert values(ns["x"].grad) == want
    assert_printed(out, want, "tensor([N, N, N])")


def sum_display_check(ns, out):
    z, y = ns["z"], ns["y"]
    assert abs(float(z.detach()) - sum(values(y))) <= 1e-3 * (1 + abs(float(z.detach())))
    assert_printed(out, [float(z.detach())], "tensor(N, grad_fn=<SumBackward0>)")


def mean_of_squares_check(ns, out):
    """002 In [9]: z = mean(2 (x+2)^2), so dz/dx = 4 (x+2) / 3."""
    x = values(ns["x"])
    lines = out.split("\n")
    assert len(lines) == 5, out
    y = [v + 2 for v in x]
    z = [2 * v * v for v in y]
    assert_printed(lines[0], x, "tensor([N, N, N], requires_grad=True)")
    assert_printed(lines[1], y, "tensor([N, N, N], grad_fn=<AddBackward0>)")
    assert_printed(lines[2], z, "tensor([N, N, N], grad_fn=<MulBackward0>)")
    assert_printed(lines[3], [sum(z) / 3], "tensor(N, grad_fn=<MeanBackward0>)")
    grad = [4 * v / 3 for v in y]
    assert_printed(lines[4], grad, "tensor([N, N, N])")
    assert np.allclose(values(ns["x"].grad), grad, rtol=1e-5)


def vector_backward_check(ns, out):
    """002 In [12]: z = 2 (x+2)^2 and z.backward(v), so x.grad = 4 (x+2) v.

    The transcript shows a stray 'None' line that no print in the cell produces (the notebook's
    code was edited after it ran); PyTorch 2.13 prints four lines."""
    x = values(ns["x"])
    lines = out.split("\n")
    assert len(lines) == 4, out
    y = [v + 2 for v in x]
    assert_printed(lines[0], x, "tensor([N, N, N], requires_grad=True)")
    assert_printed(lines[1], y, "tensor([N, N, N], grad_fn=<AddBackward0>)")
    assert_printed(lines[2], [2 * v * v for v in y], "tensor([N, N, N], grad_fn=<MulBackward0>)")
    grad = [4 * a * float(np.float32(b)) for a, b in zip(y, [0.1, 1.0, 0.001])]
    assert_printed(lines[3], grad, "tensor([N, N, N])")
    assert np.allclose(values(ns["x"].grad), grad, rtol=1e-5)


def requires_grad_off_check(ns, out):
    x = values(ns["x"])
    lines = out.split("\n")
    assert len(lines) == 2, out
    assert_printed(lines[0], x, "tensor([N, N, N], requires_grad=True)")
    assert_printed(lines[1], x, "tensor([N, N, N])")
    assert lines[1] == lines[0][:-len(", requires_grad=True)")] + ")"
    assert ns["x"].requires_grad is False


def detach_check(ns, out):
    x = values(ns["x"])
    lines = out.split("\n")
    assert len(lines) == 3, out
    assert_printed(lines[0], x, "tensor([N, N, N], requires_grad=True)")
    assert lines[1] == lines[0]
    assert_printed(lines[2], x, "tensor([N, N, N])")
    assert ns["y"].requires_grad is False and ns["x"].requires_grad is True


def no_grad_check(ns, out):
    x = values(ns["x"])
    lines = out.split("\n")
    assert len(lines) == 3, out
    assert_printed(lines[0], x, "tensor([N, N, N], requires_grad=True)")
    assert_printed(lines[1], [v + 2 for v in x], "tensor([N, N, N], grad_fn=<AddBackward0>)")
    assert_printed(lines[2], [v + 2 for v in x], "tensor([N, N, N])")
    assert ns["y"].grad_fn is None and not ns["y"].requires_grad


def ids_check(ns, out):
    """003 In [27]: a.exp() is a new object, so the two ids differ; the second is the new a's."""
    lines = out.split("\n")
    assert len(lines) == 2 and all(re.fullmatch(r"\d+", s) for s in lines), out
    assert lines[0] != lines[1]
    assert int(lines[1]) == id(ns["a"])


def implicit_grad_plus_check(ns, out):
    """004 In [40]: x.grad held ones (In [23]); y = x + 2, so backward(gradient) adds gradient."""
    lines = out.split("\n", 1)
    assert lines[0] == "torch.Size([2, 2])"
    want = [1 + g for g in values(ns["gradient"])]
    assert_printed(lines[1], want, "tensor([[N, N],\n [N, N]])")
    assert values(ns["x"].grad) == [float(np.float32(1) + np.float32(g)) for g in values(ns["gradient"])]


def cuda_print_check(ns, out):
    assert_printed(out, values(ns["x"].detach().cpu()), "tensor([N, N], device='cuda:N', requires_grad=True)")
    assert "device='cuda:0'" in out


def cuda_tolist_check(ns, out):
    assert out == repr(ns["x"].detach().cpu().tolist())
    assert len(ns["x"].tolist()) == 2


# ---- the cells ------------------------------------------------------------------------------
@dataclass
class C:
    label: str
    code: str
    out: str = ""
    error: str | None = None
    warns: int = 0
    check: Callable | None = None
    cuda: bool = False
    note: str = ""


@dataclass
class Transcript:
    file: str
    cells: list
    namespace: dict = field(default_factory=dict)


T000 = Transcript("000_b7dc8d125dfba7d4.txt", [
    C('In [1]', """\
import torch"""),
    C('In [2]', """\
x = torch.ones(1)
x.requires_grad""", "False"),
    C('In [3]', """\
y = torch.ones(1)
y.requires_grad""", "False"),
    C('In [4]', """\
z = x + y"""),
    C('In [5]', """\
z.requires_grad""", "False"),
    C('In [6]', """\
x.requires_grad_()
x.requires_grad""", "True"),
    C('In [7]', """\
z = x + y"""),
    C('In [8]', """\
z.requires_grad""", "True"),
    C('In [9]', """\
y = torch.tensor([[1, 2], [3, 4]], dtype=torch.float32, requires_grad=True)
y""", """\
tensor([[1., 2.],
        [3., 4.]], requires_grad=True)"""),
    C('In [12]', """\
z = 2*y + 1
z""", """\
tensor([[3., 5.],
        [7., 9.]], grad_fn=<AddBackward0>)"""),
    C('In [13]', """\
print("y.requires_grad :", y.requires_grad)
print("z.requires_grad :", z.requires_grad)

print("")

print("y.grad :", y.grad)
print("z.grad :", z.grad)

print("")

print("y.grad_fn :", y.grad_fn)
print("z.grad_fn :", z.grad_fn)""", """\
y.requires_grad : True
z.requires_grad : True

y.grad : None
z.grad : None

y.grad_fn : None
z.grad_fn : <AddBackward0 object at {@z.grad_fn}>""", warns=1),
    C('In [14]', """\
gz = z.grad_fn
print("z.grad_fn :", gz)
print("Where is z.grad_fn?", id(gz))
print("Where is z.grad_fn in hex?", hex(id(gz)))""", """\
z.grad_fn : <AddBackward0 object at {@gz}>
Where is z.grad_fn? {id:gz}
Where is z.grad_fn in hex? {@gz}"""),
    C('In [15]', """\
# next_function을 통해 다음 backward를 파악할 수 있음.
z.grad_fn.next_functions""", "((<MulBackward0 at {@z.grad_fn.next_functions[0][0]}>, 0), (None, 0))",
      note="IPython shows objects without their own __repr__ as <Name at 0x...>"),
    C('In [16]', """\
# grad can be implicitly created only for scalar outputs
z.backward()""", error=IMPLICIT),
    C('In [17]', """\
out = z.sum()
out""", "tensor(24., grad_fn=<SumBackward0>)"),
    C('In [18]', """\
print("y.requires_grad :", y.requires_grad)
print("z.requires_grad :", z.requires_grad)
print("out.requires_grad :", out.requires_grad)

print("")

print("y.grad :", y.grad)
print("z.grad :", z.grad)
print("out.grad :", out.grad)

print("")

print("y.grad_fn :", y.grad_fn)
print("z.grad_fn :", z.grad_fn)
print("out.grad_fn :", out.grad_fn)""", """\
y.requires_grad : True
z.requires_grad : True
out.requires_grad : True

y.grad : None
z.grad : None
out.grad : None

y.grad_fn : None
z.grad_fn : <AddBackward0 object at {@z.grad_fn}>
out.grad_fn : <SumBackward0 object at {@out.grad_fn}>""", warns=2),
    C('In [19]', """\
out.backward()"""),
    C('In [20]', """\
print("y.requires_grad :", y.requires_grad)
print("z.requires_grad :", z.requires_grad)
print("out.requires_grad :", out.requires_grad)

print("")

print("y.grad :", y.grad)
print("z.grad :", z.grad)
print("out.grad :", out.grad)

print("")

print("y.grad_fn :", y.grad_fn)
print("z.grad_fn :", z.grad_fn)
print("out.grad_fn :", out.grad_fn)""", """\
y.requires_grad : True
z.requires_grad : True
out.requires_grad : True

y.grad : tensor([[2., 2.],
        [2., 2.]])
z.grad : None
out.grad : None

y.grad_fn : None
z.grad_fn : <AddBackward0 object at {@z.grad_fn}>
out.grad_fn : <SumBackward0 object at {@out.grad_fn}>""", warns=2),
    C('In [21]', """\
# By default, gradients are only retained for leaf variables. non-leaf variables
# gradients are not retained to be inspected later. This was done by design, to save memory.
print("y == leaf? : ", y.is_leaf)
print("z == leaf? : ", z.is_leaf)""", """\
y == leaf? :  True
z == leaf? :  False"""),
    C('In [35]', """\
y = torch.tensor([[1, 2], [3, 4]], dtype=torch.float32, requires_grad=True)
z = 2*y + 1
out = z.sum()
out.backward()
out.backward()""", error=FREED, note="modern wording of the backward-twice error"),
    C('In [36]', """\
y = torch.tensor([[1, 2], [3, 4]], dtype=torch.float32, requires_grad=True)
z = 2*y + 1
out = z.sum()
out.backward(retain_graph=True)
out.backward()"""),
    C('In [37]', """\
y.grad""", """\
tensor([[4., 4.],
        [4., 4.]])"""),
    C('In [22]', """\
# Graph 위에 있는 변수는 바로 numpy로 변환할 수 없음.
z.numpy()""", error="Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    C('In [23]', """\
# 따라서 .detach와 .data 중 하나를 사용해야함.
z.detach().numpy()""", """\
array([[3., 5.],
       [7., 9.]], dtype=float32)"""),
    C('In [24]', """\
# 따라서 .detach와 .data 중 하나를 사용해야함.
z.data.numpy()""", """\
array([[3., 5.],
       [7., 9.]], dtype=float32)"""),
    C('In [25]', """\
a = torch.tensor([1,2,3.], requires_grad = True)
b = a.exp()

# c는 b를 graph에서 떼어내어 require gradient = False
# 허나, 원본 데이터는 공유
c = b.detach()
c.zero_()""", "tensor([0., 0., 0.])"),
    C('In [26]', """\
# c를 초기화하였으므로, 공유된 데이터를 사용하는 b도 초기화
b""", "tensor([0., 0., 0.], grad_fn=<ExpBackward0>)", note="old releases printed ExpBackward"),
    C('In [27]', """\
# exp 함수는 자기 자신이 역전파에 필요
# 허나, 원본 데이터가 수정되었으므로 에러가 나는 것이 맞음
b.sum().backward()""", error=version_error("[torch.FloatTensor [3]], which is output 0 of Exp,"),
      note="PyTorch 2.13 names the node 'Exp' and adds check_nan=False to the hint"),
    C('In [28]', """\
# backward가 진행되지 않았으므로, a의 grad도 없어야 함
a.grad"""),
    C('In [29]', """\
a = torch.tensor([1,2,3.], requires_grad = True)
b = a.exp()

# c를 초기화
c = b.data
c.zero_()""", "tensor([0., 0., 0.])"),
    C('In [30]', """\
# 마찬가지로 b도 초기화
b""", "tensor([0., 0., 0.], grad_fn=<ExpBackward0>)"),
    C('In [31]', """\
# inplace가 일어났음에도 에러가 뜨지 않음(비정상)
b.sum().backward()"""),
    C('In [32]', """\
# 잘못된 결과
a.grad""", "tensor([0., 0., 0.])"),
    C('In [33]', """\
a = torch.tensor([1,2,3.], requires_grad = True)
b = a.exp()

# c를 초기화
c = b.detach().clone()
c.zero_()""", "tensor([0., 0., 0.])"),
    C('In [34]', """\
b""", "tensor([ 2.7183,  7.3891, 20.0855], grad_fn=<ExpBackward0>)"),
])

T001 = Transcript("001_40d2656230378ed1.txt", [
    C('In [1]', """\
import torch"""),
    C('In [2]', """\
x = torch.ones(2, 2, requires_grad=True)"""),
    C('In [3]', """\
print(x)""", """\
tensor([[1., 1.],
        [1., 1.]], requires_grad=True)"""),
    C('In [4]', """\
y = x + 2
print(y)""", """\
tensor([[3., 3.],
        [3., 3.]], grad_fn=<AddBackward0>)"""),
    C('In [5]', """\
print(y.grad_fn)""", "<AddBackward0 object at {@y.grad_fn}>"),
    C('In [8]', """\
x.grad"""),
    C('In [11]', """\
y.backward()""", error=IMPLICIT),
    C('In [12]', """\
z = x.sum()
print(z)
z.backward()""", "tensor(4., grad_fn=<SumBackward0>)"),
    C('In [13]', """\
y.grad""", warns=1, note="modern PyTorch warns on .grad of a non-leaf"),
    C('In [14]', """\
x.grad""", """\
tensor([[1., 1.],
        [1., 1.]])"""),
    C('In [15]', """\
x = torch.ones(2, 2, requires_grad=True)"""),
    C('In [16]', """\
y = x * x * 3
print(y)""", """\
tensor([[3., 3.],
        [3., 3.]], grad_fn=<MulBackward0>)"""),
    C('In [17]', """\
z = y.mean()
print(z)""", "tensor(3., grad_fn=<MeanBackward0>)", note="old releases named the full mean MeanBackward1"),
    C('In [18]', """\
z.backward()"""),
    C('In [21]', """\
y.grad
y""", """\
tensor([[3., 3.],
        [3., 3.]], grad_fn=<MulBackward0>)""", warns=1),
    C('In [22]', """\
x""", """\
tensor([[1., 1.],
        [1., 1.]], requires_grad=True)"""),
    C('In [23]', """\
x.grad # 3*2*a 에다가 mean 이니까 3*2*a / 4 이니까, a = 1이 들어가 3/2""", """\
tensor([[1.5000, 1.5000],
        [1.5000, 1.5000]])"""),
    C('In [24]', """\
x = torch.randn(3, requires_grad=True)
print(x)

y = x * 2
while y.data.norm() < 1000:
    y = y * 2

print(y)""", check=doubling_check),
    C('In [31]', """\
torch.tensor([3.,4.]).norm()""", "tensor(5.)"),
    C('In [33]', """\
z = y.sum()"""),
    C('In [37]', """\
z""", check=sum_display_check),
    C('In [34]', """\
z.backward()"""),
    C('In [36]', """\
y""", check=display_check("y", "tensor([N, N, N], grad_fn=<MulBackward0>)")),
    C('In [35]', """\
y.grad""", warns=1),
    C('In [38]', """\
x.grad""", check=grad_is_power_of_two, note="1024 in the transcript: 2**k for k doublings"),
    C('In [39]', """\
x""", check=display_check("x", "tensor([N, N, N], requires_grad=True)")),
    C('In [40]', """\
1000/1024""", "0.9765625"),
    C('In [43]', """\
z.backward()""", error=FREED),
    C('In [42]', """\
y.backward()""", error=IMPLICIT),
    C('In [44]', """\
y.backward(torch.tensor([1., 0.1, 0.01]))""", error=FREED),
    C('In [45]', """\
x = torch.randn(3, requires_grad=True)
print(x)

y = x * 2
while y.data.norm() < 1000:
    y = y * 2

print(y)""", check=doubling_check),
    C('In [46]', """\
y.backward(torch.tensor([1., 0.1, 0.001]))"""),
    C('In [47]', """\
y.grad""", warns=1),
    C('In [48]', """\
x.grad""", check=weighted_grad_check, note="2048/204.8/2.048 in the transcript"),
    C('In [49]', """\
y""", check=display_check("y", "tensor([N, N, N], grad_fn=<MulBackward0>)")),
    C('In [50]', """\
z = y.sum()"""),
    C('In [51]', """\
z.backward()""", error=FREED),
    C('In [52]', """\
print(x.requires_grad)
print((x ** 2).requires_grad)

with torch.no_grad():
    print((x ** 2).requires_grad)""", "True\nTrue\nFalse"),
])

T002 = Transcript("002_2a709de4a1d708cf.txt", [
    C('In [1]', """\
import torch
import numpy as np"""),
    C('In [9]', """\
# optimization을 위해 gradient를 계산하고 싶은 tensor에는 requires_grad=True를 설정해줘야 함. (default = False)
# pytorch에서 x에 대한 gradient를 tracking하기 위해 x.grad에 gradient를 저장함.
x = torch.randn(3, requires_grad=True)
print(x)

y = x + 2 #
print(y) # grad_fn=<AddBackward0>

z = y * y * 2
print(z) # grad_fn=<MulBackward0>

# vector Jacobian product(= chain rule) to get the gradient of the loss w.r.t. the input x
# so in this case since our z is a scalar, the output of this operation will be a vector of the same shape as x
z = z.mean() # (1, 3)을 (1, 1) = scalar로 만들어주기 위함. (1, 3)이었다면 Error.
print(z) # grad_fn=<MeanBackward0>

z.backward() # dz/dx
print(x.grad)""", check=mean_of_squares_check),
    C('In [12]', """\
# optimization을 위해 gradient를 계산하고 싶은 tensor에는 requires_grad=True를 설정해줘야 함. (default = False)
# pytorch에서 x에 대한 gradient를 tracking하기 위해 x.grad에 gradient를 저장함.
x = torch.randn(3, requires_grad=True)
print(x)

y = x + 2
print(y) # grad_fn=<AddBackward0>

z = y * y * 2
print(z) # grad_fn=<MulBackward0>

# z = z.mean() # (1, 3)

# z와 같은 shape의 tensor를 만들어줌.
v = torch.tensor([0.1, 1.0, 0.001], dtype=torch.float32)

z.backward(v)
print(x.grad)""", check=vector_backward_check),
    C('In [19]', """\
x = torch.randn(3, requires_grad = True)
print(x)

x.requires_grad_(False) # in-place operation
print(x) # requires_grad = True가 이제 보이지 않음""", check=requires_grad_off_check),
    C('In [21]', """\
x = torch.randn(3, requires_grad = True)
print(x)

x.detach() # requires_grad = False인 tensor를 return함.
print(x)

y  = x.detach()
print(y)""", check=detach_check),
    C('In [26]', """\
x = torch.randn(3, requires_grad = True)
print(x)

y = x + 2
print(y)

with torch.no_grad() : # with문 안에서는 gradient를 계산하지 않음.
    y = x + 2
    print(y) # grad_fn=<AddBackward0>이 여기서는 나오지 않음.""", check=no_grad_check),
    C('In [36]', """\
weights = torch.ones(4, requires_grad=True)

# .backward() will accumulate gradients into .grad instead of overwriting
# pytorch에서는 gradient를 더해주는 것이 default임.
# 그래서 정확한 gradient를 얻지 못하게 된다.
for epoch in range(3) :
    model_output = (weights*3).sum()
    model_output.backward()
    print(weights.grad)""", """\
tensor([3., 3., 3., 3.])
tensor([6., 6., 6., 6.])
tensor([9., 9., 9., 9.])"""),
    C('In [37]', """\
weights = torch.ones(4, requires_grad=True)

# 따라서 정확한 gradient를 얻기 위해서는 .backward()를 호출할 때마다 .grad를 0으로 초기화해줘야 함.
for epoch in range(3) :
    model_output = (weights*3).sum()
    model_output.backward()
    print(weights.grad)

    weights.grad.zero_() # gradient를 0으로 초기화해줘야 함.""", """\
tensor([3., 3., 3., 3.])
tensor([3., 3., 3., 3.])
tensor([3., 3., 3., 3.])"""),
])

T003 = Transcript("003_6d8735ed7d63f439.txt", [
    C('In [66]', """\
import torch

x  = torch.randn(2, requires_grad=True, device='cuda')
print(x)""", check=cuda_print_check, cuda=True),
    C('In [67]', """\
x.tolist()""", check=cuda_tolist_check, cuda=True),
    C('In [69]', """\
a = torch.tensor(2.0, requires_grad=True)
b = a.exp()
b""", "tensor(7.3891, grad_fn=<ExpBackward0>)"),
    C('In [54]', """\
inp = torch.ones([2, 2], requires_grad=True)
w1 = torch.tensor(2.0, requires_grad=True)
w2 = torch.tensor(3.0, requires_grad=True)
w3 = torch.tensor(4.0, requires_grad=True)

l1 = inp * w1
l2 = l1 + w2
l3 = l1 * w3
l4 = l2 * l3
loss = l4.mean()"""),
    C('In [55]', """\
print(w1.data, w1.grad, w1.grad_fn)""", "tensor(2.) None None"),
    C('In [57]', """\
print(l1.data, l1.grad, l1.grad_fn)""", """\
tensor([[2., 2.],
        [2., 2.]]) None <MulBackward0 object at {@l1.grad_fn}>""", warns=1),
    C('In [58]', """\
print(loss.data, loss.grad, loss.grad_fn)""", "tensor(40.) None <MeanBackward0 object at {@loss.grad_fn}>",
      warns=1),
    C('In [59]', """\
print(inp.grad)""", "None"),
    C('In [60]', """\
loss.backward()"""),
    C('In [61]', """\
print(w1.grad, w2.grad, w3.grad)""", "tensor(28.) tensor(8.) tensor(10.)"),
    C('In [62]', """\
print(l1.grad, l2.grad, l3.grad, l4.grad, loss.grad)""", "None None None None None", warns=5,
      note="Jupyter shows one warning line per source line; there are five accesses"),
    C('In [63]', """\
print(inp.grad)""", """\
tensor([[14., 14.],
        [14., 14.]])"""),
    C('In [32]', """\
a = torch.ones([2, 2], requires_grad=False)
print(a.is_leaf)""", "True"),
    C('In [22]', """\
input = torch.ones([2, 2], requires_grad=False)
w1 = torch.tensor(2.0, requires_grad=True)
w2 = torch.tensor(3.0, requires_grad=True)
w3 = torch.tensor(4.0, requires_grad=True)

l1 = input * w1
l2 = l1 + w2
l3 = l1 * w3
l4 = l2 * l3
loss = l4.mean()

# 使用 tensor.retain_grad() 保留中间变量的导数
l1.retain_grad()
l4.retain_grad()
loss.retain_grad()

loss.backward()"""),
    C('In [23]', """\
loss.grad""", "tensor(1.)"),
    C('In [24]', """\
l4.grad""", """\
tensor([[0.2500, 0.2500],
        [0.2500, 0.2500]])"""),
    C('In [25]', """\
l1.grad""", """\
tensor([[7., 7.],
        [7., 7.]])"""),
    C('In [26]', """\
input = torch.ones([2, 2], requires_grad=False)
w1 = torch.tensor(2.0, requires_grad=True)
w2 = torch.tensor(3.0, requires_grad=True)
w3 = torch.tensor(4.0, requires_grad=True)

l1 = input * w1
l2 = l1 + w2
l3 = l1 * w3
l4 = l2 * l3
loss = l4.mean()

# 使用 tensor.register_hook
l1.register_hook(lambda grad: print('l1 grad: ', grad))
l4.register_hook(lambda grad: print('l4 grad: ', grad))
loss.register_hook(lambda grad: print('loss grad: ', grad))

loss.backward()

print(loss.grad)""", """\
loss grad:  tensor(1.)
l4 grad:  tensor([[0.2500, 0.2500],
        [0.2500, 0.2500]])
l1 grad:  tensor([[7., 7.],
        [7., 7.]])
None""", warns=1),
    C('In [15]', """\
A = np.array([[1,2,3],[4,5,6]])
result = A + [[2], [3]]
print(result)""", """\
[[3 4 5]
 [7 8 9]]""", note="the notebook imported numpy as np in a cell the transcript does not show"),
    C('In [27]', """\
# 情景 1
a = torch.tensor([3.0, 1.0])
print(id(a))
a = a.exp()
print(id(a))
# 在这个过程中 a.exp() 生成了一个新的对象，然后再让 a
# 指向它的地址，所以这不是个 inplace 操作""", check=ids_check),
    C('In [28]', """\
# 情景 2
a = torch.tensor([3.0, 1.0])
print(id(a))
a[0] = 10
print(id(a), a)
# inplace 操作，内存地址没变""", "{id:a}\n{id:a} tensor([10.,  1.])"),
    C('In [29]', """\
a = torch.tensor([1.0, 3.0], requires_grad=True)
b = a + 2
print(b._version)""", "0"),
    C('In [30]', """\
loss = (b * b).mean()
b[0] = 1000.0
print(b._version)  # 每次检测到 b 发生 inplace 操作时，_version 就会 +1""", "1"),
    C('In [31]', """\
loss.backward()""",
      error=version_error("[torch.FloatTensor [2]], which is output 0 of torch::autograd::CopySlices,"),
      note="PyTorch 2.13 names b's current grad_fn (CopySlices, after b[0] = ...), not AddBackward0"),
    C('In [64]', """\
a = torch.tensor([10., 5., 2., 3.], requires_grad=True)
a.add_(10.)""", error="a leaf Variable that requires grad is being used in an in-place operation."),
], namespace={"np": np})

_DOCSTRING_26 = (
    '"""\n'
    '   In the forward phase, the autograd tape will remember all the operations it executed, \n'
    '   and in the backward phase, it will replay the operations.\n'
    '   \n'
    '   - requires_grad=True -> all computation will be tracked\n'
    '                        -> after computing backward, a gradient w.r.t this tensor is accumulated into .grad\n'
    '   - Function : interconnected and build up an acycle graph, that encodes a complete history of computation\n'
    '                   -> return grad_fn\n'
    '                   \n'
    '   - Derivatives : call .backward() on tensor \n'
    '                   - for scalar no args, others -> put args of grad_args(ex, output values)\n'
    '"""')
_DOCSTRING_NONE = (
    '"""\n'
    '    By default, gradient computation flushes all the internal buffers contained in the graph,\n'
    '    so if you even want to do the backward on some part of the graph twice,\n'
    '    you need to pass in retain_variables = True during the first pass.\n'
    '    \n'
    '    To reduce memory usage, during the .backward() call, all the intermediary results are deleted\n'
    '    when they are not needed anymore. Hence if you try to call .backward() again, \n'
    '    the intermediary results don’t exist and the backward pass cannot be performed \n'
    '    (and you get the error you see).\n'
    '    You can call .backward(retain_graph=True) to make a backward pass that will\n'
    '    not delete intermediary results, and so you will be able to call .backward() again.\n'
    '    All but the last call to backward should have the retain_graph=True option.\\\n'
    '"""')

T004 = Transcript("004_ad422d25ec9974e1.txt", [
    C('In [26]', _DOCSTRING_26, (
        r"'\n   In the forward phase, the autograd tape will remember all the operations it executed, \n   and in "
        r"the backward phase, it will replay the operations.\n   \n   - requires_grad=True -> all computation will"
        r" be tracked\n                        -> after computing backward, a gradient w.r.t this tensor is "
        r"accumulated into .grad\n   - Function : interconnected and build up an acycle graph, that encodes a "
        r"complete history of computation\n                   -> return grad_fn\n                   \n   - "
        r"Derivatives : call .backward() on tensor \n                   - for scalar no args, others -> put args "
        r"of grad_args(ex, output values)\n'")),
    C('In [27]', """\
import torch"""),
    C('In [28]', """\
x = torch.ones(2,2, requires_grad=True)
print(x)
print(x.data) # with only values of tensor
print(x.grad)
print(x.grad_fn)""", """\
tensor([[1., 1.],
        [1., 1.]], requires_grad=True)
tensor([[1., 1.],
        [1., 1.]])
None
None"""),
    C('In [29]', """\
# Do operation to x

y = x*2
print(y)
print(y.grad)
print(y.grad_fn)


print()

z = y*y*3
out = z.mean()
print(z, out, out.grad_fn, out.grad)""", """\
tensor([[2., 2.],
        [2., 2.]], grad_fn=<MulBackward0>)
None
<MulBackward0 object at {@y.grad_fn}>

tensor([[12., 12.],
        [12., 12.]], grad_fn=<MulBackward0>) tensor(12., grad_fn=<MeanBackward0>) \
<MeanBackward0 object at {@out.grad_fn}> None""", warns=2,
      note="old releases printed MulBackward / MeanBackward1 and did not warn"),
    C('In [30]', """\
# defaut requires_grad to tensor is FALSE

a = torch.randn(2,2)
a = ((a*3)/a-1)
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = a*a
print(b.requires_grad)
b.requires_grad_(False)
print(b.requires_grad)""", "False\nTrue\nTrue",
      error="you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
            "in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."),
    C('In [31]', '''\
"""
    Gradients
"""
out.backward()
print(x.grad)''', """\
tensor([[6., 6.],
        [6., 6.]])"""),
    C('In [32]', """\
out.backward()
print(x.grad)""", error=FREED),
    C('In [None]', _DOCSTRING_NONE, (
        r"'\n    By default, gradient computation flushes all the internal buffers contained in the graph,\n    so "
        r"if you even want to do the backward on some part of the graph twice,\n    you need to pass in "
        r"retain_variables = True during the first pass.\n    \n    To reduce memory usage, during the .backward()"
        r" call, all the intermediary results are deleted\n    when they are not needed anymore. Hence if you try "
        r"to call .backward() again, \n    the intermediary results don’t exist and the backward pass cannot be "
        r"performed \n    (and you get the error you see).\n    You can call .backward(retain_graph=True) to make "
        r"a backward pass that will\n    not delete intermediary results, and so you will be able to call "
        r".backward() again.\n    All but the last call to backward should have the retain_graph=True option."
        r"'"), note="never run in the notebook; run here, it displays the string"),
    C('In [34]', """\
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
y.backward(torch.ones(2, 2))
# the retain_variables flag will prevent the internal buffers from being freed
print(x.grad)""", """\
tensor([[1., 1.],
        [1., 1.]])"""),
    C('In [23]', """\
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
y.backward(torch.ones(2, 2), retain_graph=True)
# the retain_variables flag will prevent the internal buffers from being freed
print(x.grad)""", """\
tensor([[1., 1.],
        [1., 1.]])"""),
    C('In [35]', """\
gradient = torch.randn(2,2)

y.backward()""", error=IMPLICIT),
    C('In [40]', """\
print(y.size())
y.backward(gradient)
print(x.grad)""", check=implicit_grad_plus_check),
])

TRANSCRIPTS = [T000, T001, T002, T003, T004]


# ---- Jupyter-like execution -----------------------------------------------------------------
def ipython_display(value) -> str:
    """What IPython's displayhook prints for ``value`` (IPython.lib.pretty for the types seen here)."""
    if isinstance(value, tuple):
        inner = ", ".join(ipython_display(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(ipython_display(v) for v in value) + "]"
    cls = type(value)
    if cls.__repr__ is object.__repr__:
        mod = getattr(cls, "__module__", None)
        name = cls.__qualname__ if mod in (None, "builtins") else f"{mod}.{cls.__qualname__}"
        return f"<{name} at 0x{id(value):x}>"
    return repr(value)


@dataclass
class Result:
    out: str
    error: BaseException | None
    warnings: list


def run_cell(code: str, ns: dict, module_name: str) -> Result:
    if module_name != "torch":
        code = re.sub(r"^import torch$", f"import {module_name} as torch", code, flags=re.M)
    tree = ast.parse(code)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body = ast.Module(body=tree.body[:-1] if last else tree.body, type_ignores=[])
    buf = io.StringIO()
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(buf):
            try:
                exec(compile(body, "<cell>", "exec"), ns)
                if last is not None:
                    value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)
                    if value is not None:
                        print(ipython_display(value))
            except Exception as e:  # noqa: BLE001 - the cell's own error is the result
                error = e
    return Result(buf.getvalue(), error, list(caught))


class Replay:
    """Runs a transcript's cells in order, once, in one namespace, and verifies each cell as soon as
    it has run (later cells rebind names and mutate tensors)."""

    def __init__(self, transcript: Transcript, module_name: str, cuda_available: bool):
        self.t = transcript
        self.module_name = module_name
        self.cuda = cuda_available
        self.ns = {"__name__": "__main__", **transcript.namespace}
        self.outcomes: list = []
        __import__(module_name).manual_seed(RNG_SEED)

    def outcome(self, i: int):
        """None when the cell was skipped (CUDA), else the verification error or 'ok'."""
        while len(self.outcomes) <= i:
            cell = self.t.cells[len(self.outcomes)]
            if cell.cuda and not self.cuda:
                # Skipped, but its imports still run: later cells use the module it imported.
                imports = [n for n in ast.parse(cell.code).body if isinstance(n, (ast.Import, ast.ImportFrom))]
                run_cell(ast.unparse(ast.Module(body=imports, type_ignores=[])) or "pass", self.ns,
                         self.module_name)
                self.outcomes.append(None)
                continue
            result = run_cell(cell.code, self.ns, self.module_name)
            try:
                verify(cell, result, self.ns, exact_addresses=self.module_name != "torch")
                self.outcomes.append("ok")
            except AssertionError as e:
                self.outcomes.append(e)
        return self.outcomes[i]


def expand_template(template: str, ns: dict, exact: bool) -> str:
    """Fill address tokens with values from ``ns`` (exact) or turn the text into a regex (not exact)."""
    pieces = re.split(r"(\{@[^}]+\}|\{id:[^}]+\})", template)
    out = []
    for p in pieces:
        m = re.fullmatch(r"\{(@|id:)([^}]+)\}", p)
        if m is None:
            out.append(p if exact else re.escape(p))
            continue
        if exact:
            obj = eval(m.group(2), dict(ns))
            out.append(hex(id(obj)) if m.group(1) == "@" else str(id(obj)))
        else:
            out.append(r"0x[0-9a-f]+" if m.group(1) == "@" else r"\d+")
    return "".join(out)


def verify(cell: C, result: Result, ns: dict, *, exact_addresses: bool):
    """Assert that one cell's result matches its expectation."""
    if cell.error is not None:
        assert result.error is not None, f"expected RuntimeError: {cell.error}"
        assert type(result.error) is RuntimeError or isinstance(result.error, RuntimeError), repr(result.error)
        assert str(result.error) == cell.error
    elif result.error is not None:
        raise AssertionError(f"cell raised {type(result.error).__name__}: {result.error}") from result.error
    out = result.out.rstrip("\n")
    if cell.check is not None:
        cell.check(ns, out)
    else:
        want = expand_template(cell.out, ns, exact_addresses)
        if exact_addresses:
            assert out == want
        else:
            assert re.fullmatch(want, out), (out, cell.out)
    nonleaf = [w for w in result.warnings if str(w.message).startswith(NONLEAF_WARNING)]
    assert len(nonleaf) == cell.warns, [str(w.message)[:80] for w in result.warnings]
    assert all(issubclass(w.category, UserWarning) for w in nonleaf)
    others = [w for w in result.warnings if w not in nonleaf]
    assert not others, [f"{w.category.__name__}: {w.message}" for w in others]


_REPLAYS: dict = {}


def replay(transcript: Transcript, module_name: str) -> Replay:
    key = (transcript.file, module_name)
    if key not in _REPLAYS:
        if module_name == "torch":
            import torch
            cuda = torch.cuda.is_available()
        else:
            cuda = gradc.cuda.is_available()
        _REPLAYS[key] = Replay(transcript, module_name, cuda)
    return _REPLAYS[key]


CASES = [pytest.param(t, i, id=f"{t.file[:3]}-{c.label.replace(' ', '')}")
         for t in TRANSCRIPTS for i, c in enumerate(t.cells)]


@pytest.mark.parametrize("transcript,index", CASES)
def test_seed_cell(transcript, index):
    cell = transcript.cells[index]
    outcome = replay(transcript, "gradc").outcome(index)
    if outcome is None:
        pytest.skip("CUDA cell: gradc.cuda.is_available() is False"
                    + ("" if "device=" in cell.code else " (it uses the tensor of the CUDA cell before it)"))
    if outcome != "ok":
        raise outcome


@pytest.mark.parametrize("transcript,index", CASES)
def test_seed_cell_expectation_matches_pytorch(transcript, index):
    """The inlined expectation is what PyTorch itself prints (addresses as patterns)."""
    pytest.importorskip("torch")
    outcome = replay(transcript, "torch").outcome(index)
    if outcome is None:
        pytest.skip("CUDA cell: torch.cuda.is_available() is False")
    if outcome != "ok":
        raise outcome


def _transcript_cells(path: Path):
    """(label, block text) for every 'In [n]:' cell of a transcript file, in document order."""
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"^(In \[[^\]]*\]):\n", text, flags=re.M)
    return [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.file[:3] for t in TRANSCRIPTS])
def test_cells_cover_transcript(transcript):
    """Every cell of the transcript is replayed, in order, with its code as written there."""
    cells = _transcript_cells(SEED_DIR / transcript.file)
    assert [label for label, _ in cells] == [c.label for c in transcript.cells]
    for (label, block), cell in zip(cells, transcript.cells):
        block_lines = [s.rstrip() for s in block.lstrip("\n").split("\n")]
        code_lines = [s.rstrip() for s in cell.code.split("\n")]
        assert block_lines[:len(code_lines)] == code_lines, label
        rest = block_lines[len(code_lines):]
        assert not rest or rest[0] == "", f"{label}: code continues past the copied lines"


def test_all_transcripts_listed():
    assert sorted(p.name for p in SEED_DIR.glob("*.txt")) == sorted(t.file for t in TRANSCRIPTS)


def test_ipython_display_rules():
    class Plain:
        pass
    p = Plain()
    assert ipython_display(((p, 0), (None, 0))) == (
        f"((<{Plain.__module__}.{Plain.__qualname__} at 0x{id(p):x}>, 0), (None, 0))")
    assert ipython_display([0.5, -1.0]) == "[0.5, -1.0]"
    assert ipython_display((1,)) == "(1,)"
    assert ipython_display("a\nb") == "'a\\nb'"


def test_grad_fn_objects_display_like_pytorch_nodes():
    """gradc's nodes keep object.__repr__ and the builtins module, as PyTorch's C++ nodes do,
    so both print(node) and IPython's display match PyTorch."""
    x = gradc.ones(2, requires_grad=True)
    n = (x * 2).grad_fn
    assert repr(n) == f"<MulBackward0 object at {hex(id(n))}>"
    assert ipython_display(n) == f"<MulBackward0 at {hex(id(n))}>"
    acc = n.next_functions[0][0]
    assert ipython_display(acc) == f"<AccumulateGrad at {hex(id(acc))}>"


def test_cuda_cells_replayed_on_the_cuda_simulator(monkeypatch):
    """Without a GPU, the transcripts' CUDA cells run on gradc's CUDA simulator driver
    (GRADC_CUDA_SIMULATOR=1: the kernels' GPU lowering executed by CPU threads)."""
    from gradc.codegen import cuda_driver
    monkeypatch.setenv("GRADC_CUDA_SIMULATOR", "1")
    monkeypatch.setattr(cuda_driver, "_driver", None)
    ran = 0
    for t in TRANSCRIPTS:
        cells = [i for i, c in enumerate(t.cells) if c.cuda]
        if not cells:
            continue
        r = Replay(t, "gradc", True)
        for i in cells:
            outcome = r.outcome(i)
            if outcome != "ok":
                raise outcome
            ran += 1
    monkeypatch.setattr(cuda_driver, "_driver", None)
    assert ran == 2

"""A seeded differential fuzzer of ``@gradc.compile`` against eager gradc and PyTorch.

``Gen(seed, torch).program()`` writes a small random function ``f`` (Python source over the module
name ``T``) mixing elementwise math (unary, binary with broadcasting and Python scalars,
comparisons, where), reductions with dim/keepdim (var/std with correction, norms, softmax), views
(reshape, permutes, strided slices, select, expand, squeeze, narrow, flatten, T/mT), matmuls,
cat/stack, in-place ops on intermediates (also through views) and dtype mixes, over inputs of
float32/float64/int64/bool with 0-d, size-1 and empty dims. A candidate line is kept only when
PyTorch runs it (so programs are mostly valid); now and then a line PyTorch rejects ends the
program, to compare errors. ``run(prog, mode)`` executes it as ``torch``, ``eager`` (gradc) or
``compiled`` (``gradc.compile``, called twice: leaves, then non-leaf copies) and records the
outputs (shape, dtype, requires_grad, grad_fn is None, values), the gradients of a scalar loss by
``backward``, by ``autograd.grad(create_graph=True)`` and a second derivative, and exceptions
(type, first line without the compiled ' (at file:line)', built-in base types). ``check``
compares compiled with eager and with PyTorch (float64 to 1e-9, float32 to 1e-4) and
``minimize`` shrinks a failing program.  ``python tests/compile_program_fuzz.py START COUNT``
prints each failing seed; ``... --min SEED`` prints its minimised program.
"""
import random
import re
import sys
import traceback

import numpy as np
from autograd_protocol_fuzz import same     # (records agree: floats to a tolerance, NaN equal to NaN)

UN_F = ["{a}.exp()", "{a}.tanh()", "{a}.sigmoid()", "{a}.sin()", "{a}.cos()", "{a}.abs()", "(-{a})",
        "{a}.relu()", "{a}.sqrt()", "{a}.log()", "{a}.rsqrt()", "{a}.square()", "({a} ** 2)", "({a} ** 0.5)",
        "{a}.reciprocal()", "{a}.log1p()", "{a}.expm1()", "{a}.floor()", "{a}.sign()", "{a}.atan()",
        "T.nn.functional.softplus({a})", "T.nn.functional.gelu({a})", "T.nn.functional.silu({a})",
        "{a}.clamp(-0.5, 0.5)", "{a}.clamp(min=0.1)", "{a}.clamp(max=0.3)", "{a}.erf()", "(1 / {a})",
        "(2 ** {a})", "(3 - {a})", "({a} * 2.5)", "({a} + 1)", "({a} / 3)", "({a} // 2)", "({a} % 1.5)",
        "{a}.float()", "{a}.double()", "{a}.long()", "{a}.bool()", "(~{a})", "{a}.logical_not()",
        "T.nn.functional.leaky_relu({a}, 0.1)", "{a}.neg()", "{a}.round()", "{a}.trunc()", "({a} * True)"]
BIN = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / {b})", "T.maximum({a}, {b})", "T.minimum({a}, {b})",
       "({a} ** {b})", "T.atan2({a}, {b})", "({a} > {b})", "({a} <= {b})", "({a} == {b})", "({a} != {b})",
       "T.where({a} > 0, {a}, {b})", "T.where({a} > {b}, {b}, 0.5)", "T.where({c}, {a}, {b})",
       "({a} & {b})", "({a} | {b})", "T.logical_and({a}, {b})", "({a} // {b})", "({a} % {b})",
       "T.add({a}, {b}, alpha=2)", "T.sub({a}, {b}, alpha=0.5)", "T.lerp({a}, {b}, 0.3)",
       "T.addcmul({a}, {a}, {b}, value=0.5)", "({a} * {b}).sum()", "({a} + {b}.sum(-1, keepdim=True))",
       "T.clamp({a}, min={b})", "T.clamp({a}, {b}, {c})", "{a}.masked_fill({b} > 0, 1.5)", "T.hypot({a}, {b})",
       "T.xlogy({a}, {b})", "T.fmod({a}, {b})", "T.remainder({a}, {b})", "T.copysign({a}, {b})",
       "({a} < 0.5)", "(0.5 < {a})", "T.eq({a}, 1)", "T.logaddexp({a}, {b})", "T.nn.functional.mse_loss({a}, {b})"]
RED = ["{a}.sum()", "{a}.sum({d})", "{a}.sum({d}, keepdim=True)", "{a}.mean()", "{a}.mean({d})",
       "{a}.mean({d}, keepdim=True)", "{a}.amax({d})", "{a}.amax({d}, keepdim=True)", "{a}.amin({d})",
       "{a}.amax()", "{a}.max()", "{a}.min({d})[0]", "{a}.max({d}, keepdim=True).values",
       "{a}.max({d}).indices", "{a}.argmax({d})", "{a}.argmin()",
       "{a}.logsumexp({d})", "{a}.logsumexp({d}, keepdim=True)", "{a}.var({d})", "{a}.var({d}, correction=0)",
       "{a}.std({d}, keepdim=True)", "{a}.var()", "{a}.std(correction=2)", "{a}.norm()", "{a}.norm(1, {d})",
       "{a}.norm(dim={d}, keepdim=True)", "{a}.norm(float('inf'))", "{a}.softmax({d})", "{a}.log_softmax({d})",
       "T.softmax({a}, {d}, dtype=T.float64)", "{a}.prod({d})", "{a}.prod()", "{a}.sum(({d}, 0))",
       "{a}.mean(dim=({d},), keepdim=True)", "{a}.any({d})", "{a}.all()", "{a}.sum(dtype=T.float64)",
       "{a}.cumsum({d})", "{a}.count_nonzero({d})", "{a}.norm(p=3, dim={d})", "{a}.std(unbiased=False)",
       "{a}.var_mean({d})[0]", "{a}.std_mean(correction=0)[1]", "{a}.aminmax()[0]", "{a}.nansum({d})",
       "{a}.norm(0)", "{a}.norm(-1, {d})", "T.linalg.vector_norm({a}, 2, ({d},))", "{a}.sum(-1).mean()",
       "T.nn.functional.normalize({a}, dim={d})", "{a}.mean(({d}, -1))", "{a}.max()", "{a}.median()",
       "T.nn.functional.softmin({a}, {d})", "{a}.cumprod({d})", "{a}.logcumsumexp({d})"]
VIEW = ["{a}.reshape(-1)", "{a}.reshape({shape})", "{a}.view(-1)", "{a}.t()", "{a}.T", "{a}.mT",
        "{a}.transpose(0, -1)", "{a}.permute({perm})", "{a}[::2]", "{a}[1:]", "{a}[..., 1::2]",
        "{a}[0]", "{a}[-1]", "{a}.select({d}, 0)", "{a}.narrow({d}, 0, 1)", "{a}.unsqueeze({d})",
        "{a}.unsqueeze(-1)", "{a}.squeeze()", "{a}.squeeze({d})", "{a}.flatten()", "{a}.flatten(1)",
        "{a}.expand({expand})", "{a}.expand_as({b})", "{a}[None]", "{a}[:, None]", "{a}[..., 0]",
        "{a}.contiguous()", "{a}.clone()", "{a}.detach()", "{a}.unflatten(0, (1, -1))", "{a}.movedim(0, -1)",
        "{a}[1:3:2]", "{a}.diagonal()", "{a}.flip(0)", "{a}.roll(1, 0)", "{a}.repeat(2, *[1] * ({a}.dim() - 1))"]
MM = ["({a} @ {b})", "T.matmul({a}, {b})", "({a} @ {a}.mT)", "({a}.mT @ {a})", "T.bmm({a}, {b})", "T.mm({a}, {b})",
      "T.nn.functional.linear({a}, {b})", "T.nn.functional.linear({a}, {b}, {c})", "T.mv({a}, {b})",
      "T.dot({a}, {b})", "T.outer({a}, {b})", "T.einsum('...i,...i->...', {a}, {b})"]
CAT = ["T.cat([{a}, {b}])", "T.cat([{a}, {b}], {d})", "T.cat([{a}, {a}], -1)", "T.stack([{a}, {b}])",
       "T.stack([{a}, {a} * 2], {d})", "T.cat([{a}, {b}, {a}], 0)"]
INPLACE = ["add_(1)", "mul_(2)", "add_({b})", "mul_({b})", "clamp_(-0.3, 0.4)", "relu_()", "sub_({b}, alpha=2)",
           "div_(3)", "exp_()", "sigmoid_()", "tanh_()", "zero_()", "fill_(0.5)", "copy_({b})", "masked_fill_({a} > 0, 0.0)",
           "abs_()", "pow_(2)", "neg_()", "clamp_(min=0)"]
IP_TARGET = ["{t}", "{t}[0]", "{t}[..., :1]", "{t}.view(-1)", "{t}.t()", "{t}[::2]"]

DTYPES = ["float64", "float64", "float64", "float32", "int64", "bool"]


class Gen:
    """One seed's random program."""

    def __init__(self, seed, torch):
        self.r = random.Random(seed)
        self.seed = seed
        self.T = torch

    def shape(self, base):
        r = self.r
        k = r.random()
        if k < 0.12:
            return ()
        s = list(base[r.randint(0, len(base)):]) if r.random() < 0.4 else list(base)
        s = [1 if r.random() < 0.15 else n for n in s]
        if r.random() < 0.05 and s:
            s[r.randrange(len(s))] = 0
        return tuple(s)

    def inputs(self):
        r = self.r
        base = [r.randint(1, 4) for _ in range(r.randint(1, 3))]
        fdt = r.choice(["float64", "float64", "float32"])
        ins = []
        for k in range(r.randint(1, 3)):
            dt = fdt if r.random() < 0.75 else r.choice(DTYPES)
            shape = self.shape(base)
            rg = dt.startswith("float") and r.random() < 0.8
            n = int(np.prod(shape)) if shape else 1
            if dt.startswith("float"):
                vals = [round(r.uniform(-2, 2), 3) for _ in range(n)]
            elif dt == "int64":
                vals = [r.randint(-3, 4) for _ in range(n)]
            else:
                vals = [r.random() < 0.5 for _ in range(n)]
            ins.append((np.array(vals).reshape(shape).tolist(), dt, rg))
        return ins

    def fill(self, tmpl, env):
        r = self.r
        names = list(env)
        a = r.choice(names)
        b = r.choice(names)
        c = r.choice(names)
        if r.random() < 0.15:
            b = r.choice(["2.0", "0.5", "3", "True", "-1"])
        x = env[a]
        nd = x.dim()
        d = r.randint(-nd, nd - 1) if nd else r.choice([0, -1])
        perm = list(range(nd))
        r.shuffle(perm)
        shape = list(x.shape)
        if len(shape) >= 2 and r.random() < 0.5:
            shape = [shape[0], -1]
        elif r.random() < 0.5:
            shape = [1] + shape
        else:
            shape = shape[::-1]
        expand = [2] + [-1] * nd if r.random() < 0.5 else [3 if n == 1 else n for n in x.shape] or [2]
        return tmpl.format(a=a, b=b, c=c, d=d, perm=tuple(perm) if perm else "()", shape=tuple(shape),
                           expand=", ".join(map(str, expand)), t="{t}")

    def program(self):
        r = self.r
        T = self.T
        ins = self.inputs()
        env = {}
        for k, (v, dt, rg) in enumerate(ins):
            env[f"p{k}"] = T.tensor(v, dtype=getattr(T, dt), requires_grad=rg)
        lines = []
        error = False
        for k in range(r.randint(1, 7)):
            name = f"t{k}"
            kind = r.random()
            if kind < 0.3:
                expr = self.fill(r.choice(UN_F), env)
            elif kind < 0.5:
                expr = self.fill(r.choice(BIN), env)
            elif kind < 0.65:
                expr = self.fill(r.choice(RED), env)
            elif kind < 0.8:
                expr = self.fill(r.choice(VIEW), env)
            elif kind < 0.87:
                expr = self.fill(r.choice(MM), env)
            elif kind < 0.92:
                expr = self.fill(r.choice(CAT), env)
            else:
                expr = None
            if expr is None:
                t = r.choice(list(env))
                tgt = r.choice(IP_TARGET).format(t=t)
                op = self.fill(r.choice(INPLACE), env)
                stmt = [f"{name} = {t} * 1" if r.random() < 0.8 else f"{name} = {t}", f"{tgt.replace(t, name)}.{op}"]
                if r.random() < 0.3:
                    stmt = [f"{name} = {t}", f"{name}.{op}"]
            else:
                stmt = [f"{name} = {expr}"]
            trial = dict(env)
            try:
                exec("\n".join(stmt), {"T": T}, trial)
            except Exception:
                if r.random() < 0.04:
                    lines += stmt
                    error = True
                    break
                continue
            lines += stmt
            env = trial
        temps = [n for n in env if n.startswith("t")] or list(env)
        outs = sorted(set(r.choice(temps) for _ in range(r.randint(1, 3))))
        if r.random() < 0.5:
            outs = [temps[-1]] + [o for o in outs if o != temps[-1]]
        src = ["def f(" + ", ".join(f"p{k}" for k in range(len(ins))) + "):"] + ["    " + s for s in lines]
        src.append("    return (" + ", ".join(outs) + ",)")
        return Program(ins, src, self.seed, error)


class Program:
    """A random program: its inputs ((values, dtype name, requires_grad) each) and the source lines
    of ``f``."""

    def __init__(self, ins, src, seed=None, error=False):
        self.ins = ins
        self.src = src
        self.seed = seed
        self.error = error

    def text(self):
        head = [f"ins = {self.ins!r}"]
        return "\n".join(head + self.src)


def describe(t):
    """A comparable record of a tensor (or None, or another value)."""
    if t is None:
        return None
    if not hasattr(t, "dtype"):
        return ("py", repr(t))
    d = t.detach()
    vals = np.array(d.clone().tolist(), dtype=np.float64 if (d.is_floating_point()) else np.int64)
    return ("T", tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad, t.grad_fn is None, vals)


def exc(e):
    """type and first line (without the ' (at FILE:LINE)' compiled code adds), and the names of the
    built-in exception types it is an instance of (gradc's ShapeError is a RuntimeError)."""
    builtin = tuple(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
    return ("exc", type(e).__name__, re.sub(r" \(at [^()]*:\d+\)$", "", str(e).split("\n")[0]), builtin)


def run(prog, mode, torch=None):
    """The record of one run: a list of (tag, description)."""
    if mode == "torch":
        T, C = torch, (lambda f: f)
    else:
        import gradc
        T = gradc
        C = gradc.compile if mode == "compiled" else (lambda f: f)
    g = {"T": T}
    exec("\n".join(prog.src), g)
    f = C(g["f"])
    log = []
    leaves = [T.tensor(v, dtype=getattr(T, dt), requires_grad=rg) for v, dt, rg in prog.ins]
    for call in range(2):
        args = [l * 1 if (call == 1 and l.requires_grad) else l for l in leaves] if call else leaves
        try:
            outs = f(*args)
        except Exception as e:
            log.append((f"call{call}", exc(e), traceback.format_exc()[-1500:]))
            return log
        log.append((f"out{call}", tuple(describe(o) for o in outs)))
        loss = None
        for i, o in enumerate(outs):
            if o.is_floating_point() and o.requires_grad:
                w = T.cos(T.arange(o.numel(), dtype=o.dtype) * 0.7 + i).reshape(o.shape)
                term = (o * w).sum()
                loss = term if loss is None else loss + term
        if loss is None:
            continue
        diff = [l for l in leaves if l.requires_grad]
        try:
            if call == 0:
                loss.backward(retain_graph=True)
                log.append(("bw", tuple(describe(l.grad) for l in leaves)))
                for l in leaves:
                    l.grad = None
            gs = T.autograd.grad(loss, diff, create_graph=True, allow_unused=True)
            log.append((f"grad{call}", tuple(describe(g) for g in gs)))
            second = None
            for g_ in gs:
                if g_ is not None and g_.requires_grad:
                    s = (g_ * g_).sum()
                    second = s if second is None else second + s
            if second is not None:
                hs = T.autograd.grad(second, diff, allow_unused=True)
                log.append((f"gg{call}", tuple(describe(h) for h in hs)))
        except Exception as e:
            log.append((f"bwerr{call}", exc(e), traceback.format_exc()[-1500:]))
            return log
    return log




def compare(la, lb, tol, messages=True):
    """The first difference of two records: (index, a, b) or None."""
    for i, (a, b) in enumerate(zip(la, lb)):
        if a[0] != b[0]:
            return i, a[:2], b[:2]
        if a[1] and a[1][0] == "exc" and b[1] and b[1][0] == "exc":
            if not (a[1][1] == b[1][1] or a[1][1] in b[1][3]) or (messages and a[1][2] != b[1][2]):
                return i, a, b
            continue
        if not same(a[1], b[1], tol):
            return i, a[:2], b[:2]
    if len(la) != len(lb):
        return min(len(la), len(lb)), la[len(lb):len(lb) + 1], lb[len(la):len(la) + 1]
    return None


# what makes a float64 program compute in float32: a cast, or a bool or integer value (a comparison,
# an index) that a Python float or a float op promotes to the default float32
_NARROWING = re.compile(r"\.float\(\)|[<>]|[=!]=|\.bool\(\)|\.long\(\)|logical|\.any\(|\.all\(|arg(max|min)|"
                        r"indices|count_nonzero|//|[&|~]")


def tolerance(prog, logs):
    """1e-9 for float64 programs; 1e-4 where float32 may be computed (a float32 input or output,
    an integer or bool input, or a line that makes a bool or integer value)."""
    wide = all(dt == "float64" for _, dt, _ in prog.ins) and not any(
        _NARROWING.search(line) for line in prog.src[1:-1])
    return 1e-9 if wide and "float32" not in repr([e[:2] for e in logs]) else 1e-4


def check(prog, torch, pairs=(("eager", "compiled"), ("torch", "compiled"))):
    """The first pair of runs that differ: ((run, run), (index, entry, entry), all records), or None."""
    logs = {}
    for m in ("torch", "eager", "compiled"):
        try:
            logs[m] = run(prog, m, torch)
        except Exception as e:
            logs[m] = [("CRASH", exc(e), traceback.format_exc()[-1500:])]
    tol = tolerance(prog, logs["torch"])
    for a, b in pairs:
        d = compare(logs[a], logs[b], tol)
        if d is not None:
            return (a, b), d, logs
    return None


def main():
    import warnings
    warnings.simplefilter("ignore")
    import torch
    if sys.argv[1] == "--min":
        prog = minimize(Gen(int(sys.argv[2]), torch).program(), torch)
        print(prog.text())
        res = check(prog, torch)
        print("#", res[0], res[1][1][:2], "||", res[1][2][:2]) if res else print("# passes")
        return
    start, n = int(sys.argv[1]), int(sys.argv[2])
    bad = 0
    for seed in range(start, start + n):
        prog = Gen(seed, torch).program()
        res = check(prog, torch)
        if res:
            bad += 1
            print(f"seed {seed}: {res[0]} @{res[1][0]}: {str(res[1][1])[:200]} || {str(res[1][2])[:200]}", flush=True)
    print("bad", bad, "of", n)



def signature(res):
    """What a failure is, for minimising: the pair, the entry tag and the exception types."""
    (a, b), (i, ea, eb), _ = res
    kind = lambda e: (e[0], e[1][1]) if e and isinstance(e, tuple) and e[1] and e[1][0] == "exc" else (e[0] if e else None)
    return a, b, kind(ea), kind(eb)


def minimize(prog, torch):
    """Drop body lines and outputs while the failure keeps its signature."""
    res = check(prog, torch)
    if res is None:
        return prog
    sig = signature(res)
    changed = True
    while changed:
        changed = False
        body = prog.src[1:-1]
        for k in range(len(body)):
            cand = Program(prog.ins, [prog.src[0]] + body[:k] + body[k + 1:] + [prog.src[-1]])
            r = _try(cand, torch)
            if r is not None and signature(r) == sig:
                prog, changed = cand, True
                break
        if changed:
            continue
        outs = prog.src[-1].strip()[len("return ("):-2].split(", ")
        if len(outs) > 1:
            for k in range(len(outs)):
                rest = outs[:k] + outs[k + 1:]
                cand = Program(prog.ins, prog.src[:-1] + ["    return (" + ", ".join(rest) + ",)"])
                r = _try(cand, torch)
                if r is not None and signature(r) == sig:
                    prog, changed = cand, True
                    break
    return prog


def _try(prog, torch):
    """check(), or None where the candidate program itself fails to run."""
    try:
        return check(prog, torch)
    except Exception:
        return None


if __name__ == "__main__":
    main()

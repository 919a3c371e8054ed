"""A seeded differential fuzzer of the autograd protocol around ``@gradc.compile``.

``Gen(seed).scenario()`` writes one random program as Python source over the names ``T`` (the
module: torch or gradc) and ``C`` (the decorator: identity, or ``gradc.compile``): three
functions (``f0`` compiled, ``h0`` eager calling ``f0``, ``g0`` compiled calling ``h0``, so
compiled code is also inlined into compiled code) with several outputs (unused ones, views of
inputs, integer ones, a tensor returned twice, no_grad/enable_grad blocks, detach, in-place ops
on intermediates), then rounds of calls exercising the protocol: losses mixing compiled outputs
with eager ops, hooks that replace gradients on inputs, outputs and intermediates, retain_grad,
backward with and without retain_graph (twice), autograd.grad with create_graph and allow_unused
then a second derivative, in-place changes of inputs between forward and backward, accumulation
with and without zeroing, optimizer steps, repeated inputs and shape changes (recompiles).
``run(chunks, mode)`` executes it as ``torch``, ``eager`` (gradc) or ``compiled`` and records
values, ``requires_grad``/``is_leaf``/``grad_fn is None``, the leaves each output's graph reaches,
every ``.grad`` and the type and first line of every exception; ``check`` compares two runs
(float64 to 1e-9, float32 to 1e-4).  ``python tests/autograd_protocol_fuzz.py START COUNT`` runs
seeds against torch and eager gradc and prints each first divergence.
"""
import random
import sys
import traceback

import numpy as np

import gradc

SHAPES = [(2, 3), (3, 3), (3, 2), (4,), (2, 2)]


class Rec:
    """The record of one run: (tag, described value or exception) pairs."""

    def __init__(self):
        self.log = []

    def rec(self, tag, t):
        self.log.append((tag, describe(t)))

    def rexc(self, tag, e):
        self.log.append((tag, ("exc", type(e).__name__, str(e).split("\n")[0])))


def describe(t):
    """A comparable description of a recorded value."""
    if t is None:
        return None
    if isinstance(t, (tuple, list)):
        return tuple(describe(x) for x in t)
    if isinstance(t, (bool, int, float, str)):
        return ("py", t)
    d = t.detach().clone() if hasattr(t, 'clone') else t.detach()
    vals = np.array(d.tolist(), dtype=np.float64 if d.is_floating_point() else np.int64)
    return ("T", tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad, t.is_leaf,
            t.grad_fn is None, vals)


def leaves_reached(t, leaves):
    """The names of the ``leaves`` reachable from ``t.grad_fn`` through ``next_functions``."""
    if t is None or t.grad_fn is None:
        return ()
    seen, out, stack = set(), set(), [t.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        v = getattr(n, "variable", None)
        if v is not None:
            for name, l in leaves.items():
                if l is v:
                    out.add(name)
        for nf, _ in n.next_functions:
            stack.append(nf)
    return tuple(sorted(out))


# ------------------------------------------------------------------ generator
UNARY = ["{a}.tanh()", "{a}.sin()", "{a}.sigmoid()", "({a} * {a})", "{a}.exp()", "{a}.abs()",
         "({a} ** 2)", "{a}.cos()", "({a} * 3)", "({a} / 3)", "({a} + 1)", "(-{a})", "{a}.relu()"]
BINARY = ["({a} + {b})", "({a} * {b})", "({a} - {b})", "({a} / ({b}.abs() + 1))", "T.maximum({a}, {b})",
          "({a} * {b}.sum())", "({a} + {b}.sum(dim=0, keepdim=True))", "({a} * {b}.mean(dim=-1, keepdim=True))"]


class Gen:
    """The random program of one seed. ``grad_mode_calls``: also call under ``no_grad`` with an
    ``enable_grad`` block around the call."""

    def __init__(self, seed, grad_mode_calls=True):
        self.r = random.Random(seed)
        self.seed = seed
        self.grad_mode_calls = grad_mode_calls

    def body(self, params, indent="    "):
        """lines of a function body over params, returns (lines, float temps)"""
        r = self.r
        lines, temps = [], list(params)
        n = r.randint(1, 5)
        for k in range(n):
            name = f"t{k}"
            if r.random() < 0.5 or len(temps) < 2:
                expr = r.choice(UNARY).format(a=r.choice(temps))
            else:
                a, b = r.sample(temps, 2)
                expr = r.choice(BINARY).format(a=a, b=b)
            kind = r.random()
            if kind < 0.1:
                lines += [f"{indent}with T.no_grad():", f"{indent}    {name} = {expr}"]
            elif kind < 0.15:
                lines += [f"{indent}with T.no_grad():", f"{indent}    with T.enable_grad():",
                          f"{indent}        {name} = {expr}"]
            elif kind < 0.22:
                lines += [f"{indent}{name} = {expr}.detach()"]
            elif kind < 0.32:
                other = r.choice(temps)
                op = r.choice(["mul_(2)", "add_(1)", f"mul_({other})", f"add_({other} * 2)", "sin_()", "exp_()"])
                lines += [f"{indent}{name} = {expr} * 1", f"{indent}{name}.{op}"]
            else:
                lines += [f"{indent}{name} = {expr}"]
            temps.append(name)
        return lines, temps

    def outputs(self, params, temps):
        r = self.r
        computed = [t for t in temps if t not in params] or temps
        if r.random() < 0.25:
            return [f"{r.choice(computed)}.sum()"]
        outs = [r.choice(computed) for _ in range(r.randint(1, 3))]
        if r.random() < 0.3:
            p = r.choice(params)
            outs.append(r.choice([f"{p}", f"{p}.reshape(-1)", f"{p}[0]", f"{p}.detach()", f"{p}.t()" if True else ""]))
        if r.random() < 0.3:
            t = r.choice(computed)
            outs.append(r.choice([f"({t} > 0).long()", f"{t}.argmax()", f"({t} > 0)"]))
        if r.random() < 0.2:
            outs.append(f"{r.choice(computed)}.sum()")
        if r.random() < 0.1:
            outs.append(f"{r.choice(computed)}.detach()")
        r.shuffle(outs)
        return outs

    def func(self, name, nparams, deco, callee=None):
        params = [f"p{i}" for i in range(nparams)]
        lines = ([f"@C"] if deco else []) + [f"def {name}({', '.join(params)}):"]
        pre = []
        if callee is not None:
            cname, cn = callee
            args = [self.r.choice(params + [f"({p} * 2)" for p in params] + [f"{p}.sin()" for p in params])
                    for _ in range(cn)]
            pre = [f"    c = {cname}({', '.join(args)})",
                   "    c = c if isinstance(c, tuple) else (c,)",
                   "    cf = [v for v in c if v.is_floating_point() and v.dim() > 0 and v.shape == p0.shape]",
                   "    q = cf[0] if cf else p0",
                   "    qs = [v for v in c if v.is_floating_point()]",
                   "    qsum = sum(v.sum() for v in qs)"]
            params = params + ["q"]
        body, temps = self.body(params)
        if callee is not None:
            body.append("    t9 = t0 * 1 + qsum" if any(t == "t0" for t in temps) else "    t9 = p0 + qsum")
            temps.append("t9")
        outs = self.outputs(params if callee is None else params[:-1], temps)
        ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ",)"
        return lines + pre + body + [f"    return {ret}"], len(outs)

    def tensor_data(self, shape):
        return np.round(np.array([self.r.gauss(0, 1) for _ in range(int(np.prod(shape)))]).reshape(shape), 3).tolist()

    def scenario(self):
        r = self.r
        chunks = []
        nparams = r.randint(1, 3)
        fl, _ = self.func("f0", nparams, deco=True)
        chunks.append("\n".join(fl))
        hl, _ = self.func("h0", nparams, deco=False, callee=("f0", nparams))
        chunks.append("\n".join(hl))
        gl, _ = self.func("g0", nparams, deco=True, callee=("h0", nparams))
        chunks.append("\n".join(gl))
        dtype = "T.float64" if r.random() < 0.8 else "T.float32"
        shape = r.choice(SHAPES)
        ninputs = r.randint(1, 3)
        self.leaves = []
        for i in range(ninputs):
            rg = r.random() < 0.75
            chunks.append(f"x{i} = T.tensor({self.tensor_data(shape)}, dtype={dtype}, requires_grad={rg})")
            self.leaves.append(f"x{i}")
        chunks.append("L = {" + ", ".join(f"'x{i}': x{i}" for i in range(ninputs)) + "}")
        chunks.append("failed = False")
        if r.random() < 0.3:
            opt = r.choice(["SGD", "Adam"])
            chunks.append(f"opt = T.optim.{opt}([v for v in L.values() if v.requires_grad] or [T.zeros(1, requires_grad=True)], lr=0.1)")
        else:
            opt = None
        for rnd in range(r.randint(1, 4)):
            chunks += self.round(rnd, nparams, ninputs, dtype, opt)
            if r.random() < 0.15:
                shape = r.choice(SHAPES)
                for i in range(ninputs):
                    rg = r.random() < 0.75
                    chunks.append(f"x{i} = T.tensor({self.tensor_data(shape)}, dtype={dtype}, requires_grad={rg})")
                chunks.append("L = {" + ", ".join(f"'x{i}': x{i}" for i in range(ninputs)) + "}")
        return chunks

    def guarded(self, tag, stmt):
        body = "\n".join("    " + s for s in stmt.split("\n"))
        text = f"try:\n{body}\nexcept Exception as e:\n    rexc('{tag}', e)"
        if tag.startswith(("bw", "grad", "gg")):
            # a failing backward may have done part of its work (a compiled node is one step):
            # forget what it accumulated, compare from here on
            text += "\n    failed = True\n    for _x in L.values(): _x.grad = None"
        return text

    def round(self, k, nparams, ninputs, dtype, opt):
        r = self.r
        ch = []
        xs = [f"x{i}" for i in range(ninputs)]
        # inputs: leaves, non-leaf copies, detached
        argdefs = []
        for j in range(nparams):
            base = r.choice(xs)
            form = r.random()
            if form < 0.5:
                argdefs.append(base)
            elif form < 0.8:
                name = f"a{k}_{j}"
                ch.append(f"{name} = {base} * 1")
                argdefs.append(name)
            elif form < 0.9:
                argdefs.append(f"{base}.detach()")
            else:
                argdefs.append(argdefs[-1] if argdefs else base)   # repeated input
        fn = r.choice(["f0", "h0", "g0"])
        call = f"o{k} = {fn}({', '.join(argdefs)})"
        mode = r.random()
        if mode < 0.1:
            call = f"with T.no_grad():\n    {call}"
        elif mode < 0.15 and self.grad_mode_calls:
            call = f"with T.no_grad():\n    with T.enable_grad():\n        {call}"
        ch.append(self.guarded(f"call{k}", call + f"\no{k} = o{k} if isinstance(o{k}, tuple) else (o{k},)"))
        ch.append(f"if 'o{k}' not in globals(): o{k} = ()")
        ch.append(f"rec('out{k}', o{k})")
        ch.append(f"rec('reach{k}', tuple(leaves_reached(v, L) for v in o{k}))")
        # a second call mixed in
        second = r.random() < 0.3
        if second:
            fn2 = r.choice(["f0", "h0", "g0"])
            ch.append(self.guarded(f"call{k}b", f"s{k} = {fn2}({', '.join(r.choice(xs) for _ in range(nparams))})\n"
                                   f"s{k} = s{k} if isinstance(s{k}, tuple) else (s{k},)"))
            ch.append(f"if 's{k}' not in globals(): s{k} = ()")
        # hooks and retain_grad
        hooks = []
        if r.random() < 0.3:
            x = r.choice(xs)
            hooks.append(self.guarded(f"hookx{k}", f"{x}.register_hook(lambda g: g * 2)"))
        if r.random() < 0.3:
            hooks.append(self.guarded(f"hooko{k}", f"o{k}[0].register_hook(lambda g: g * 3 + 1)"))
        if r.random() < 0.3:
            hooks.append(self.guarded(f"retain{k}", f"o{k}[0].retain_grad()"))
        ch += hooks
        # loss
        terms = [f"fl(o{k}, T)"]
        if second:
            terms.append(f"fl(s{k}, T) * 0.5")
        if r.random() < 0.4:
            terms.append(f"({r.choice(xs)} ** 2).sum()")
        if r.random() < 0.3:
            x = r.choice(xs)
            terms.append(f"((o{k}[0] * {x}).sum() if o{k} and o{k}[0].is_floating_point() and o{k}[0].shape == {x}.shape else 0)")
        ch.append(self.guarded(f"loss{k}", f"loss{k} = " + " + ".join(terms)))
        ch.append(f"if 'loss{k}' not in globals(): loss{k} = None")
        if r.random() < 0.2:
            ch.append(self.guarded(f"mid{k}", f"m{k} = loss{k} * 2\nm{k}.register_hook(lambda g: g * 0.5)\nloss{k} = m{k} + 0"))
        ch.append(f"rec('loss{k}', loss{k})")
        # in-place between forward and backward
        if r.random() < 0.25:
            targets = [a for a in argdefs if a.startswith("a")] + xs
            t = r.choice(targets)
            if t.startswith("x"):
                ch.append(self.guarded(f"inpl{k}", f"with T.no_grad():\n    {t}.add_(0.5)"))
            else:
                ch.append(self.guarded(f"inpl{k}", f"{t}.mul_(1.5)"))
        # backward-ish
        action = r.random()
        retain = r.random() < 0.5
        if action < 0.45:
            ch.append(self.guarded(f"bw{k}", f"loss{k}.backward(retain_graph={retain})"))
            if r.random() < 0.4:
                ch.append(self.guarded(f"bw{k}b", f"loss{k}.backward()"))
        elif action < 0.8:
            wrt = r.sample(xs, r.randint(1, len(xs)))
            unused = r.random() < 0.5
            cg = r.random() < 0.7
            ch.append(self.guarded(f"grad{k}", f"gs{k} = T.autograd.grad(loss{k}, [{', '.join(wrt)}], "
                                   f"create_graph={cg}, allow_unused={unused}, retain_graph={retain})"))
            ch.append(f"if 'gs{k}' not in globals(): gs{k} = ()")
            ch.append(f"rec('gs{k}', gs{k})")
            v = r.choice(xs)
            second = r.choice([f"sum(((g * g).sum() for g in gs{k} if g is not None), T.zeros((), dtype={dtype}))",
                               f"sum(((g * {v}.detach()).sum() for g in gs{k} if g is not None), T.zeros((), dtype={dtype}))"])
            how = r.random()
            if how < 0.5:
                ch.append(self.guarded(f"gg{k}", f"hv{k} = T.autograd.grad({second}, [{', '.join(xs)}], allow_unused=True)\nrec('hv{k}', hv{k})"))
            else:
                ch.append(self.guarded(f"gg{k}", f"({second}).backward()"))
            if r.random() < 0.3:
                ch.append(self.guarded(f"bw{k}c", f"loss{k}.backward()"))
        else:
            ch.append(self.guarded(f"bw{k}", f"loss{k}.backward(retain_graph={retain})"))
        ch.append(f"for _n, _x in L.items(): rec('grad{k}' + _n, _x.grad)")
        if r.random() < 0.3:
            ch.append(self.guarded(f"og{k}", f"if not failed: rec('ograd{k}', o{k}[0].grad)"))
        if opt and r.random() < 0.6:
            ch.append(self.guarded(f"opt{k}", "opt.step()"))
            ch.append(f"for _n, _x in L.items(): rec('val{k}' + _n, _x)")
        z = r.random()
        if z < 0.3:
            ch.append("for _x in L.values(): _x.grad = None")
        elif z < 0.45:
            ch.append("for _x in L.values():\n    if _x.grad is not None: _x.grad.zero_()")
        return ch


def fl(outs, T):
    """The loss of a call's outputs: the sum of its float outputs, scaled by position."""
    s = T.zeros(())
    for i, v in enumerate(outs):
        if v.is_floating_point():
            s = s + (v * (i + 1)).sum()
    return s


def run(chunks, mode):
    """Execute a scenario as ``torch``, ``eager`` or ``compiled``; its record."""
    src = "\n".join(chunks)
    rec = Rec()
    if mode == "torch":
        import torch
        T, C = torch, (lambda f: f)
    elif mode == "eager":
        T, C = gradc, (lambda f: f)
    else:
        T, C = gradc, gradc.compile
    g = {"T": T, "C": C, "rec": rec.rec, "rexc": rec.rexc, "leaves_reached": leaves_reached, "fl": fl,
         "__name__": "scenario"}
    try:
        exec(compile(src, "<scenario>", "exec"), g)
    except Exception as e:
        rec.log.append(("CRASH", ("exc", type(e).__name__, str(e).split("\n")[0], traceback.format_exc()[-800:])))
    return rec.log


def same(a, b, tol):
    """Whether two descriptions agree (floats to ``tol``)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return False
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            return np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
        return np.array_equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    return a == b


def reach_ok(a, b):
    """A compiled call's outputs share one node over its inputs: their reach may be wider."""
    return len(a) == len(b) and all(set(x) <= set(y) for x, y in zip(a, b))


def first_diff(la, lb, tol, superset=False):
    """(position, entry of la, entry of lb) of the first difference of two records, or None."""
    for i, (a, b) in enumerate(zip(la, lb)):
        if superset and a[0] == b[0] and a[0].startswith("reach") and reach_ok(a[1], b[1]):
            continue
        if a[0] != b[0] or not same(a[1], b[1], tol):
            return i, a, b
    if len(la) != len(lb):
        n = min(len(la), len(lb))
        return n, la[n] if n < len(la) else None, lb[n] if n < len(lb) else None
    return None


def check(chunks, tol=1e-9, pairs=(("torch", "eager"), ("eager", "compiled"))):
    """The first divergence ((run, run), first_diff) between the runs of each pair, or None."""
    logs = {m: run(chunks, m) for m in dict.fromkeys(m for pair in pairs for m in pair)}
    for a, b in pairs:
        d = first_diff(logs[a], logs[b], tol, superset=b == "compiled")
        if d is not None:
            return (a, b), d
    return None


def tolerance(chunks) -> float:
    return 1e-4 if "float32" in "\n".join(chunks) else 1e-9


def short(r):
    return " ".join(repr(r).split())[:160]


def main():
    import warnings
    warnings.simplefilter("ignore")
    start, n = int(sys.argv[1]), int(sys.argv[2])
    bad = 0
    for seed in range(start, start + n):
        chunks = Gen(seed).scenario()
        res = check(chunks, tolerance(chunks))
        if res:
            bad += 1
            print(f"seed {seed}: {res[0][0]}/{res[0][1]} @{res[1][0]}: {short(res[1][1])} || {short(res[1][2])}", flush=True)
    print("bad", bad, "of", n)


if __name__ == "__main__":
    main()

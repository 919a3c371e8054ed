"""``gradc graph``: Graphviz pictures of a compiled function's forward and backward graphs.

This module owns the dot text (written here, no graphviz Python package) and its
rendering. ``to_dot(stages)`` draws the optimized IR (after fuse, what the
executor runs):

- one cluster for the forward function and one for the backward function;
- each ``gradc.fused`` op as a filled, boxed sub-cluster (``cluster_<fn>_fused<k>``)
  holding its body ops, so a kernel's ops sit together;
- other ops (matmul, views, ...) as plain boxes, arguments as ellipses,
  outputs and gradients as bold boxes;
- every residual (a value saved for backward) as an orange cylinder outside both
  clusters, with a bold orange edge from its producer in forward and dashed orange
  edges to its users in backward. Residuals that are primal inputs (held by the
  caller, no extra memory) are drawn paler.

``render(text, fmt, out)`` writes dot text, or runs the ``dot`` executable for
svg/png; without it the dot text is written next to ``out`` and a one-line note
is returned for stderr.
"""
from __future__ import annotations

import os
import shutil
import subprocess

from .ir.core import FUSED, RETURN, YIELD, Function
from .ir.printer import Namer
from .stages import Stages, StageError

FORMATS = ("dot", "svg", "png")
RESIDUAL, RESIDUAL_FILL, RESIDUAL_INPUT_FILL = "#b45f06", "#ffd966", "#fff2cc"
FUSED_FILL, FUSED_LINE = "#e3edfc", "#3c64b4"


def _q(text: str) -> str:
    """A dot double-quoted string (newlines become dot's centred line breaks)."""
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _ty(v) -> str:
    t = v.type
    dims = "x".join(map(str, t.shape))
    return f"{dims}x{t.dtype.ir_name}" if dims else t.dtype.ir_name


def _attrs(**kw) -> str:
    return "[" + ", ".join(f"{k}={_q(v)}" for k, v in kw.items()) + "]"


class _Writer:
    """Dot lines of one function; ``node_of`` maps IR values to the node that produces them."""

    def __init__(self, func: Function, prefix: str, lines: list, node_of: dict):
        self.func, self.prefix, self.lines = func, prefix, lines
        self.node_of = node_of
        self.namer = Namer(func)
        self.n = 0
        self.edges: set = set()

    def new_node(self, label: str, indent: str, **style) -> str:
        nid = f"{self.prefix}{self.n}"
        self.n += 1
        self.lines.append(f"{indent}{nid} {_attrs(label=label, **style)};")
        return nid

    def op_node(self, op, indent: str) -> str:
        label = op.name.removeprefix("gradc.")
        if op.results:
            label += "\n" + ", ".join(_ty(r) for r in op.results)
        if op.loc:
            label += "\n" + op.loc
        nid = self.new_node(label, indent, shape="box", style="rounded")
        for r in op.results:
            self.node_of[r] = nid
        return nid

    def edge(self, src_value, dst: str, **style) -> None:
        src = self.node_of.get(src_value)
        if src is None or (src, dst) in self.edges:
            return
        self.edges.add((src, dst))
        self.lines.append(f"  {src} -> {dst}{' ' + _attrs(**style) if style else ''};")

    def body(self, kernel_names: dict, edges_out: list) -> None:
        """Nodes (and fused clusters) of every op; edges are collected in ``edges_out``."""
        for op in self.func.body.ops:
            if op.name == RETURN:
                continue
            if op.name != FUSED:
                nid = self.op_node(op, "    ")
                edges_out += [(v, nid) for v in op.operands]
                continue
            block = op.regions[0].blocks[0]
            for a, v in zip(block.args, op.operands):
                self.node_of[a] = self.node_of.get(v)
            name = kernel_names.get(op, "fused")
            where = f" ({op.loc})" if op.loc else ""
            self.lines += [f"    subgraph cluster_{name} {{",
                           f"      label={_q('fused kernel ' + name + where)}; style=\"filled,rounded\";",
                           f"      fillcolor={_q(FUSED_FILL)}; color={_q(FUSED_LINE)}; fontcolor={_q(FUSED_LINE)};"]
            for inner in block.ops:
                if inner.name == YIELD:
                    for r, v in zip(op.results, inner.operands):
                        self.node_of[r] = self.node_of.get(v)
                    continue
                nid = self.op_node(inner, "      ")
                edges_out += [(v, nid) for v in inner.operands]   # block args map to the operands' nodes
            self.lines.append("    }")


def to_dot(stages: Stages) -> str:
    """The dot text of the optimized forward and backward functions of ``stages``."""
    from .passes.autodiff import NUM_OUTPUTS, WRT
    if stages.optimized is None:
        raise StageError("the graph needs the optimized stage")
    if stages.custom:
        raise StageError("gradc graph draws the default pipeline (--pipeline is not supported here)")
    fwd, bwd = stages.optimized_forward, stages.optimized_backward
    kernel_names = {k.op: k.name for k in stages.kernels("optimized")}
    title = (f"@{stages.name}: forward and backward after fuse (memory policy {stages.memory})" if bwd is not None
             else f"@{stages.name} after fuse (forward only: no argument requires grad)")
    lines = [f"digraph {_q(stages.name)} {{",
             f"  label={_q(title)};",
             "  labelloc=t; fontname=\"Helvetica\"; rankdir=TB; newrank=true; compound=true;",
             "  node [fontname=\"Helvetica\", fontsize=10]; edge [fontname=\"Helvetica\", fontsize=9];"]
    node_of: dict = {}
    edges: list = []
    fw = _Writer(fwd, "f", lines, node_of)
    n_out = fwd.attrs.get(NUM_OUTPUTS, len(fwd.outputs)) if bwd is not None else len(fwd.outputs)
    lines += ["  subgraph cluster_forward {",
              f"    label={_q('forward @' + fwd.name)}; style=rounded; color=\"#555555\";"]
    for a in fwd.args:
        grad = " (requires grad)" if stages.wrt and fwd.args.index(a) in stages.wrt else ""
        node_of[a] = fw.new_node(f"{fw.namer[a]}\n{_ty(a)}{grad}", "    ", shape="ellipse")
    fw.body(kernel_names, edges)
    out_nodes = []
    for k, v in enumerate(fwd.outputs[:n_out]):
        out_nodes.append(fw.new_node(f"output {k}\n{_ty(v)}", "    ", shape="box", style="bold"))
        edges.append((v, out_nodes[-1]))
    lines.append("  }")
    w_edges = [(fw, edges)]
    if bwd is not None:
        residuals = fwd.outputs[n_out:]
        lines.append("  // residuals: values saved by forward for backward")
        res_nodes, bnamer = [], Namer(bwd)
        for k, (v, arg) in enumerate(zip(residuals, bwd.args)):
            is_input = v in fwd.args
            label = f"saved {bnamer[arg]}\n{_ty(v)}, {v.type.nbytes} B" + (" (input)" if is_input else "")
            style = _attrs(label=label, shape="cylinder", style="filled", color=RESIDUAL,
                           fillcolor=RESIDUAL_INPUT_FILL if is_input else RESIDUAL_FILL, tooltip="residual")
            lines.append(f"  r{k} {style};")
            res_nodes.append(f"r{k}")
        bw = _Writer(bwd, "b", lines, node_of)
        b_edges: list = []
        lines += ["  subgraph cluster_backward {",
                  f"    label={_q('backward @' + bwd.name)}; style=rounded; color=\"#555555\";"]
        cotangents = []
        for k, a in enumerate(bwd.args):
            if k < len(residuals):
                node_of[a] = res_nodes[k]
            else:
                node_of[a] = bw.new_node(f"{bw.namer[a]}\ngrad of output {k - len(residuals)}\n{_ty(a)}",
                                         "    ", shape="ellipse")
                cotangents.append(node_of[a])
        bw.body(kernel_names, b_edges)
        wrt = bwd.attrs.get(WRT, stages.wrt)
        for k, v in enumerate(bwd.outputs):
            name = fw.namer[fwd.args[wrt[k]]] if k < len(wrt) else f"#{k}"
            out = bw.new_node(f"grad {name}\n{_ty(v)}", "    ", shape="box", style="bold")
            b_edges.append((v, out))
        lines.append("  }")
        # each cotangent is the incoming gradient of a floating output (in output order)
        float_outs = [n for n, v in zip(out_nodes, fwd.outputs) if v.type.dtype.is_floating_point]
        for src, ct in zip(float_outs, cotangents):
            lines.append(f"  {src} -> {ct} {_attrs(style='dotted', color='#777777', label='its gradient')};")
        for k, v in enumerate(residuals):   # forward -> residual
            src = node_of.get(v)
            if src is not None:
                lines.append(f"  {src} -> r{k} {_attrs(color=RESIDUAL, penwidth='2', label='saved')};")
        w_edges.append((bw, b_edges))
    for w, es in w_edges:
        for v, dst in es:
            residual = (node_of.get(v) or "").startswith("r")
            w.edge(v, dst, **(dict(color=RESIDUAL, style="dashed") if residual else {}))
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(text: str, fmt: str, out: str) -> tuple[str, str | None]:
    """Write ``text`` (dot) as ``fmt`` to ``out``; returns (path written, note for stderr or None)."""
    if fmt not in FORMATS:
        raise StageError(f"unknown format '{fmt}' (expected one of {', '.join(FORMATS)})")
    if fmt != "dot":
        exe = shutil.which("dot")
        if exe is not None:
            try:
                proc = subprocess.run([exe, f"-T{fmt}", "-o", out], input=text.encode(), capture_output=True,
                                      timeout=120)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise StageError(f"running Graphviz 'dot' failed: {e}") from None
            if proc.returncode != 0:
                msg = " ".join(proc.stderr.decode(errors="replace").split()) or f"exit status {proc.returncode}"
                raise StageError(f"Graphviz 'dot -T{fmt}' failed: {msg}")
            return out, None
        root, _ = os.path.splitext(out)
        dot_path = root + ".dot"
        _write(dot_path, text)
        return dot_path, (f"Graphviz 'dot' is not installed, so no {fmt} was made; wrote the graph as dot text "
                          f"to {dot_path} (install graphviz, or render it with any Graphviz viewer)")
    _write(out, text)
    return out, None


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise StageError(f"cannot write '{path}': {e.strerror or e}") from None

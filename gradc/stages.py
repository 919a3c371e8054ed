"""Every stage of the gradc pipeline for one Python function, as objects and as text.

This module owns the bridge from "a Python function and its argument specs" to
the IR at each stage, for ``gradc dump-ir``, ``gradc graph`` and
``gradc explain-memory``. It runs the same passes, in the same order, as
``@gradc.compile`` (``gradc.compile._Specialization``)::

    trace -> autodiff{wrt=<args marked :grad>} -> decompose,canonicalize,cse,dce
          -> partition{policy=<memory> free-inputs=<the inputs eager autograd saves>} -> fuse

(``@gradc.compile(backward="separate")``; for a function returning one 0-d float tensor
its default runs the ``precomputed`` stage instead: the adjoint with a cotangent of 1,
``precompute-grads`` then ``decompose,canonicalize,cse,dce,fuse``, loss and gradients in one pass)

each through the PassManager (so ``print_ir_after_all`` prints MLIR-style
headers), keeping a copy of the IR after each step:

========= ===============================================================
traced    the traced function
adjoint   the joint forward+backward function after autodiff and cleanup
forward   the forward function after partition, before fuse
backward  the backward function after partition, before fuse
optimized forward and backward after fuse (what the executor runs)
precomputed loss and gradients in one fused function (scalar losses; see above)
kernels   kernel IR of each ``gradc.fused`` op (and each matmul) of what ``@gradc.compile``
          runs: ``precomputed`` for a scalar loss unless ``backward="separate"``, else
          ``optimized``; each followed by its CPU loop schedule as comments
llvm      LLVM IR of those kernels for the host CPU
ptx       PTX of those kernels (no GPU needed; ``sm`` picks the target)
========= ===============================================================

Without an argument marked ``:grad`` there is no adjoint or backward:
``canonicalize,cse,dce`` then ``fuse`` run on the traced function (as
``@gradc.compile`` does) and ``forward`` is the cleaned-up function before fuse.
A custom ``pipeline`` replaces all of this: the pipeline runs on the traced
function and its result is the ``optimized`` stage.

``parse_arg`` reads the CLI's ``NAME=DTYPE[DIMS][:grad]`` argument syntax and
``load_target`` imports ``FILE.py:FUNC``; both raise ``StageError`` (one line).
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
from dataclasses import dataclass, field

from . import dtypes
from .ir.clone import clone_function
from .ir.core import FUSED, Function, Module
from .ir.printer import print_function, print_module
from .ir.tracer import ArgSpec, trace

BACKWARD_MODES = ("auto", "separate", "precompute")     # as @gradc.compile(backward=...)
STAGES = ("traced", "adjoint", "forward", "backward", "optimized", "precomputed", "kernels", "llvm", "ptx")
OPTIMIZE = "decompose,canonicalize,cse,dce"     # what gradc.compile.optimize runs (OPTIMIZE_PIPELINE)
DTYPES = {"f32": dtypes.float32, "f64": dtypes.float64, "i64": dtypes.int64, "i1": dtypes.bool_,
          "float32": dtypes.float32, "float64": dtypes.float64, "int64": dtypes.int64, "bool": dtypes.bool_}
_ARG_RE = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*\[([^\]]*)\]\s*(:\s*\w+)?\s*")
_SM_RE = re.compile(r"sm_\d{2,3}[a-z]?")


class StageError(Exception):
    """A user-facing problem (bad input, a pass or a lowering that failed): one line."""


def _one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


# ---- inputs --------------------------------------------------------------------------------------
def parse_arg(text: str) -> ArgSpec:
    """``'x=f32[2,2]:grad'`` -> ``ArgSpec('x', (2, 2), float32, True)``; ``'w=f64[]'`` is a scalar."""
    usage = "expected NAME=DTYPE[DIMS][:grad], e.g. x=f32[2,2]:grad or w=f32[]"
    m = _ARG_RE.fullmatch(text)
    if m is None:
        raise StageError(f"bad --arg '{text}': {usage}")
    name, dt, dims, flag = m.groups()
    if dt not in DTYPES:
        raise StageError(f"bad --arg '{text}': unknown dtype '{dt}' (expected f32, f64, i64 or i1)")
    try:
        shape = tuple(int(d) for d in dims.replace(" ", "").split(",") if d != "")
    except ValueError:
        raise StageError(f"bad --arg '{text}': dims must be non-negative integers, {usage}") from None
    if any(d < 0 for d in shape):
        raise StageError(f"bad --arg '{text}': dims must be non-negative integers")
    grad = False
    if flag is not None:
        if flag[1:].strip() != "grad":
            raise StageError(f"bad --arg '{text}': unknown flag '{flag[1:].strip()}' (only ':grad')")
        grad = True
    dtype = DTYPES[dt]
    if grad and not dtype.is_floating_point:
        raise StageError(f"bad --arg '{text}': only floating point arguments can be marked :grad")
    return ArgSpec(name, shape, dtype, grad)


def format_arg(spec: ArgSpec) -> str:
    """The inverse of ``parse_arg``."""
    dims = ",".join(map(str, spec.shape))
    return f"{spec.name}={dtypes.as_dtype(spec.dtype).ir_name}[{dims}]{':grad' if spec.requires_grad else ''}"


def load_target(target: str):
    """Import ``FILE.py:FUNC``; returns ``(callable, memory policy or None, backward mode or None)``.

    A ``@gradc.compile``d function is unwrapped to its Python function, and its
    ``memory`` and ``backward`` options are returned so the CLI can default to them."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise StageError(f"expected FILE.py:FUNC, got '{target}'")
    if not os.path.isfile(path):
        raise StageError(f"no such file: '{path}'")
    modname = "_gradc_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise StageError(f"cannot import '{path}' (is it a Python file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module     # as an import would (dataclasses, pickling look it up)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:
        sys.modules.pop(modname, None)
        raise StageError(f"importing '{path}' failed: {_one_line(e)}") from None
    finally:
        sys.path.pop(0)
    if not hasattr(module, name):
        funcs = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
                       and getattr(v, "__module__", None) == modname)
        hint = f" (functions there: {', '.join(funcs)})" if funcs else ""
        raise StageError(f"'{path}' has no function '{name}'{hint}")
    obj = getattr(module, name)
    from .compile import CompiledFunction
    if isinstance(obj, CompiledFunction):
        if obj.fn is None:
            raise StageError(f"'{name}' is a compiled IR function, not a Python function")
        return obj.fn, obj.memory, obj.backward
    if not callable(obj):
        raise StageError(f"'{name}' in '{path}' is a {type(obj).__name__}, not a function")
    return obj, None, None


def bind_args(fn, specs: list[ArgSpec]) -> list:
    """Positional arguments for ``trace``: an ``ArgSpec`` per described parameter, the default
    value for the others (they are baked into the trace)."""
    name = getattr(fn, "__name__", "function")
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return list(specs)
    by_name = {}
    for s in specs:
        if s.name in by_name:
            raise StageError(f"--arg '{s.name}' given twice")
        by_name[s.name] = s
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    sig = f"{name}({', '.join(p.name for p in positional)})"
    out = []
    for p in positional:
        if p.name in by_name:
            out.append(by_name.pop(p.name))
        elif p.default is not p.empty:
            out.append(p.default)
        else:
            raise StageError(f"missing --arg for parameter '{p.name}' of {sig}")
    if by_name:
        if any(p.kind == p.VAR_POSITIONAL for p in params):
            out.extend(by_name.values())   # extra --args fill *args, in the order given
        else:
            raise StageError(f"{sig} has no parameter '{next(iter(by_name))}'")
    return out


# ---- the stages ----------------------------------------------------------------------------------
@dataclass
class KernelInfo:
    """One kernel of the optimized IR: the op it comes from and its kernel IR (or why not)."""
    name: str
    function: str            # the IR function holding the op
    op: object               # the gradc.fused / gradc.matmul op
    kernel: object = None    # codegen.kernel_ir.Kernel, None when it cannot be lowered
    error: str | None = None

    @property
    def header(self) -> str:
        where = f" at {self.op.loc}" if self.op.loc else ""
        note = " (on the CPU, matmuls call BLAS when NumPy has one)" if self.op.name != FUSED else ""
        return f"kernel {self.name}: {self.op.name} in @{self.function}{where}{note}"


@dataclass
class Stages:
    """The IR of one function at every stage (see the module docstring)."""
    name: str
    specs: list
    memory: str
    pipeline: str                            # the pass pipeline text that ran after tracing
    traced: Function
    wrt: list = field(default_factory=list)
    adjoint: Function | None = None
    forward: Function | None = None          # after partition, before fuse
    backward: Function | None = None
    optimized: Module | None = None          # after fuse
    precomputed: Module | None = None        # scalar losses: loss and gradients in one function
    custom: bool = False                     # a --pipeline replaced the default one
    backward_mode: str = "auto"              # as @gradc.compile(backward=...): which IR the kernels come from
    free_inputs: list | None = None          # the inputs the partition saves at no cost (None: all)
    _kernels: dict = field(default_factory=dict)

    # -- objects --
    @property
    def optimized_forward(self) -> Function:
        return self.optimized.functions[0]

    @property
    def optimized_backward(self) -> Function | None:
        return self.optimized.functions[1] if self.backward is not None else None

    def partition(self, fused: bool = True):
        """A ``passes.partition.Partition`` of the (fused) forward and backward functions."""
        from .passes.autodiff import NUM_OUTPUTS
        from .passes.partition import Partition
        if self.backward is None:
            raise StageError("no backward: mark an argument :grad (e.g. --arg x=f32[2,2]:grad)")
        fwd, bwd = (self.optimized_forward, self.optimized_backward) if fused else (self.forward, self.backward)
        residuals = fwd.outputs[fwd.attrs[NUM_OUTPUTS]:]
        saved_inputs = [k for k, v in enumerate(residuals) if v in fwd.args]
        return Partition(fwd, bwd, [v.type for v in residuals], saved_inputs)

    def kernel_source(self) -> str:
        """The stage whose fused ops the kernel stages lower: what ``@gradc.compile`` runs,
        ``precomputed`` for a scalar loss (unless ``backward="separate"``), else ``optimized``."""
        if self.backward_mode != "separate" and self.precomputed is not None and not self.custom:
            return "precomputed"
        return "optimized"

    def kernels(self, source: str | None = None) -> list[KernelInfo]:
        """Kernel IR for each fused op and each matmul of stage ``source`` ("optimized" or
        "precomputed"; default ``kernel_source()``), lowered once."""
        source = source or self.kernel_source()
        if source not in self._kernels:
            self._kernels[source] = _lower_kernels(getattr(self, source))
        return self._kernels[source]

    # -- text --
    def text(self, stage: str, *, sm: str = "sm_80", llvm_optimized: bool = False) -> str:
        if stage not in STAGES:
            raise StageError(f"unknown stage '{stage}' (expected one of {', '.join(STAGES)})")
        if stage == "traced":
            return print_function(self.traced)
        if stage in ("adjoint", "forward", "backward"):
            return print_function(self._function(stage))
        if stage == "optimized":
            return print_module(self.optimized)
        if stage == "precomputed":
            if self.precomputed is None:
                raise StageError("stage 'precomputed' needs an argument marked :grad and a function returning "
                                 "one 0-d floating point tensor")
            return print_module(self.precomputed)
        if stage == "kernels":
            return self._kernel_text("//", _kernel_with_schedule)
        if stage == "llvm":
            from .codegen.llvm_cpu import emit_llvm
            return self._kernel_text(";", lambda k: emit_llvm(k.kernel, optimized=llvm_optimized))
        if not _SM_RE.fullmatch(sm):
            raise StageError(f"bad --sm '{sm}' (expected sm_NN, e.g. sm_80 or sm_90)")
        from .codegen.ptx import emit_ptx
        return self._kernel_text("//", lambda k: emit_ptx(k.kernel, sm=sm))

    def _function(self, stage: str) -> Function:
        if self.custom:
            raise StageError(f"stage '{stage}' is not available with --pipeline "
                             "(use traced, optimized, kernels, llvm or ptx)")
        f = getattr(self, stage)
        if f is None:
            raise StageError(f"stage '{stage}' needs an argument marked :grad (e.g. --arg x=f32[2,2]:grad)")
        return f

    def _kernel_text(self, comment: str, render) -> str:
        source = self.kernel_source()
        what = ("loss and gradients computed together, as @gradc.compile runs a scalar loss; --backward "
                "separate shows the optimized forward and backward" if source == "precomputed"
                else "the --pipeline result" if self.custom
                else "forward and backward" if self.optimized_backward is not None else "forward only")
        chunks = [f"{comment} kernels of the {source} stage ({what})\n"]
        for k in self.kernels():
            head = f"{comment} ----- {k.header} -----\n"
            if k.kernel is None:
                chunks.append(f"{head}{comment} not lowerable, runs interpreted: {k.error}\n")
                continue
            try:
                body = render(k)
            except Exception as e:   # a lowering the backend does not support
                body = f"{comment} lowering failed: {_one_line(e)}"
            chunks.append(head + body.rstrip("\n") + "\n")
        if len(chunks) == 1:
            return f"{comment} no kernels: the {source} IR has no gradc.fused or gradc.matmul ops\n"
        return "\n".join(chunks)


def _kernel_with_schedule(info) -> str:
    """A kernel's IR followed by its CPU loop schedule as comments."""
    from .codegen.kernel_ir import match_contraction
    from .codegen.llvm_cpu import describe_schedule
    if match_contraction(info.kernel) is not None:
        lines = ["cpu: a BLAS call (matmul_cpu)"]
    else:
        lines = describe_schedule(info.kernel)
    return str(info.kernel) + "\n" + "\n".join(f"// {line}" for line in lines)


def default_pipeline(wrt, memory: str = "min-memory", free_inputs=None) -> str:
    """The pipeline text ``@gradc.compile`` runs after tracing (``free_inputs``: the partition's,
    ``eager_graph.partition_free_inputs``)."""
    if not wrt:
        return f"{OPTIMIZE},fuse"
    return f"autodiff{{wrt={','.join(map(str, wrt))}}},{OPTIMIZE},{_partition_pass(memory, free_inputs)},fuse"


def _partition_pass(memory: str, free_inputs) -> str:
    if free_inputs is None:
        return f"partition{{policy={memory}}}"
    return f"partition{{policy={memory} free-inputs={','.join(map(str, free_inputs)) or 'none'}}}"


def build(fn, specs, *, name: str | None = None, memory: str = "min-memory", pipeline: str | None = None,
          until: str = "ptx", print_ir_after_all: bool = False, stream=None, backward: str = "auto") -> Stages:
    """Trace ``fn`` on ``specs`` (as given to ``ir.tracer.trace``) and run the pipeline.

    ``until`` stops after the pass that produces that stage (later stages stay None);
    ``pipeline`` replaces the default pipeline (see the module docstring)."""
    from .passes.manager import PassError, parse_pipeline
    from .passes.partition import POLICIES
    if memory not in POLICIES:
        raise StageError(f"unknown memory policy '{memory}' (expected one of {', '.join(POLICIES)})")
    if backward not in BACKWARD_MODES:
        raise StageError(f"unknown backward mode '{backward}' (expected one of {', '.join(BACKWARD_MODES)})")
    if until not in STAGES:
        raise StageError(f"unknown stage '{until}' (expected one of {', '.join(STAGES)})")
    if pipeline is not None:
        try:
            parse_pipeline(pipeline)   # report an unknown pass before tracing
        except (PassError, ValueError) as e:
            raise StageError(str(e)) from None
    try:
        traced = trace(fn, list(specs), name=name, lift_captured=True)     # as @gradc.compile traces
    except Exception as e:
        raise StageError(f"tracing {name or getattr(fn, '__name__', 'function')} failed: {_one_line(e)}") from None
    from .passes.autodiff import default_wrt
    wrt = default_wrt(traced)
    run = _Runner(print_ir_after_all, stream)
    if pipeline is not None:
        module = run(Module([clone_function(traced)]), pipeline)
        return Stages(traced.name, list(specs), memory, pipeline, traced, wrt, optimized=module, custom=True,
                      backward_mode=backward)
    from .eager_graph import partition_free_inputs
    free = partition_free_inputs(traced)
    st = Stages(traced.name, list(specs), memory, default_pipeline(wrt, memory, free), traced, wrt,
                backward_mode=backward, free_inputs=free)
    order = STAGES.index(until)
    if order == 0:
        return st
    if not wrt:   # forward only, as gradc.compile does without requires_grad
        st.forward = run(Module([clone_function(traced)]), OPTIMIZE).functions[0]
        if order >= STAGES.index("optimized"):
            st.optimized = run(Module([clone_function(st.forward)]), "fuse")
        return st
    st.adjoint = run(Module([clone_function(traced)]),
                     f"autodiff{{wrt={','.join(map(str, wrt))}}},{OPTIMIZE}").functions[0]
    if order >= STAGES.index("forward"):
        st.forward, st.backward = run(Module([clone_function(st.adjoint)]),
                                      _partition_pass(memory, free)).functions
    if order >= STAGES.index("optimized"):
        st.optimized = run(Module([clone_function(st.forward), clone_function(st.backward)]), "fuse")
    from .passes.precompute import is_scalar_loss
    from .ops.registry import RANDOM
    wanted = until == "precomputed" or backward != "separate"
    draws = any(op.has_trait(RANDOM) for op in traced.body.ops)     # as @gradc.compile: separate backward
    if order >= STAGES.index("precomputed") and wanted and is_scalar_loss(traced) and not draws:
        st.precomputed = run(Module([clone_function(st.adjoint)]), f"precompute-grads,{OPTIMIZE},fuse")
    if backward == "precompute" and order > STAGES.index("precomputed") and st.precomputed is None:
        raise StageError(f"--backward precompute: {traced.name} must return one 0-d floating point tensor")
    return st


class _Runner:
    """Runs a pipeline on a module through the PassManager, turning failures into StageError."""

    def __init__(self, print_ir_after_all: bool, stream):
        self.print_ir_after_all = print_ir_after_all
        self.stream = stream if stream is not None else sys.stderr

    def __call__(self, module: Module, pipeline: str) -> Module:
        from .passes.manager import PassError, PassManager
        try:
            pm = PassManager.parse(pipeline, print_ir_after_all=self.print_ir_after_all, stream=self.stream)
        except (PassError, ValueError) as e:
            raise StageError(str(e)) from None
        try:
            pm.run(module)
        except Exception as e:
            failing = pm.current.name if getattr(pm, "current", None) is not None else "?"
            raise StageError(f"pass '{failing}' failed: {_one_line(e)}") from None
        return module


def _lower_kernels(module: Module) -> list[KernelInfo]:
    from .codegen.kernel_ir import build_matmul
    from .codegen.lower_fused import Unlowerable, lower_fused
    out = []
    for func in module.functions:
        counts = {"fused": 0, "matmul": 0}
        for op in func.body.ops:
            if op.name not in (FUSED, "gradc.matmul"):
                continue
            kind = "fused" if op.name == FUSED else "matmul"
            info = KernelInfo(f"{func.name}_{kind}{counts[kind]}", func.name, op)
            counts[kind] += 1
            try:
                if op.name == FUSED:
                    info.kernel = lower_fused(op, name=info.name)
                else:
                    a, b = (tuple(v.type.shape) for v in op.operands)
                    dt = op.operands[0].type.dtype
                    if not dt.is_floating_point:
                        raise NotImplementedError(f"integer matmul ({dt.name}) runs with NumPy")
                    info.kernel = build_matmul(info.name, a, b, dt.ir_name)
            except (Unlowerable, NotImplementedError, ValueError) as e:
                info.error = str(e)
            out.append(info)
    return out


def from_cli(target: str, args: list[str], **kw) -> Stages:
    """``build`` for ``FILE.py:FUNC`` and ``--arg`` strings (``memory=None``: the function's
    ``@gradc.compile(memory=...)`` or min-memory)."""
    fn, compiled_memory, compiled_backward = load_target(target)
    specs = bind_args(fn, [parse_arg(a) for a in args])
    if kw.get("memory") is None:
        kw["memory"] = compiled_memory or "min-memory"
    if kw.get("backward") is None:
        kw["backward"] = compiled_backward or "auto"
    return build(fn, specs, **kw)

"""The ``gradc`` command line: ``gradc <command> ...`` with argparse subcommands.

Commands (``gradc COMMAND --help`` for each):

- ``opt``: IR text through a pass pipeline, like mlir-opt (below);
- ``dump-ir FILE.py:FUNC --arg x=f32[2,2]:grad ... [--stage S]``: the IR of a
  Python function at any stage of ``@gradc.compile``'s pipeline (``gradc.stages``);
- ``graph FILE.py:FUNC --arg ... [--format dot|svg|png] [-o OUT]``: a Graphviz
  picture of the forward and backward graphs (``gradc.graph``);
- ``explain-memory FILE.py:FUNC --arg ... [--memory POLICY]``: the buffers saved
  for backward and the memory peaks (``gradc.memory_report``);
- ``demo``: train an MLP on two spirals with a compiled loss (``gradc.demo``).

Every error (bad arguments included) is one line on stderr,
``gradc COMMAND: error: ...``, with exit status 2.

``gradc opt [FILE|-] -p 'cse,dce'`` works like mlir-opt: IR text in, IR text out.
The input is parsed and verified, the pipeline runs, the result is verified and
printed. ``--split-input-file`` processes each ``// -----``-separated chunk on
its own and separates the outputs the same way; ``--verify-diagnostics`` checks
``// expected-error {{...}}`` / ``// expected-error@+N {{...}}`` / ``@-N``
annotations against the parser's and verifier's errors instead of reporting them.
Errors print one line each on stderr (``file:line:col: error: ...``) and exit 2.

Adding a command: subclass ``Command`` (``name``, ``help``, ``add_arguments``,
``run(args) -> exit code``) and decorate it with ``@register_command``.
"""
from __future__ import annotations

import argparse
import io
import os
import re
import sys

from . import __version__


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors on one line: ``gradc dump-ir: error: ... (see --help)``."""

    def error(self, message):
        message = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class Command:
    name = ""
    help = ""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args) -> int:  # pragma: no cover - interface
        raise NotImplementedError


COMMANDS: dict[str, Command] = {}


def register_command(cls):
    COMMANDS[cls.name] = cls()
    return cls


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gradc", description="gradc: an autograd graph compiler.",
                     epilog="Run 'gradc COMMAND --help' for a command's options.")
    parser.add_argument("--version", action="version", version=f"gradc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.help, description=getattr(cmd, "description", "") or cmd.help,
                           epilog=getattr(cmd, "epilog", None), formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.add_arguments(p)
        p.set_defaults(_command=cmd)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    cmd = getattr(args, "_command", None)
    if cmd is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return cmd.run(args)
    except CLIError as e:
        print(f"gradc {cmd.name}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `gradc opt ... | head`
        return 0


# ---- input helpers -----------------------------------------------------------------------------
_SPLIT_RE = re.compile(r"^// -----\s*$")


def read_input(path: str | None) -> tuple[str, str]:
    """(text, display name) of FILE, or of stdin for '-' / no file."""
    name = "<stdin>" if path in (None, "-") else path
    try:
        if name == "<stdin>":
            return sys.stdin.read(), name
        with open(path, encoding="utf-8") as fh:
            return fh.read(), path
    except OSError as e:
        raise CLIError(f"cannot read '{name}': {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise CLIError(f"cannot read '{name}': not UTF-8 text (byte {e.start} is 0x{e.object[e.start]:02x})") from None


def split_input(text: str) -> list[tuple[str, int]]:
    """Chunks separated by ``// -----`` lines, each with the number of lines before it."""
    chunks, cur, start = [], [], 0
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if _SPLIT_RE.match(line):
            chunks.append(("".join(cur), start))
            cur, start = [], i + 1
        else:
            cur.append(line)
    chunks.append(("".join(cur), start))
    return chunks


# ---- gradc opt ---------------------------------------------------------------------------------
class _Diagnostic:
    def __init__(self, message: str, line: int | None, col: int | None):
        self.message, self.line, self.col = message, line, col


_EXPECTED_RE = re.compile(r"//\s*expected-error(?:@([+-]\d+))?\s*\{\{(.*?)\}\}")


def expected_diagnostics(chunk: str, line_offset: int) -> list[tuple[int, str, int]]:
    """``(target line, message, annotation line)`` for each expected-error annotation."""
    out = []
    for i, line in enumerate(chunk.splitlines(), start=1 + line_offset):
        for m in _EXPECTED_RE.finditer(line):
            out.append((i + int(m.group(1) or 0), m.group(2), i))
    return out


@register_command
class OptCommand(Command):
    name = "opt"
    help = "run a pass pipeline on IR text (like mlir-opt)"

    def add_arguments(self, p):
        p.add_argument("input", nargs="?", default="-", metavar="FILE", help="IR text file ('-' or none: stdin)")
        p.add_argument("-p", "--pass-pipeline", default="", metavar="PIPELINE",
                       help="comma-separated passes, e.g. 'cse,dce' or 'autodiff{wrt=0,1},cse'")
        p.add_argument("-o", "--output", default="-", metavar="OUT", help="output file ('-': stdout)")
        p.add_argument("--split-input-file", action="store_true",
                       help="process each '// -----'-separated chunk on its own")
        p.add_argument("--verify-diagnostics", action="store_true",
                       help="check '// expected-error {{...}}' annotations against the errors produced")
        p.add_argument("--verify-each", action="store_true", help="run the verifier after every pass")
        p.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass (stderr)")
        p.add_argument("--print-ir-after-change", action="store_true",
                       help="print the IR after every pass that changed it (stderr)")
        p.add_argument("--timing", action="store_true", help="report per-pass wall time (stderr)")
        p.add_argument("--list-passes", action="store_true", help="list the registered passes and exit")

    def run(self, args) -> int:
        from .passes.manager import PassError, parse_pipeline, registered_passes
        if args.list_passes:
            for name, cls in registered_passes().items():
                print(f"  {name:<16} {getattr(cls, 'summary', '')}".rstrip())
            return 0
        try:
            parse_pipeline(args.pass_pipeline)
        except PassError as e:
            raise CLIError(str(e)) from None
        text, fname = read_input(args.input)
        chunks = split_input(text) if args.split_input_file else [(text, 0)]
        outputs, failed, timings = [], False, []
        for chunk, offset in chunks:
            if args.verify_diagnostics:
                out, ok = self._check_diagnostics(args, chunk, offset, fname, timings)
            else:
                out, diag = self._process(args, chunk, offset, fname, timings)
                ok = diag is None
                if diag is not None:
                    print(_format_diag(fname, diag), file=sys.stderr)
            failed = failed or not ok
            if out is not None:
                outputs.append(out)
        result = "// -----\n".join(outputs)
        self._write(args.output, result)
        if args.timing:
            from .passes.manager import PassManager
            pm = PassManager()
            pm.timings = timings
            sys.stderr.write(pm.timing_report())
        return 2 if failed else 0

    def _process(self, args, chunk, offset, fname, timings):
        """(printed output or None, diagnostic or None) for one chunk."""
        from .ir.parser import ParseError, parse_module
        from .ir.printer import print_module
        from .ir.verifier import VerifyError, verify
        from .passes.manager import PassManager
        positions: dict = {}
        try:
            module = parse_module(chunk, filename=fname, positions=positions, line_offset=offset)
            verify(module, positions=positions)
        except ParseError as e:
            return None, _Diagnostic(e.message, e.line, e.col)
        except VerifyError as e:
            return None, _Diagnostic(e.message, e.line, e.col)
        pm = PassManager.parse(args.pass_pipeline, verify_each=args.verify_each,
                               print_ir_after_all=args.print_ir_after_all,
                               print_ir_after_change=args.print_ir_after_change, stream=sys.stderr)
        try:
            pm.run(module)
        except VerifyError as e:
            src = positions.get(e.op)
            line, col = src if src is not None else (None, None)
            return None, _Diagnostic(e.message, line, col)
        except Exception as e:  # a pass failed
            failing = pm.current.name if pm.current is not None else "?"
            return None, _Diagnostic(f"pass '{failing}' failed: {type(e).__name__}: {e}", None, None)
        finally:
            timings.extend(pm.timings)
        try:
            verify(module)
        except VerifyError as e:
            return None, _Diagnostic(f"the IR produced by '{pm.pipeline}' does not verify: {e}", None, None)
        return print_module(module), None

    def _check_diagnostics(self, args, chunk, offset, fname, timings):
        expected = expected_diagnostics(chunk, offset)
        out, diag = self._process(args, chunk, offset, fname, timings)
        produced = [diag] if diag is not None else []
        unmatched = list(expected)
        ok = True
        for d in produced:
            hit = next((e for e in unmatched if e[0] == d.line and e[1] in d.message), None)
            if hit is not None:
                unmatched.remove(hit)
            else:
                ok = False
                print(_format_diag(fname, d, prefix="unexpected error: "), file=sys.stderr)
        for line, msg, at in unmatched:
            ok = False
            print(f"{fname}:{at}: error: expected error \"{msg}\" on line {line} was not produced",
                  file=sys.stderr)
        return out, ok

    @staticmethod
    def _write(path, text):
        if path in (None, "-"):
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        try:
            with io.open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise CLIError(f"cannot write '{path}': {e.strerror or e}") from None


def _format_diag(fname: str, d: _Diagnostic, prefix: str = "") -> str:
    where = fname if d.line is None else f"{fname}:{d.line}:{d.col or 1}"
    message = " ".join(str(d.message).split("\n"))
    return f"{where}: error: {prefix}{message}"


# ---- commands on a Python function: dump-ir, graph, explain-memory --------------------------------
_ARG_HELP = ("a tensor argument of FUNC: NAME=DTYPE[DIMS], DTYPE one of f32, f64, i64, i1, ':grad' marks "
             "requires_grad (e.g. x=f32[2,2]:grad, w=f32[]); one per parameter, parameters with defaults "
             "may be left out")
_FUNCTION_EPILOG = """\
FILE.py is imported (its directory goes first on sys.path) and FUNC is traced with the
described inputs, as @gradc.compile would on tensors of those shapes. Example, with
examples/seed003.py:

  gradc {name} examples/seed003.py:loss --arg inp=f32[2,2]:grad \\
      --arg w1=f32[]:grad --arg w2=f32[]:grad --arg w3=f32[]:grad{extra}
"""


def _function_arguments(p, memory=True):
    p.add_argument("target", metavar="FILE.py:FUNC", help="the Python file and the function in it")
    p.add_argument("--arg", dest="args", action="append", default=[], metavar="NAME=DTYPE[DIMS][:grad]",
                   help=_ARG_HELP)
    if memory:
        p.add_argument("--memory", choices=("save-all", "min-memory"), default=None,
                       help="partition policy: what forward saves for backward (default: the function's "
                            "@gradc.compile(memory=...) or min-memory)")


def _stages(args, **kw):
    from .stages import StageError, from_cli
    try:
        return from_cli(args.target, args.args, memory=getattr(args, "memory", None), **kw)
    except StageError as e:
        raise CLIError(str(e)) from None


@register_command
class DumpIRCommand(Command):
    name = "dump-ir"
    help = "print the IR of a Python function at a stage of the compile pipeline"
    description = """\
Print the IR of FUNC at one stage of @gradc.compile's pipeline:

  trace -> autodiff{wrt=<:grad args>} -> canonicalize,cse,dce -> partition{policy} -> fuse -> codegen

stages: traced     the traced function
        adjoint    the joint forward+backward function (after autodiff, canonicalize, cse, dce)
        forward    forward after partition (outputs + saved residuals), before fuse
        backward   backward after partition (residuals + cotangents -> gradients), before fuse
        optimized  forward and backward after fuse (default; what the executor runs)
        kernels    kernel IR of each gradc.fused op and each matmul that @gradc.compile runs
                   (a scalar loss: those of precomputed unless --backward separate), with
                   each kernel's CPU loop schedule as comments
        llvm       LLVM IR of those kernels for the host CPU
        ptx        PTX of those kernels (no GPU needed; --sm picks the target)"""
    epilog = _FUNCTION_EPILOG.format(name="dump-ir", extra=" --stage kernels")

    def add_arguments(self, p):
        from .stages import STAGES
        _function_arguments(p)
        p.add_argument("--stage", choices=STAGES, default="optimized", metavar="STAGE",
                       help=f"one of {', '.join(STAGES)} (default: optimized)")
        p.add_argument("--pipeline", default=None, metavar="PIPELINE",
                       help="run this pass pipeline on the traced function instead of the default one "
                            "(e.g. 'autodiff,cse,dce,partition{policy=save-all},fuse'); its result is "
                            "the optimized stage")
        p.add_argument("--print-ir-after-all", action="store_true",
                       help="print the IR after every pass (stderr), MLIR style")
        p.add_argument("--backward", choices=("auto", "separate", "precompute"), default=None,
                       help="as @gradc.compile(backward=...), which IR the kernels, llvm and ptx stages lower: "
                            "auto (a scalar loss: the precomputed stage, loss and gradients together) or "
                            "separate (the optimized forward and backward); default: the function's "
                            "@gradc.compile(backward=...) or auto")
        p.add_argument("--sm", default="sm_80", help="PTX target for --stage ptx (default: sm_80)")
        p.add_argument("--llvm-optimized", action="store_true",
                       help="--stage llvm: print the IR after LLVM's O3 and vectorization for the host CPU")
        p.add_argument("-o", "--output", default="-", metavar="OUT", help="output file ('-': stdout)")

    def run(self, args) -> int:
        from .stages import StageError
        st = _stages(args, pipeline=args.pipeline, until=args.stage, print_ir_after_all=args.print_ir_after_all,
                     stream=sys.stderr, backward=args.backward)
        try:
            text = st.text(args.stage, sm=args.sm, llvm_optimized=args.llvm_optimized)
        except StageError as e:
            raise CLIError(str(e)) from None
        OptCommand._write(args.output, text)
        return 0


@register_command
class GraphCommand(Command):
    name = "graph"
    help = "draw the forward and backward graphs (Graphviz dot, svg or png)"
    description = """\
Draw FUNC's forward and backward graphs after fuse: fused kernels are boxed clusters,
values saved for backward (residuals) are orange cylinders linked from forward to
backward. svg and png need Graphviz's 'dot' executable; without it the dot text is
written instead (OUT with a .dot suffix) and a note goes to stderr."""
    epilog = _FUNCTION_EPILOG.format(name="graph", extra=" -o loss.svg")

    def add_arguments(self, p):
        _function_arguments(p)
        p.add_argument("--format", choices=("dot", "svg", "png"), default=None,
                       help="output format (default: from OUT's suffix, else dot)")
        p.add_argument("-o", "--output", default=None, metavar="OUT",
                       help="output file (default: stdout for dot, FUNC.svg / FUNC.png otherwise)")

    def run(self, args) -> int:
        from .graph import render, to_dot
        from .stages import StageError
        fmt = args.format
        if fmt is None:
            suffix = os.path.splitext(args.output or "")[1].lstrip(".").lower()
            fmt = suffix if suffix in ("svg", "png") else "dot"
        st = _stages(args)
        try:
            text = to_dot(st)
            out = args.output
            if fmt == "dot" and out in (None, "-"):
                sys.stdout.write(text)
                return 0
            path, note = render(text, fmt, out or f"{st.name}.{fmt}")
        except StageError as e:
            raise CLIError(str(e)) from None
        if note:
            print(f"gradc graph: {note}", file=sys.stderr)
        return 0


@register_command
class ExplainMemoryCommand(Command):
    name = "explain-memory"
    help = "list the buffers saved for backward and the forward/backward memory peaks"
    description = """\
List every buffer forward saves for backward under either policy (name as in
'gradc dump-ir --stage adjoint', op, shape, dtype, bytes, source line) and whether
the chosen policy saves it or recomputes it in backward, then the bytes saved and the
peak bytes of forward, backward and after backward with and without retain_graph
(plan-buffers over the fused functions), for both policies."""
    epilog = _FUNCTION_EPILOG.format(name="explain-memory", extra=" --memory save-all")

    def add_arguments(self, p):
        _function_arguments(p)
        p.add_argument("--json", action="store_true", help="print the report as JSON")

    def run(self, args) -> int:
        import json

        from .memory_report import explain, format_report
        from .stages import StageError
        st = _stages(args, until="optimized")
        try:
            rep = explain(st)
        except StageError as e:
            raise CLIError(str(e)) from None
        sys.stdout.write(json.dumps(rep.as_dict(), indent=2) + "\n" if args.json else format_report(rep))
        return 0


# ---- gradc demo ----------------------------------------------------------------------------------
def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return v


def _non_negative_int(text):
    return 0 if text.strip() == "0" else _positive_int(text)


@register_command
class DemoCommand(Command):
    name = "demo"
    help = "train a small MLP on two spirals with a compiled loss (no download)"
    description = """\
Train a 2-H-H-2 MLP (gradc.nn) on two interleaved spirals generated in code. The loss
(forward, cross-entropy, accuracy) is a @gradc.compile'd function taking the model's
parameters as inputs; .backward() runs its compiled backward and gradc.optim.Adam steps
eagerly. Ends with the training accuracy, the compile time and the speed of compiled
against eager training steps, timed in the same run."""

    def add_arguments(self, p):
        p.add_argument("--steps", type=_positive_int, default=500, help="training steps (default: 500)")
        p.add_argument("--hidden", type=_positive_int, default=64, help="hidden layer width (default: 64)")
        p.add_argument("--seed", type=int, default=0, help="seed of the data and the weights (default: 0)")
        p.add_argument("--lr", type=float, default=0.02, help="Adam learning rate (default: 0.02)")
        p.add_argument("--points", type=_positive_int, default=200, help="points per spiral (default: 200)")
        p.add_argument("--bench-steps", type=_non_negative_int, default=50,
                       help="steps timed for each of compiled and eager (0: skip; default: 50)")
        p.add_argument("--blas-threads", type=_non_negative_int, default=1,
                       help="threads of NumPy's OpenBLAS during the demo (0: leave as is; default: 1, "
                            "faster for matrices this small)")
        p.add_argument("--plot", metavar="OUT.png", default=None,
                       help="draw the loss curve and the decision boundary (needs matplotlib)")

    def run(self, args) -> int:
        from .demo import run
        run(steps=args.steps, hidden=args.hidden, seed=args.seed, lr=args.lr, points=args.points,
            bench_steps=args.bench_steps, blas=args.blas_threads, plot=args.plot)
        return 0

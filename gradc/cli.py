"""The ``gradc`` command line: ``gradc <command> ...`` with argparse subcommands.

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
import re
import sys

from . import __version__


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


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
    parser = argparse.ArgumentParser(prog="gradc", description="gradc: an autograd graph compiler.")
    parser.add_argument("--version", action="version", version=f"gradc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, cmd in COMMANDS.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
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
    if path in (None, "-"):
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(), path
    except OSError as e:
        raise CLIError(f"cannot read '{path}': {e.strerror or e}") from None


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

"""Passes, the pass registry and the PassManager that runs pipelines of them.

Writing a pass
--------------
A pass is a small class with a kebab-case ``name`` and a ``run`` method that
rewrites one function in place and says whether it changed anything::

    from gradc.passes.manager import Pass, register_pass

    @register_pass
    class MyPass(Pass):
        name = "my-pass"
        summary = "one line for `gradc opt --help` and error messages"

        def __init__(self, threshold: int = 4):      # options, from 'my-pass{threshold=8}'
            self.threshold = threshold

        def run(self, func: Function) -> bool:       # True if func changed
            ...

A pass that needs the whole module (to add or replace functions, like autodiff
or partition) overrides ``run_on_module(module) -> bool`` instead; the default
calls ``run`` on each function. Put the pass in a module under ``gradc/passes/``:
every module there is imported the first time the registry is consulted, so
``@register_pass`` is all the wiring it needs.

Pipelines
---------
``PassManager.parse("canonicalize,cse,dce")`` builds a pipeline from text. A pass
may take options in braces, ``autodiff{wrt=0,1 name=grad}``: space-separated
``key=value`` pairs, kebab-case keys becoming snake_case keyword arguments, values
parsed as int, float, ``true``/``false``, comma lists (``0,1`` -> ``[0, 1]``) or
else strings. Unknown pass names raise ``PassError`` listing the known passes.

Running
-------
``pm.run(module_or_function)`` applies each pass in order to each function
(``run_on_module``) and returns whether anything changed. With ``verify_each``
the verifier runs after every pass (a failure names the pass); with
``print_ir_after_all`` / ``print_ir_after_change`` the IR is printed to
``stream`` after each pass (or each pass that changed it) under an MLIR-style
header ``// -----// IR Dump After cse //----- //``. ``pm.timings`` holds
``(pass name, seconds)`` per pass run and ``pm.timing_report()`` formats them.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
import threading
import time

from ..ir.core import Function, Module


class PassError(RuntimeError):
    """A pipeline could not be built (unknown pass, bad option) or a pass failed."""


class Pass:
    """Base class of every pass; see the module docstring."""

    name: str = ""
    summary: str = ""

    def run(self, func: Function) -> bool:   # pragma: no cover - interface
        """Rewrite ``func`` in place; return True if it changed."""
        raise NotImplementedError(f"pass '{self.name}' does not implement run(func)")

    def run_on_module(self, module: Module) -> bool:
        changed = False
        for f in list(module.functions):
            changed = bool(self.run(f)) or changed
        return changed

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


_REGISTRY: dict[str, type] = {}
_KEBAB_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_loaded = False
_load_lock = threading.RLock()
_import_failures: dict[str, str] = {}


def register_pass(cls: type) -> type:
    """Class decorator: make ``cls`` available to pipelines under ``cls.name``."""
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not _KEBAB_RE.fullmatch(name):
        raise ValueError(f"pass class {cls.__name__} needs a kebab-case `name`, got {name!r}")
    old = _REGISTRY.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"pass '{name}' registered twice ({old.__module__}.{old.__qualname__} and "
                         f"{cls.__module__}.{cls.__qualname__})")
    _REGISTRY[name] = cls
    return cls


def _load_pass_modules() -> None:
    """Import every module of the gradc.passes package so their passes register (once; a
    thread that comes while another imports them waits for the whole registry)."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if _loaded:
            return
        from .. import passes
        for info in pkgutil.iter_modules(passes.__path__):
            if info.name == "manager":
                continue
            modname = f"{passes.__name__}.{info.name}"
            try:
                importlib.import_module(modname)
            except Exception as e:  # keep the other passes usable; get_pass reports it
                _import_failures[modname] = f"{type(e).__name__}: {e}"
        _loaded = True


def registered_passes() -> dict[str, type]:
    """``{name: pass class}`` for every known pass, sorted by name."""
    _load_pass_modules()
    return dict(sorted(_REGISTRY.items()))


def get_pass(name: str) -> type:
    passes = registered_passes()
    if name not in passes:
        msg = f"unknown pass '{name}'; known passes: {', '.join(passes) or '(none)'}"
        if _import_failures:
            msg += " (modules that failed to import: " + "; ".join(
                f"{m}: {e}" for m, e in _import_failures.items()) + ")"
        raise PassError(msg)
    return passes[name]


# ---- pipeline text -----------------------------------------------------------------------------
def _split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside braces."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise PassError(f"unbalanced '}}' in pass pipeline '{text}'")
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise PassError(f"unbalanced '{{' in pass pipeline '{text}'")
    parts.append("".join(cur))
    return parts


def _option_value(text: str):
    if "," in text:
        return [_option_value(t) for t in text.split(",") if t != ""]
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_options(text: str, pass_name: str = "") -> dict:
    """``'wrt=0,1 max-size=3'`` -> ``{'wrt': [0, 1], 'max_size': 3}``."""
    opts = {}
    for item in text.split():
        if "=" not in item:
            raise PassError(f"bad option '{item}' for pass '{pass_name}': expected key=value")
        key, value = item.split("=", 1)
        key = key.strip().replace("-", "_")
        if not key.isidentifier():
            raise PassError(f"bad option name '{key}' for pass '{pass_name}'")
        opts[key] = _option_value(value.strip())
    return opts


def _option_problem(cls, opts, error) -> str:
    """What is wrong with the options ``opts`` of pass ``cls`` (``error``: what its constructor raised)."""
    try:
        names = list(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return str(error)
    unknown = [k.replace("_", "-") for k in opts if k not in names]
    if not unknown:
        return str(error)
    takes = f"options: {', '.join(n.replace('_', '-') for n in names)}" if names else "it takes no options"
    return f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} ({takes})"


def parse_pipeline(text: str) -> list[Pass]:
    """Pass instances for ``'cse,dce'`` / ``'autodiff{wrt=0,1},cse'``."""
    out = []
    if not text.strip():
        return out
    for item in _split_top(text.strip(), ","):
        item = item.strip()
        if not item:
            raise PassError(f"empty pass name in pass pipeline '{text}' (passes are separated by one comma)")
        m = re.fullmatch(r"([A-Za-z0-9_-]+)\s*(?:\{(.*)\})?", item, re.S)
        if m is None:
            raise PassError(f"bad pass specification '{item}' (expected name or name{{key=value ...}})")
        cls = get_pass(m.group(1))
        opts = parse_options(m.group(2) or "", m.group(1))
        try:
            out.append(cls(**opts))
        except TypeError as e:
            raise PassError(f"bad options for pass '{m.group(1)}': {_option_problem(cls, opts, e)}") from None
    return out


# ---- the manager -------------------------------------------------------------------------------
class PassManager:
    """An ordered pipeline of passes with verification, IR printing and timing."""

    def __init__(self, passes=(), *, verify_each: bool = False, print_ir_after_all: bool = False,
                 print_ir_after_change: bool = False, stream=None):
        self.passes: list[Pass] = []
        for p in passes:
            self.add(p)
        self.verify_each = verify_each
        self.print_ir_after_all = print_ir_after_all
        self.print_ir_after_change = print_ir_after_change
        self.stream = stream
        self.timings: list[tuple[str, float]] = []
        self.current: Pass | None = None   # the pass running now (for error reports)

    @classmethod
    def parse(cls, pipeline: str, **kwargs) -> "PassManager":
        return cls(parse_pipeline(pipeline), **kwargs)

    def add(self, p) -> "PassManager":
        """Append a Pass instance, a Pass class, or pipeline text."""
        if isinstance(p, str):
            self.passes.extend(parse_pipeline(p))
        elif isinstance(p, type) and issubclass(p, Pass):
            self.passes.append(p())
        elif isinstance(p, Pass):
            self.passes.append(p)
        else:
            raise TypeError(f"expected a Pass, a Pass class or pipeline text, got {type(p).__name__}")
        return self

    @property
    def pipeline(self) -> str:
        return ",".join(p.name for p in self.passes)

    def run(self, target) -> bool:
        """Run the pipeline on a Module or a Function (in place); True if anything changed.

        A Function is wrapped in a temporary Module, so functions that module passes add
        are dropped: run on a Module to keep them.
        """
        module = target if isinstance(target, Module) else Module([target])
        from ..ir.printer import print_module
        from ..ir.verifier import VerifyError, verify
        stream = self.stream if self.stream is not None else sys.stderr
        changed_any = False
        for p in self.passes:
            before = print_module(module) if self.print_ir_after_change else None
            self.current = p
            start = time.perf_counter()
            changed = bool(p.run_on_module(module))
            self.timings.append((p.name, time.perf_counter() - start))
            if self.verify_each:
                try:
                    verify(module)
                except VerifyError as e:
                    err = VerifyError(f"after pass '{p.name}': {e.message}", e.op, e.line, e.col)
                    err.errors = getattr(e, "errors", [e])
                    raise err from None
            if before is not None:
                changed = print_module(module) != before
            changed_any = changed_any or changed
            if self.print_ir_after_all or (self.print_ir_after_change and changed):
                stream.write(f"// -----// IR Dump After {p.name} //----- //\n")
                stream.write(print_module(module))
                stream.write("\n")
            self.current = None
        return changed_any

    def timing_report(self) -> str:
        """Per-pass wall time, in pipeline order, with a total."""
        total = sum(t for _, t in self.timings)
        lines = ["===-------------------------------------------------------------------------===",
                 "                         ... Pass execution timing report ...",
                 "===-------------------------------------------------------------------------===",
                 f"  Total Execution Time: {total:.4f} seconds", "",
                 "  ----Wall Time----  ----Name----"]
        for name, t in self.timings:
            pct = 100.0 * t / total if total else 0.0
            lines.append(f"  {t:.4f} ({pct:5.1f}%)  {name}")
        lines.append(f"  {total:.4f} (100.0%)  Total")
        return "\n".join(lines) + "\n"

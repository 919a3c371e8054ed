"""The errors of tracing a function into the IR (``@gradc.compile``, ``gradc dump-ir``).

``TraceError`` is what only the compiler refuses: data-dependent Python control flow, ops
whose result shape depends on values, the eager autograd API inside a traced function.  It
is a ``RuntimeError``, as PyTorch's compiler errors are.  ``TraceTypeError`` is one that is
also a ``TypeError``: a dtype the IR has no type for (float16, int32), or a function output
that is no tensor.  This module imports nothing of gradc, so eager code (``scatter``,
``counting``, ...) can raise these without import cycles.
"""


class TraceError(RuntimeError):
    """Tracing cannot express what the Python code does (data-dependent control flow, ...)."""


class TraceTypeError(TraceError, TypeError):
    """Tracing met a value the IR has no type for (a float16 tensor, a non-tensor output)."""


def add_location(e: BaseException, loc: str | None) -> None:
    """Append ``(at loc)`` (the user's ``file.py:LINE``) to the message of ``e``, in place (its
    type and traceback are kept), unless the message names it already or has a format of its
    own (a KeyError's, an OSError's several arguments)."""
    if not loc or type(e).__str__ is not BaseException.__str__ or len(e.args) != 1:
        return
    message = e.args[0]
    if isinstance(message, str) and loc not in message:
        e.args = (f"{message} (at {loc})",)

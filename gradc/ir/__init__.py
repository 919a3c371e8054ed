"""gradc's SSA IR.

- ``types``: ``TensorType`` (``tensor<2x3xf32>``); ``core``: values, ops, blocks,
  regions, functions, modules and the ``Builder``; ``clone``: deep copies;
- ``printer`` / ``parser``: the MLIR-like text form (round-trips byte for byte);
- ``verifier``: SSA dominance, op-table types and attrs, structure;
- ``interpreter``: runs IR with the op table's NumPy references (the oracle);
- ``tracer``: records a Python function over the tensor API as a Function;
- ``emitter``: ``IRTensor``, the tensor API over a Builder (used by autodiff);
- ``testing``: random tensor programs for property tests.
"""
from .core import (FUSED, RETURN, YIELD, Block, BlockArgument, Builder, Function, Module, Operation, OpResult,
                   Region, Value)
from .interpreter import InterpreterError, interpret
from .parser import ParseError, parse_function, parse_module
from .printer import print_function, print_module
from .tracer import ArgSpec, Proxy, TraceError, trace, trace_from_examples
from .types import TensorType, parse_type
from .verifier import VerifyError, verify

__all__ = ["FUSED", "RETURN", "YIELD", "ArgSpec", "Block", "BlockArgument", "Builder", "Function",
           "InterpreterError", "Module", "OpResult", "Operation", "ParseError", "Proxy", "Region", "TensorType",
           "TraceError", "Value", "VerifyError", "interpret", "parse_function", "parse_module", "parse_type",
           "print_function", "print_module", "trace", "trace_from_examples", "verify"]

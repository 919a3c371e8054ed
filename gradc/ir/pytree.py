"""What a traced function returns, as a structure and its tensors: ``flatten_output`` and
``unflatten_output``.  A compiled function (and ``gradc dump-ir``) may return tensors nested in
tuples, lists, named tuples and dicts, with None, numbers and strings beside them, as
torch.compile allows (its pytrees); the IR function's outputs are the tensors, in order."""
from __future__ import annotations


def flatten_output(out, leaves: list, tensor_types):
    """The structure of ``out``, its tensors (of ``tensor_types``) appended to ``leaves``:
    ``("leaf", k)`` for the k-th tensor; ``("seq", kind, parts)`` for a tuple, list or named
    tuple, ``("dict", type, [(key, part)])`` for a dict, nested; ``("const", value)`` for None, a
    bool, a number or a string (returned as it is).  None for anything else."""
    if isinstance(out, tensor_types):
        leaves.append(out)
        return ("leaf", len(leaves) - 1)
    if out is None or isinstance(out, (bool, int, float, str)):
        return ("const", out)
    if isinstance(out, (tuple, list)):
        parts = [flatten_output(o, leaves, tensor_types) for o in out]
        if any(p is None for p in parts):
            return None
        kind = type(out) if isinstance(out, tuple) and hasattr(out, "_fields") else type(out).__name__
        return ("seq", kind, parts)
    if isinstance(out, dict):
        parts = [(k, flatten_output(v, leaves, tensor_types)) for k, v in out.items()]
        if any(p is None for _, p in parts):
            return None
        return ("dict", type(out), parts)
    return None


def unflatten_output(tree, values):
    """``tree`` (``flatten_output``'s) rebuilt with ``values[k]`` for its k-th tensor."""
    kind = tree[0]
    if kind == "leaf":
        return values[tree[1]]
    if kind == "const":
        return tree[1]
    if kind == "seq":
        items = [unflatten_output(p, values) for p in tree[2]]
        seq_kind = tree[1]
        if seq_kind == "list":
            return items
        return tuple(items) if seq_kind == "tuple" else seq_kind(*items)
    return tree[1]((k, unflatten_output(p, values)) for k, p in tree[2])


def leaf_tree(n: int):
    """The structure of a plain tuple of ``n`` tensors."""
    return ("seq", "tuple", [("leaf", k) for k in range(n)])

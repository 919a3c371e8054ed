"""``torch.func``: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call.

The derivative transforms are built on ``autograd.grad``: the differentiated arguments become fresh
leaves (views of themselves when they already require grad, and then the result keeps its graph),
so transforms nest (``jacfwd(jacrev(f))``, ``grad(grad(f))``) and compose with ordinary autograd
as PyTorch's do.  Forward-mode products use the double-backward trick of ``autograd.functional``.

``vmap`` calls the function once per index of the mapped dims and stacks the results: the values and
gradients are PyTorch's, but it is a Python loop, not a batched kernel, and since each call sees one
sample, ``.item()`` and data-dependent control flow work where PyTorch's vmap refuses them.
``randomness`` is PyTorch's: 'error' refuses random draws, 'different' draws anew per sample,
'same' replays one draw of the default generator for every sample.
"""
from __future__ import annotations

import contextlib

from .autograd.grad_mode import enable_grad

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call"]


# ---- pytrees: tensors in (nested) tuples, lists and dicts ------------------------------------------
def _flatten(tree):
    """(leaves, rebuild) where rebuild(new_leaves) gives the same structure with new leaves."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(t) for t in tree]
        sizes = [len(leaves) for leaves, _ in parts]

        def rebuild(leaves, kind=type(tree)):
            out, at = [], 0
            for (_, sub), n in zip(parts, sizes):
                out.append(sub(leaves[at:at + n]))
                at += n
            return tuple(out) if kind is tuple else (kind(*out) if hasattr(kind, "_fields") else kind(out))
        return [leaf for leaves, _ in parts for leaf in leaves], rebuild
    if isinstance(tree, dict):
        keys = list(tree)
        leaves, rebuild_values = _flatten([tree[k] for k in keys])
        return leaves, lambda new, kind=type(tree): kind(zip(keys, rebuild_values(new)))
    return [tree], lambda leaves: leaves[0]


def _is_tensor(x):
    from .tensor_api import is_tensor_like     # eager tensors and, under @gradc.compile, traced ones
    return is_tensor_like(x)


# ---- derivative transforms ------------------------------------------------------------------------
def _argnums_tuple(argnums, nargs, who):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnum={n}, but only {nargs} positional inputs")
    return tuple(n % nargs for n in nums)


def _differentiable_leaves(args, argnums, who):
    """Replace the tensors of the selected arguments by fresh leaves; returns (new args, per-argnum
    (leaves, rebuild), keep_graph)."""
    nums = _argnums_tuple(argnums, len(args), who)
    args = list(args)
    selected, keep_graph = [], False
    for n in nums:
        leaves, rebuild = _flatten(args[n])
        fresh = []
        for leaf in leaves:
            if not _is_tensor(leaf):
                raise RuntimeError(f"{who}: Expected arg {n} to be a Tensor or a (nested) tuple/list/dict of "
                                   f"Tensors, got {type(leaf)}")
            if leaf.requires_grad:
                keep_graph = True
                fresh.append(leaf.view_as(leaf))
            else:
                fresh.append(leaf.detach().requires_grad_(True))
        args[n] = rebuild(fresh)
        selected.append((fresh, rebuild))
    return args, selected, keep_graph


def _grads_for(outputs, cotangents, selected, keep_graph, retain_graph=None):
    """d(outputs . cotangents) / d(each selected leaf), zeros where an output does not reach it."""
    from .autograd import grad as autograd_grad
    from .factories import zeros_like
    wanted = [leaf for fresh, _ in selected for leaf in fresh]
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    grads = (autograd_grad([o for o, _ in pairs], wanted, [c for _, c in pairs], retain_graph=retain_graph,
                           create_graph=keep_graph, allow_unused=True) if pairs else (None,) * len(wanted))
    grads = [g if g is not None else zeros_like(leaf) for g, leaf in zip(grads, wanted)]
    out, at = [], 0
    for fresh, rebuild in selected:
        out.append(rebuild(grads[at:at + len(fresh)]))
        at += len(fresh)
    return out


def _settle(tree, keep_graph):
    leaves, rebuild = _flatten(tree)
    return rebuild([leaf.detach() if _is_tensor(leaf) and not keep_graph else leaf for leaf in leaves])


def grad_and_value(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to ``argnums`` and its value: (grad, value), or
    ((grad, (value, aux)) with ``has_aux``)."""
    def wrapper(*args, **kwargs):
        from .factories import ones_like
        args, selected, keep_graph = _differentiable_leaves(args, argnums, "grad_and_value(f)(*args)")
        with enable_grad():
            out = func(*args, **kwargs)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
        if not _is_tensor(out):
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
        if out.ndim != 0:
            raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                               f"with {out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        grads = _grads_for([out], [ones_like(out)], selected, keep_graph)
        grads = grads[0] if isinstance(argnums, int) else tuple(grads)
        value = _settle(out, keep_graph)
        return (grads, (value, _settle(aux, keep_graph))) if has_aux else (grads, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``func``'s gradient with respect to argument ``argnums`` (an int or a tuple of them)."""
    inner = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn): vjp_fn(cotangents) gives the cotangent of every primal, as a tuple."""
    args, selected, keep_graph = _differentiable_leaves(primals, tuple(range(len(primals))), "vjp(f, *primals)")
    with enable_grad():
        out = func(*args)
    aux = None
    if has_aux:
        out, aux = out
    out_leaves, _ = _flatten(out)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        ct_leaves, _ = _flatten(cotangents)
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               "outputs to the function.")
        return tuple(_grads_for(out_leaves, ct_leaves, selected,
                                keep_graph if create_graph is None else create_graph, retain_graph))
    value = _settle(out, keep_graph)
    return (value, vjp_fn, _settle(aux, keep_graph)) if has_aux else (value, vjp_fn)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J tangents)."""
    from .autograd.functional import _forward_products
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           "structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {_structure(primals)} and tangents with structure "
                           f"{_structure(tangents)}")
    args, selected, keep_graph = _differentiable_leaves(primals, tuple(range(len(primals))), "jvp(f, primals, ...)")
    with enable_grad():
        out = func(*args)
    aux = None
    if has_aux:
        out, aux = out
    out_leaves, rebuild = _flatten(out)
    inputs = tuple(leaf for fresh, _ in selected for leaf in fresh)
    tangent_leaves = tuple(leaf for t in tangents for leaf in _flatten(t)[0])
    products = _forward_products(tuple(out_leaves), inputs, tangent_leaves, strict, keep_graph)
    result = (_settle(out, keep_graph), _settle(rebuild(list(products)), keep_graph))
    return result + (_settle(aux, keep_graph),) if has_aux else result


def _structure(tree):
    if isinstance(tree, (tuple, list)):
        return f"{type(tree).__name__}(" + ", ".join(_structure(t) for t in tree) + ")"
    return "*"


def _jacobian(func, argnums, has_aux, forward):
    """jacrev/jacfwd: for each output leaf, a Jacobian per selected argument leaf, of shape
    output.shape + input.shape (rows by backward passes, or columns by forward products)."""
    def wrapper(*args, **kwargs):
        from .factories import zeros_like
        from .tensor_api import stack
        args, selected, keep_graph = _differentiable_leaves(args, argnums, "jacrev(f, argnums)")
        with enable_grad():
            out = func(*args, **kwargs)
        aux = None
        if has_aux:
            out, aux = out
        out_leaves, rebuild_out = _flatten(out)
        inputs = [leaf for fresh, _ in selected for leaf in fresh]
        blocks = []                                 # blocks[o][i]
        for o in out_leaves:
            if forward:
                from .autograd.functional import _forward_products
                columns = [[] for _ in inputs]
                for i, x in enumerate(inputs):
                    for j in range(x.nelement()):
                        v = [zeros_like(y) for y in inputs]
                        v[i].view(-1)[j] = 1.0
                        columns[i].append(_forward_products((o,), tuple(inputs), tuple(v), False, True)[0])
                blocks.append([_block(cols, o, x, stack, transpose=True) for cols, x in zip(columns, inputs)])
            else:
                rows = [[] for _ in inputs]
                flat = o.reshape(-1)
                for j in range(o.nelement()):
                    cot = zeros_like(flat)
                    cot[j] = 1.0
                    g = _grads_for([flat], [cot], [(inputs, lambda leaves: leaves)], True, retain_graph=True)[0]
                    for i, gi in enumerate(g):
                        rows[i].append(gi)
                blocks.append([_block(r, o, x, stack) for r, x in zip(rows, inputs)])
        per_output = []
        for row in blocks:
            parts, at = [], 0
            for fresh, rebuild in selected:
                parts.append(rebuild(row[at:at + len(fresh)]))
                at += len(fresh)
            per_output.append(parts[0] if isinstance(argnums, int) else tuple(parts))
        jac = _settle(rebuild_out(per_output), keep_graph)
        return (jac, _settle(aux, keep_graph)) if has_aux else jac
    return wrapper


def _block(pieces, out, inp, stack, transpose=False):
    from .factories import zeros
    shape = tuple(out.shape) + tuple(inp.shape)
    if not pieces:
        return zeros(shape, dtype=inp.dtype)
    if transpose:
        return stack([p.reshape(-1) for p in pieces], 1).reshape(shape)
    return stack(pieces, 0).reshape(shape)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian by reverse mode: one backward pass per output element."""
    return _jacobian(func, argnums, has_aux, forward=False)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian by forward products: one per input element."""
    return _jacobian(func, argnums, has_aux, forward=True)


def hessian(func, argnums=0):
    """jacfwd(jacrev(func, argnums), argnums), as PyTorch's."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---- vmap -----------------------------------------------------------------------------------------
def _func_name(func):
    return getattr(func, "__name__", repr(func))


def _in_dims_per_leaf(in_dims, args, name):
    """One mapped dim (or None) per leaf of ``args``."""
    if isinstance(in_dims, int):
        return [in_dims] * len(_flatten(args)[0])
    if not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(in_dims) != len(args):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has {len(in_dims)} entries but inputs has {len(args)}.")
    dims = []
    for d, a in zip(in_dims, args):
        n = len(_flatten(a)[0])
        if d is None or isinstance(d, int):
            dims.extend([d] * n)
        elif isinstance(d, (tuple, list, dict)):
            sub_d, _ = _flatten(d)
            if len(sub_d) != n:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
                                 "the structure of `inputs`.")
            dims.extend(sub_d)
        else:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: {type(d)}.")
    return dims


@contextlib.contextmanager
def _randomness(mode):
    from . import random_state
    if mode not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {mode}")
    previous = random_state.vmap_randomness
    random_state.vmap_randomness = mode
    try:
        yield
    finally:
        random_state.vmap_randomness = previous


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a dim of its arguments: called once per index, results stacked at
    ``out_dims`` (see the module docstring)."""
    name = _func_name(func)

    def wrapper(*args, **kwargs):
        from . import random_state
        from .tensor_api import stack
        leaves, rebuild = _flatten(args)
        dims = _in_dims_per_leaf(in_dims, args, name)
        sizes = []
        for leaf, d in zip(leaves, dims):
            if d is None:
                continue
            if not _is_tensor(leaf):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                                 f"the input is of type {type(leaf)}. We cannot vmap over non-Tensor arguments, "
                                 "please use None as the respective in_dim")
            if not -leaf.ndim <= d < leaf.ndim:
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                                 f"but that input is a Tensor of dimensionality {leaf.ndim} so expected in_dim to "
                                 f"satisfy -{leaf.ndim} <= in_dim < {leaf.ndim}.")
            sizes.append(leaf.shape[d])
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be a Tensor "
                             "with a mapped dim (in_dims is None for every Tensor input)")
        if len(set(sizes)) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sizes} for the mapped dimension")
        results = []
        with _randomness(randomness):
            start_state = random_state.get_rng_state() if randomness == "same" else None
            for i in range(sizes[0]):
                if start_state is not None:
                    random_state.set_rng_state(start_state)
                sliced = [leaf.select(d, i) if d is not None else leaf for leaf, d in zip(leaves, dims)]
                results.append(func(*rebuild(sliced), **kwargs))
        return _stack_results(results, out_dims, name, stack)
    return wrapper


def _out_dims_per_leaf(out_dims, result, name):
    """One stacking dim (or None) per leaf of a result: an int or None for all, or a tuple with an
    entry per output of a tuple result (each entry for every leaf of that output)."""
    if not isinstance(out_dims, tuple):
        return [out_dims] * len(_flatten(result)[0])
    outputs = result if isinstance(result, tuple) else (result,)
    if len(out_dims) != len(outputs):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has {len(out_dims)} entries but outputs has "
                         f"{len(outputs)}.")
    return [d for d, part in zip(out_dims, outputs) for _ in _flatten(part)[0]]


def _stack_results(results, out_dims, name, stack):
    _, rebuild = _flatten(results[0])
    per_result = [_flatten(r)[0] for r in results]
    stacked = []
    for k, d in enumerate(_out_dims_per_leaf(out_dims, results[0], name)):
        column = [leaves[k] for leaves in per_result]
        if d is None:
            stacked.append(column[0])
            continue
        if not _is_tensor(column[0]):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(column[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        ndim = column[0].ndim + 1
        if not -ndim <= d < ndim:
            raise ValueError(f"vmap({name}, ...): Got out_dim={d} for an output of dimensionality {ndim - 1}, "
                             f"expected -{ndim} <= out_dim < {ndim}.")
        stacked.append(stack(column, d % ndim))
    return rebuild(stacked)


# ---- functional_call --------------------------------------------------------------------------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call ``module`` with some of its parameters and buffers replaced by the given tensors (by
    dotted name), restoring them afterwards."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (list, tuple)):
        merged = {}
        for d in dicts:
            for key in d:
                if key in merged:
                    raise ValueError(f"{key} appeared in multiple dictionaries; behavior of functional call is "
                                     "ambiguous")
            merged.update(d)
        dicts = merged
    names = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
    if strict:
        missing = sorted(names - set(dicts))
        unexpected = sorted(set(dicts) - names)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError("Error(s) in reparametrizing for " + type(module).__name__ + ":\n\t"
                               + "\n\t".join(parts))
    saved = []
    try:
        for key, value in dicts.items():
            owner, attr = _owner(module, key)
            table = owner._parameters if attr in owner._parameters else (
                owner._buffers if attr in owner._buffers else None)
            saved.append((owner, attr, table, table[attr] if table is not None else getattr(owner, attr, None)))
            if table is not None:
                table[attr] = value
            object.__setattr__(owner, attr, value)
        call_args = args if isinstance(args, tuple) else (() if args is None else (args,))
        return module(*call_args, **(kwargs or {}))
    finally:
        for owner, attr, table, old in reversed(saved):
            if table is not None:
                table[attr] = old
            object.__setattr__(owner, attr, old)


def _owner(module, dotted):
    *path, attr = dotted.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part)
    return owner, attr

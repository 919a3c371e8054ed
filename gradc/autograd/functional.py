"""``torch.autograd.functional``: vjp, jvp, jacobian, hessian, vhp and hvp of a Python function,
built on ``autograd.grad``.

Forward-mode products (jvp, hvp, a "forward-mode" jacobian) use the double-backward trick: the
vector-Jacobian product taken with respect to a zero cotangent that requires grad is linear in that
cotangent, and its own vector-Jacobian product with ``v`` is the Jacobian-vector product.  This works
because every op's VJP rule is written in gradc's ops.  Inputs are detached copies (views of the
inputs when ``create_graph`` and they require grad), results are detached unless ``create_graph``,
and gradients of outputs that do not depend on an input are zeros unless ``strict``: PyTorch's
behaviour and error messages throughout.
"""
from __future__ import annotations

from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


# ---- argument handling ------------------------------------------------------------------------
def _tensors(value, arg_name, fn_name):
    """(was it a tuple, the tensors as a tuple), with PyTorch's TypeError for anything else
    (traced tensors are tensors: under @gradc.compile the products are traced, ir/traced_grad.py)."""
    from ..tensor_api import is_tensor_like
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not is_tensor_like(item):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(item)}.")
    return is_tuple, items


def _prepare(tensors, create_graph, need_graph):
    """Fresh leaves to differentiate with respect to (views keep the caller's graph when it is to be
    extended: ``create_graph`` with an input that requires grad)."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in tensors)


def _finish(results, create_graph):
    if not results or not isinstance(results[0], tuple):
        return tuple(r if create_graph else r.detach() for r in results)
    return tuple(_finish(r, create_graph) for r in results)


def _unpack(results, was_tuple):
    return results if was_tuple else results[0]


def _unpack2(results, outer_was_tuple, inner_was_tuple):
    if not inner_was_tuple:
        results = tuple(r[0] for r in results)
    return results if outer_was_tuple else results[0]


def _check_v(v, reference, reference_is_tuple):
    if len(v) != len(reference):
        if reference_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(reference)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, reference)):
        if a.size() != b.size():
            prefix = f"Entry {i} in " if reference_is_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {b.size()} but got {a.size()}.")


_NOT_DIFFERENTIABLE = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with respect "
                 "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                 "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                 "would be violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the input. "
                "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
                "and that the hessian depends on the inputs."),
}


def _check_differentiable(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad; None for inputs they do not reach."""
    from . import grad
    grad_outputs = grad_outputs if grad_outputs is not None else (None,) * len(outputs)
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return grad(tuple(o for o, _ in kept), inputs, tuple(g for _, g in kept), retain_graph=retain_graph,
                create_graph=create_graph, allow_unused=True)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _zeros_for_missing(grads, like, strict, create_graph, stage):
    from ..factories import zeros_like
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(like[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _single_element_output(outputs, outputs_were_tuple, fn_name):
    from ..tensor_api import is_tensor_like
    if outputs_were_tuple or not is_tensor_like(outputs[0]):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")


def _vector(v, reference, reference_is_tuple, create_graph, fn_name, none_message):
    if v is None:
        if len(reference) != 1 or reference[0].nelement() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _tensors(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, reference, reference_is_tuple)
    return v


_V_NONE_FOR_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor "
                     "with a single element.")


# ---- the products -----------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        inputs_were_tuple, inputs = _tensors(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_were_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_differentiable(outputs, "outputs", strict)
        v = _vector(v, outputs, outputs_were_tuple, create_graph, "vjp",
                    "The vector v can only be None if the user-provided function returns a single Tensor with a "
                    "single element.")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        products = _zeros_for_missing(_grad(outputs, inputs, v, create_graph), inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), outputs_were_tuple),
            _unpack(_finish(products, create_graph), inputs_were_tuple))


def _forward_products(outputs, inputs, v, strict, create_graph):
    """J v by the double-backward trick: d/du of (u^T J) applied to v, with u zero."""
    from ..factories import zeros_like
    with enable_grad():
        cotangents = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, cotangents, create_graph=True)
        _check_differentiable(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        products = _grad(grad_inputs, cotangents, v, create_graph)
        return _zeros_for_missing(products, outputs, strict, create_graph, "back_trick")


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product at ``inputs``."""
    with enable_grad():
        inputs_were_tuple, inputs = _tensors(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _vector(v, inputs, inputs_were_tuple, create_graph, "jvp",
                    "The vector v can only be None if the input to the user-provided function is a single Tensor "
                    "with a single element.")
        outputs_were_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_differentiable(outputs, "outputs", strict)
    products = _forward_products(outputs, inputs, v, strict, create_graph)
    return (_unpack(_finish(outputs, create_graph), outputs_were_tuple),
            _unpack(_finish(products, create_graph), outputs_were_tuple))


def _reverse_jacobian(outputs, inputs, create_graph, strict):
    """One backward pass per output element: row j of output i's Jacobian with each input."""
    from ..factories import zeros_like
    from ..tensor_api import stack
    jacobians = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(out.nelement()):
            grads = _grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
            for k, (g, inp) in enumerate(zip(grads, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    g = zeros_like(inp)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                rows[k].append(g)
        jacobians.append(tuple(_stacked(r, out, inp, stack) for r, inp in zip(rows, inputs)))
    return tuple(jacobians)


def _stacked(pieces, out, inp, stack):
    """The Jacobian block of shape out.shape + inp.shape from its rows (or columns, transposed)."""
    if not pieces:
        from ..factories import zeros
        return zeros(tuple(out.shape) + tuple(inp.shape), dtype=inp.dtype)
    return stack(pieces, 0).reshape(tuple(out.shape) + tuple(inp.shape))


def _forward_jacobian(func, inputs_were_tuple, inputs, strict):
    """One Jacobian-vector product per input element (the columns)."""
    from ..factories import zeros_like
    from ..tensor_api import stack
    with enable_grad():
        inputs = _prepare(inputs, False, need_graph=True)
        outputs_were_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_differentiable(outputs, "outputs", strict)
    blocks = []
    for inp_index, inp in enumerate(inputs):
        columns = []
        for j in range(inp.nelement()):
            v = tuple(zeros_like(x) for x in inputs)
            v[inp_index].view(-1)[j] = 1.0
            columns.append(_forward_products(outputs, inputs, v, strict, False))
        blocks.append([_columns_to_block([c[o] for c in columns], out, inp, stack)
                       for o, out in enumerate(outputs)])
    # PyTorch's forward-mode result is built of lists (the reverse mode's of tuples)
    jacobians = [[blocks[k][i].detach() for k in range(len(inputs))] for i in range(len(outputs))]
    return outputs_were_tuple, jacobians


def _columns_to_block(columns, out, inp, stack):
    if not columns:
        from ..factories import zeros
        return zeros(tuple(out.shape) + tuple(inp.shape), dtype=inp.dtype)
    stacked = stack([c.reshape(-1) for c in columns], 1)          # (out numel, inp numel)
    return stacked.reshape(tuple(out.shape) + tuple(inp.shape))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: a tensor of shape output.shape + input.shape, or
    tuples of them (outputs outer, inputs inner) when either side is a tuple.  ``vectorize`` is
    accepted for PyTorch's API; the result is the same computed one row (or column) at a time."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` and "
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `strategy=\"forward-mode\"` are "
                               "not supported together (yet). Please either set `strict=False` or "
                               "`strategy=\"reverse-mode\"`.")
        if not vectorize:        # PyTorch's message, its missing space included
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                      "implemented for `vectorize=True`.")
        inputs_were_tuple, inputs = _tensors(inputs, "inputs", "jacobian")
        outputs_were_tuple, jacobians = _forward_jacobian(func, inputs_were_tuple, inputs, strict)
        return _unpack2(jacobians, outputs_were_tuple, inputs_were_tuple)
    with enable_grad():
        inputs_were_tuple, inputs = _tensors(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_were_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_differentiable(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        jacobians = _reverse_jacobian(outputs, inputs, create_graph, strict)
    return _unpack2(_finish(jacobians, create_graph), outputs_were_tuple, inputs_were_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    inputs_were_tuple, inputs = _tensors(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*xs):
        out = func(*xs)
        out_was_tuple, outs = _tensors(out, "outputs of the user-provided function", "hessian")
        _check_differentiable(outs, "outputs", strict)
        _single_element_output(outs, out_was_tuple, "hessian")
        return out.squeeze()

    def gradient(*xs):
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_(True) for x in xs)
        jac = jacobian(scalar_func, xs, create_graph=True)
        _check_differentiable(jac if isinstance(jac, tuple) else (jac,), "jacobian", strict)
        return jac

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _unpack2(result, inputs_were_tuple, inputs_were_tuple)


def _gradient_of_scalar(func, inputs, v, create_graph, strict, fn_name):
    """(inputs_were_tuple, inputs, outputs, outputs_were_tuple, v, gradient) for vhp/hvp."""
    with enable_grad():
        inputs_were_tuple, inputs = _tensors(inputs, "inputs", fn_name)
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _vector(v, inputs, inputs_were_tuple, create_graph, fn_name, _V_NONE_FOR_INPUT)
        outputs_were_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", fn_name)
        _check_differentiable(outputs, "outputs", strict)
        _single_element_output(outputs, outputs_were_tuple, fn_name)
        gradient = _grad(outputs, inputs, create_graph=True)
        _check_differentiable(gradient, "jacobian", strict)
    return inputs_were_tuple, inputs, outputs, outputs_were_tuple, v, gradient


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar function."""
    inputs_were_tuple, inputs, outputs, outputs_were_tuple, v, gradient = _gradient_of_scalar(
        func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        products = _zeros_for_missing(_grad(gradient, inputs, v, create_graph), inputs, strict, create_graph,
                                      "double_back")
    return (_unpack(_finish(outputs, create_graph), outputs_were_tuple),
            _unpack(_finish(products, create_graph), inputs_were_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar function, by the double-backward trick on the gradient."""
    from ..factories import zeros_like
    inputs_were_tuple, inputs, outputs, outputs_were_tuple, v, gradient = _gradient_of_scalar(
        func, inputs, v, create_graph, strict, "hvp")
    with enable_grad():
        cotangents = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        double_back = _grad(gradient, inputs, cotangents, create_graph=True)
        _check_differentiable(gradient, "hessian", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        products = _zeros_for_missing(_grad(double_back, cotangents, v, create_graph), inputs, strict, create_graph,
                                      "double_back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_were_tuple),
            _unpack(_finish(products, create_graph), inputs_were_tuple))

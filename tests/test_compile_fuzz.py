"""@gradc.compile against eager gradc and PyTorch on random programs (``compile_program_fuzz``):
the minimised programs the fuzzer found failing, and a short seeded run of it."""
import textwrap
import warnings

import pytest

from compile_program_fuzz import Gen, Program, check

torch = pytest.importorskip("torch")


def _program(ins, source):
    return Program(ins, textwrap.dedent(source).strip().split("\n"))


# name -> (inputs: (values, dtype, requires_grad) each, the function f)
CASES = {
    # a reshape of a region argument broadcast against the argument itself (a column plus its row)
    # was one value running along one axis twice: the kernel read the row for both
    "column_plus_row": ([([0.792, 0.902, 0.663], "float32", True)], """
        def f(p1):
            return (p1.unsqueeze(-1) + p1.floor(), p1.unsqueeze(-1) + p1 * 2)
        """),
    "divide_by_keepdimless_logsumexp": ([([[[1.49], [1.642], [0.157], [-1.623]]], "float64", True)], """
        def f(p0):
            t0 = p0.logsumexp(-1)
            return (p0 / t0,)
        """),
    # zero_() of an index view of an intermediate read the traced view record as an eager one's
    "zero_through_an_index_view": ([([1.343], "float64", True)], """
        def f(p0):
            t1 = p0 % 1.5
            t1[0].zero_()
            return (t1,)
        """),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_minimised_programs_compile_as_eagerly_and_as_pytorch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = check(_program(*CASES[name]), torch)
    assert res is None, f"{res[0]} differ at {res[1][1][:2]} || {res[1][2][:2]}"

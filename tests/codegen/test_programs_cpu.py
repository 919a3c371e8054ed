"""Every catalogue program runs on the CPU and matches the NumPy reference evaluation."""
import numpy as np
import pytest

from .helpers import assert_kernel_matches, buffers
from .programs import programs

PROGRAMS = programs()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_on_cpu(name):
    k = PROGRAMS[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    low = 0.5 if "prod" in name else -2.0
    assert_kernel_matches(k, buffers(k, rng, low=low, high=1.5))

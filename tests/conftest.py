"""Every test starts from the same gradc random state, so a test's random tensors are the same
whichever tests ran before it (a failure reproduces when the test is run alone)."""
import pytest

import gradc


@pytest.fixture(autouse=True)
def _seeded_gradc_rng():
    gradc.manual_seed(0)
    yield

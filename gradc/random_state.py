"""Random generators: ``gradc.Generator``, the default generator, and the seeding functions.

A ``Generator`` holds a NumPy PCG64 stream (so gradc's numbers differ from PyTorch's Mersenne
Twister, but seeding gives the same reproducibility guarantees). Every sampling function takes
``generator=``; without one it draws from ``default_generator``, which ``manual_seed`` seeds
and which compiled functions draw from at each call. A state is an int64 tensor of 32-bit
words (PyTorch's is a uint8 tensor; both are opaque: pass it back to ``set_state``).
"""
from __future__ import annotations

import numpy as np

DEFAULT_SEED = 67280421310721          # PyTorch's initial seed of a new Generator


class Generator:
    """A stream of random numbers (``torch.Generator``): ``manual_seed``, ``seed``,
    ``initial_seed``, ``get_state``/``set_state``."""

    def __init__(self, device="cpu"):
        from .tensor import check_device
        self.device = check_device(device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed) -> "Generator":
        seed = int(seed)
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise RuntimeError("Overflow when unpacking long long")
        self._initial_seed = seed % 2 ** 64
        self._rng = np.random.Generator(np.random.PCG64(self._initial_seed))
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        s = int(np.random.SeedSequence().entropy % 2 ** 63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._initial_seed

    def get_state(self):
        from .factories import tensor
        st = self._rng.bit_generator.state
        words = [st["state"]["state"], st["state"]["inc"]]
        out = [(w >> (32 * k)) & 0xFFFFFFFF for w in words for k in range(4)]
        return tensor(out + [st["has_uint32"], st["uinteger"], self._initial_seed >> 32,
                             self._initial_seed & 0xFFFFFFFF])

    def set_state(self, new_state) -> "Generator":
        from .tensor_api import is_tensor_like
        if not is_tensor_like(new_state) or tuple(new_state.shape) != (12,) or new_state.dtype.is_floating_point:
            raise RuntimeError("set_state: expected a state from Generator.get_state() (an int64 tensor of 12 words)")
        w = [int(v) for v in new_state.tolist()]
        join = lambda ws: sum(x << (32 * k) for k, x in enumerate(ws))   # noqa: E731
        bit = np.random.PCG64()
        bit.state = {"bit_generator": "PCG64", "state": {"state": join(w[0:4]), "inc": join(w[4:8])},
                     "has_uint32": w[8], "uinteger": w[9]}
        self._rng = np.random.Generator(bit)
        self._initial_seed = (w[10] << 32) | w[11]
        return self

    def __repr__(self):
        return f"<gradc.Generator object at {id(self):#x}>"


default_generator = Generator()


vmap_randomness = None        # inside gradc.func.vmap: its randomness mode ('error' refuses draws)


def numpy_rng(generator=None) -> np.random.Generator:
    """The NumPy stream to draw from for a ``generator=`` argument."""
    if vmap_randomness == "error":
        raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use the "
                           "'same' or 'different' randomness flags on vmap or perform the randomness operation out "
                           "of vmap")
    if generator is None:
        return default_generator._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a gradc.Generator as generator=, got {type(generator).__name__}")
    return generator._rng


def manual_seed(seed) -> Generator:
    """Seed the default generator (rand, randn, dropout, compiled draws); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)

"""Random generators: ``gradc.Generator``, the default generator, and the seeding functions.

A ``Generator`` is PyTorch's CPU generator (``torch_rng.TorchStream``: mt19937 and ATen's
transformations), so ``gradc.manual_seed(s)`` followed by ``rand``/``randn``/``randint``/
``randperm``, ``uniform_``/``normal_``/``bernoulli_``, ``nn.init`` or a new ``nn.Linear`` gives
PyTorch's numbers.  Every sampling function takes ``generator=``; without one it draws from
``default_generator``, which ``manual_seed`` seeds and which compiled functions draw from at each
call.  A state is an int64 tensor of the engine's 624 words, its position, the cached normal
and the initial seed (PyTorch's is a uint8 tensor; both are opaque: pass it back to
``set_state``).
"""
from __future__ import annotations

import numpy as np

from .torch_rng import TorchStream

DEFAULT_SEED = 67280421310721          # PyTorch's initial seed of a new Generator
_STATE_WORDS = 624 + 1 + 2 + 2         # engine words, position, cached normal (flag, bits), initial seed


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
        self._rng = TorchStream(self._initial_seed)
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
        st = self._rng.bits.state["state"]
        cached = self._rng.next_double_normal
        bits = 0 if cached is None else int(np.array(cached, np.float64).view(np.int64))
        words = [int(w) for w in st["key"]] + [int(st["pos"]), int(cached is not None), bits,
                                                self._initial_seed >> 32, self._initial_seed & 0xFFFFFFFF]
        return tensor(words)

    def set_state(self, new_state) -> "Generator":
        from .tensor_api import is_tensor_like
        if not is_tensor_like(new_state) or tuple(new_state.shape) != (_STATE_WORDS,) or \
                new_state.dtype.is_floating_point:
            raise RuntimeError(f"set_state: expected a state from Generator.get_state() (an int64 tensor of "
                               f"{_STATE_WORDS} words)")
        w = [int(v) for v in new_state.tolist()]
        self._initial_seed = (w[-2] << 32) | w[-1]
        stream = TorchStream(0)
        stream.bits.state = {"bit_generator": "MT19937",
                             "state": {"key": np.array(w[:624], np.uint32), "pos": w[624]}}
        stream.next_double_normal = float(np.array(w[626], np.int64).view(np.float64)) if w[625] else None
        self._rng = stream
        return self

    def __repr__(self):
        return f"<gradc.Generator object at {id(self):#x}>"


default_generator = Generator()


vmap_randomness = None        # inside gradc.func.vmap: its randomness mode ('error' refuses draws)


def numpy_rng(generator=None) -> TorchStream:
    """The stream to draw from for a ``generator=`` argument (``torch_rng.TorchStream``)."""
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

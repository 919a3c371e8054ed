"""``torch.utils``: ``checkpoint`` (activation checkpointing) and ``data`` (datasets, samplers, DataLoader)."""
from . import checkpoint  # noqa: F401
from . import data  # noqa: F401

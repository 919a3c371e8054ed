"""``torch.utils``: ``checkpoint`` (activation checkpointing)."""
from . import checkpoint  # noqa: F401

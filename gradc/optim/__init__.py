"""gradc.optim: SGD (momentum, dampening, nesterov, weight decay) and Adam, as in PyTorch."""
from .optimizer import SGD, Adam, Optimizer

__all__ = ["Optimizer", "SGD", "Adam"]

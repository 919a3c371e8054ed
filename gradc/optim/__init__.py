"""gradc.optim: SGD (momentum, dampening, nesterov, weight decay), Adam, AdamW, RMSprop and Adagrad,
and ``lr_scheduler``, as in PyTorch."""
from . import lr_scheduler
from .optimizer import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]

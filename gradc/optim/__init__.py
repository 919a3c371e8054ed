"""gradc.optim: SGD (momentum, dampening, nesterov, weight decay), Adam, AdamW, RMSprop, Adagrad,
NAdam, RAdam, Adamax, Adadelta, ASGD, Rprop, Adafactor and LBFGS, and ``lr_scheduler``, as in
PyTorch."""
from . import lr_scheduler
from .adaptive import ASGD, Adadelta, Adafactor, Adamax, NAdam, RAdam, Rprop
from .lbfgs import LBFGS
from .optimizer import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax", "Adadelta",
           "ASGD", "Rprop", "Adafactor", "LBFGS", "lr_scheduler"]

"""gradc.nn: Module, Parameter and a few layers, with PyTorch's names and behaviour."""
from . import functional, init
from .modules import Identity, Linear, Module, ReLU, Sequential, Sigmoid, Tanh
from .parameter import Parameter

__all__ = ["Module", "Parameter", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "Identity", "functional",
           "init"]

"""gradc.nn: Module, Parameter and a few layers, with PyTorch's names and behaviour."""
from . import functional, init
from .modules import ELU, GELU, Identity, LeakyReLU, Linear, Module, ReLU, Sequential, SiLU, Sigmoid, Softplus, Tanh
from .parameter import Parameter

__all__ = ["Module", "Parameter", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softplus", "ELU", "GELU",
           "Identity",
           "functional", "init"]

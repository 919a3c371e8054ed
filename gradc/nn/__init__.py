"""gradc.nn: Module, Parameter and a few layers, with PyTorch's names and behaviour."""
from . import functional, init
from .modules import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, Dropout, ELU, Embedding, GELU, HuberLoss, Identity, L1Loss, LayerNorm,
                      LeakyReLU, Linear, LogSigmoid, Module, MSELoss, NLLLoss, ReLU, Sequential, SiLU, Sigmoid, SmoothL1Loss,
                      Softplus, Tanh)
from .parameter import Parameter

__all__ = ["Module", "Parameter", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softplus",
           "LogSigmoid", "ELU", "GELU", "Identity", "Dropout", "Embedding", "LayerNorm", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
           "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "functional", "init"]

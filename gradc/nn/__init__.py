"""gradc.nn: Module, Parameter and a few layers, with PyTorch's names and behaviour."""
from . import functional, init, utils
from .activation import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSoftmax, Mish, PReLU,
                         ReLU6, Softmax, Softmin, Softshrink, Softsign, Tanhshrink, Threshold)
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .containers import ModuleDict, ModuleList
from .recurrent import GRU, LSTM, RNN
from .modules import (Fold, Unfold, PixelShuffle, PixelUnshuffle, AdaptiveMaxPool1d, AdaptiveMaxPool2d, ConvTranspose1d, ConvTranspose2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, GroupNorm, KLDivLoss, MarginRankingLoss,
                      MaxPool1d, PairwiseDistance, RMSNorm, TripletMarginLoss, Upsample, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNorm3d, BCELoss, BCEWithLogitsLoss, Conv1d, Conv2d, CrossEntropyLoss, Dropout, ELU, Embedding,
                      Flatten, GELU, HuberLoss, Identity, L1Loss, LayerNorm, LeakyReLU, Linear, LogSigmoid, MaxPool2d,
                      Module, MSELoss, NLLLoss, ReLU, Sequential, SiLU, Sigmoid, SmoothL1Loss, Softplus, Tanh)
from .parameter import Parameter

__all__ = ["Module", "Parameter", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softplus",
           "LogSigmoid", "ELU", "GELU", "Identity", "Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d", "Flatten", "Dropout",
           "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "ModuleList", "ModuleDict", "Softmax", "LogSoftmax", "Softmin", "GLU", "ReLU6", "Hardsigmoid", "Hardswish",
           "Mish", "SELU", "CELU", "Softsign", "Tanhshrink", "Hardtanh", "Threshold", "Hardshrink", "Softshrink", "PReLU",
           "GroupNorm", "RMSNorm", "KLDivLoss", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "RNN", "LSTM", "GRU", "Fold", "Unfold", "PixelShuffle", "PixelUnshuffle", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "ConvTranspose1d", "ConvTranspose2d", "Upsample", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AvgPool1d", "MaxPool1d", "PairwiseDistance", "MarginRankingLoss", "TripletMarginLoss",
           "functional", "init", "utils"]

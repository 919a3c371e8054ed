"""gradc.nn: Module, Parameter and a few layers, with PyTorch's names and behaviour."""
from . import functional, init, utils
from .activation import (CELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSoftmax, Mish, PReLU,
                         ReLU6, Softmax, Softmin, Softshrink, Softsign, Tanhshrink, Threshold)
from .attention import (MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
                        TransformerEncoder, TransformerEncoderLayer)
from .containers import Container, ModuleDict, ModuleList, ParameterDict, ParameterList
from .extra import (AlphaDropout, Bilinear, ChannelShuffle, CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d,
                    ConstantPad3d, CosineEmbeddingLoss, CosineSimilarity, Dropout1d, Dropout2d, Dropout3d,
                    FeatureAlphaDropout, FractionalMaxPool2d, FractionalMaxPool3d, GaussianNLLLoss, HingeEmbeddingLoss, InstanceNorm1d, InstanceNorm2d,
                    InstanceNorm3d,
                    LocalResponseNorm, LPPool1d, LPPool2d, LPPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, MultiLabelMarginLoss,
                    MultiLabelSoftMarginLoss, MultiMarginLoss, CTCLoss, PoissonNLLLoss, ReflectionPad1d, ReflectionPad2d,
                    ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, RReLU, Softmax2d, SoftMarginLoss, TripletMarginWithDistanceLoss,
                    Unflatten, ZeroPad1d, ZeroPad2d, ZeroPad3d)
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .modules import (UpsamplingBilinear2d, UpsamplingNearest2d, AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d, Conv3d, ConvTranspose3d, MaxPool3d,
                      Fold, Unfold, PixelShuffle, PixelUnshuffle, AdaptiveMaxPool1d, AdaptiveMaxPool2d, ConvTranspose1d, ConvTranspose2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, GroupNorm, KLDivLoss, MarginRankingLoss,
                      MaxPool1d, PairwiseDistance, RMSNorm, TripletMarginLoss, Upsample, AvgPool2d, BatchNorm1d, BatchNorm2d, BatchNorm3d, BCELoss, BCEWithLogitsLoss, Conv1d, Conv2d, CrossEntropyLoss, Dropout, ELU, Embedding,
                      EmbeddingBag,
                      Flatten, GELU, HuberLoss, Identity, L1Loss, LayerNorm, LeakyReLU, Linear, LogSigmoid, MaxPool2d,
                      Module, MSELoss, NLLLoss, NLLLoss2d, ReLU, Sequential, SiLU, Sigmoid, SmoothL1Loss, Softplus, Tanh)
from .lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d,
                   LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d,
                   LazyInstanceNorm3d, LazyLinear)
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Module", "Parameter", "Linear", "Sequential", "ReLU", "Tanh", "Sigmoid", "SiLU", "LeakyReLU", "Softplus",
           "LogSigmoid", "ELU", "GELU", "Identity", "Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d", "Flatten", "Dropout",
           "Embedding", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "ModuleList", "ModuleDict", "Softmax", "LogSoftmax", "Softmin", "GLU", "ReLU6", "Hardsigmoid", "Hardswish",
           "Mish", "SELU", "CELU", "Softsign", "Tanhshrink", "Hardtanh", "Threshold", "Hardshrink", "Softshrink", "PReLU",
           "GroupNorm", "RMSNorm", "KLDivLoss", "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer", "RNN", "LSTM", "GRU", "Fold", "Unfold", "PixelShuffle", "PixelUnshuffle", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "ConvTranspose1d", "ConvTranspose2d", "Upsample", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AvgPool1d", "MaxPool1d", "PairwiseDistance", "MarginRankingLoss", "TripletMarginLoss",
           "RNNCell", "LSTMCell", "GRUCell", "ParameterList", "ParameterDict", "LazyLinear",
           "InstanceNorm1d", "InstanceNorm2d", "Bilinear", "LocalResponseNorm", "LPPool1d", "LPPool2d", "Dropout1d",
           "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "ChannelShuffle", "CosineSimilarity",
           "Softmax2d", "Unflatten", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
           "CircularPad1d", "CircularPad2d", "RReLU", "MaxUnpool1d", "MaxUnpool2d", "HingeEmbeddingLoss",
           "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss", "MultiMarginLoss", "CTCLoss", "PoissonNLLLoss",
           "GaussianNLLLoss", "CosineEmbeddingLoss", "TripletMarginWithDistanceLoss",
           "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "AvgPool3d", "Conv3d", "ConvTranspose3d", "MaxPool3d",
           "UpsamplingBilinear2d", "UpsamplingNearest2d", "InstanceNorm3d", "EmbeddingBag", "Buffer", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d", "LPPool3d",
           "MaxUnpool3d", "NLLLoss2d", "RNNBase", "RNNCellBase", "Container", "FractionalMaxPool2d", "FractionalMaxPool3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "UninitializedParameter",
           "UninitializedBuffer", "functional", "init", "utils"]

from . import parallel  # noqa: E402
from .parallel import DataParallel  # noqa: E402

__all__ += ["DataParallel", "parallel"]

"""A two-layer MLP loss written with gradc.nn.functional, for the gradc CLI.

    gradc dump-ir examples/mlp.py:mlp_loss --arg x=f32[64,16] --arg y=f32[64,4] \\
        --arg w1=f32[32,16]:grad --arg b1=f32[32]:grad --arg w2=f32[4,32]:grad --arg b2=f32[4]:grad \\
        --stage kernels
    gradc explain-memory examples/mlp.py:mlp_loss --arg x=f32[64,16] --arg y=f32[64,4] \\
        --arg w1=f32[32,16]:grad --arg b1=f32[32]:grad --arg w2=f32[4,32]:grad --arg b2=f32[4]:grad

The weights use nn.Linear's layout (out_features, in_features).
"""
from gradc.nn import functional as F


def mlp_loss(x, y, w1, b1, w2, b2):
    h = F.relu(F.linear(x, w1, b1))
    out = F.linear(h, w2, b2).tanh()
    return F.mse_loss(out, y)

"""Tests for gradc._printing: byte-for-byte parity with PyTorch's tensor repr.

The hard-coded expectations below were produced by ``repr(tensor)`` in
PyTorch 2.x, so they run without torch installed.  The randomized tests use
torch as an oracle when it is available.
"""

import builtins
import contextlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gradc._printing import get_printoptions, set_printoptions, tensor_repr

NP_DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}


@pytest.fixture(autouse=True)
def _default_print_options():
    set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")


# (data, dtype, device, grad suffix, print options, expected repr)
KNOWN_CASES = [
    pytest.param(
        [[1., 2.], [3., 4.]], 'float32', 'cpu', 'requires_grad=True', None,
        (
            'tensor([[1., 2.],\n'
            '        [3., 4.]], requires_grad=True)'
        ),
        id='matrix_requires_grad',
    ),
    pytest.param(
        24., 'float32', 'cpu', None, None,
        'tensor(24.)',
        id='scalar_int_valued',
    ),
    pytest.param(
        0.123456, 'float32', 'cpu', None, None,
        'tensor(0.1235)',
        id='scalar_fraction',
    ),
    pytest.param(
        -2.5, 'float64', 'cpu', None, None,
        'tensor(-2.5000, dtype=torch.float64)',
        id='scalar_float64',
    ),
    pytest.param(
        np.nan, 'float32', 'cpu', None, None,
        'tensor(nan)',
        id='scalar_nan',
    ),
    pytest.param(
        -7, 'int64', 'cpu', None, None,
        'tensor(-7)',
        id='scalar_int64',
    ),
    pytest.param(
        True, 'bool', 'cpu', None, None,
        'tensor(True)',
        id='scalar_bool',
    ),
    pytest.param(
        3.0, 'float32', 'cpu', 'grad_fn=<SumBackward0>', None,
        'tensor(3., grad_fn=<SumBackward0>)',
        id='scalar_grad_fn',
    ),
    pytest.param(
        [1.123456, -2.5, 3.0], 'float32', 'cpu', None, None,
        'tensor([ 1.1235, -2.5000,  3.0000])',
        id='vector_four_decimals',
    ),
    pytest.param(
        [1., -2., 300.], 'float32', 'cpu', None, None,
        'tensor([  1.,  -2., 300.])',
        id='vector_int_valued',
    ),
    pytest.param(
        [1.5, 2.25], 'float64', 'cpu', None, None,
        'tensor([1.5000, 2.2500], dtype=torch.float64)',
        id='float64_suffix',
    ),
    pytest.param(
        [1., 2.], 'float64', 'cpu', 'grad_fn=<AddBackward0>', None,
        'tensor([1., 2.], dtype=torch.float64, grad_fn=<AddBackward0>)',
        id='float64_and_grad',
    ),
    pytest.param(
        [1e-5, 1.0], 'float32', 'cpu', None, None,
        'tensor([1.0000e-05, 1.0000e+00])',
        id='sci_small',
    ),
    pytest.param(
        [1.0, 2000.0], 'float32', 'cpu', None, None,
        'tensor([1.0000e+00, 2.0000e+03])',
        id='sci_ratio',
    ),
    pytest.param(
        [1.0, 1000.0], 'float32', 'cpu', None, None,
        'tensor([   1., 1000.])',
        id='no_sci_ratio_1000',
    ),
    pytest.param(
        [1e9], 'float32', 'cpu', None, None,
        'tensor([1.0000e+09])',
        id='sci_large',
    ),
    pytest.param(
        [1.5e-7, -2.25e3], 'float64', 'cpu', None, None,
        'tensor([ 1.5000e-07, -2.2500e+03], dtype=torch.float64)',
        id='sci_fraction',
    ),
    pytest.param(
        [1e-200, 1e200], 'float64', 'cpu', None, None,
        'tensor([1.0000e-200, 1.0000e+200], dtype=torch.float64)',
        id='sci_three_digit_exponent',
    ),
    pytest.param(
        [np.nan, np.inf, -np.inf, 1.], 'float32', 'cpu', None, None,
        'tensor([nan, inf, -inf, 1.])',
        id='nan_inf_int_mode',
    ),
    pytest.param(
        [np.nan, np.inf, -np.inf, 1.5], 'float32', 'cpu', None, None,
        'tensor([   nan,    inf,   -inf, 1.5000])',
        id='nan_inf_fraction',
    ),
    pytest.param(
        [np.nan, -np.inf, 1e-6, 1.], 'float32', 'cpu', None, None,
        'tensor([       nan,       -inf, 1.0000e-06, 1.0000e+00])',
        id='nan_inf_sci',
    ),
    pytest.param(
        [0., np.nan, -np.inf], 'float32', 'cpu', None, None,
        'tensor([0., nan, -inf])',
        id='zero_and_nan_only',
    ),
    pytest.param(
        [[0., 0.], [0., 0.]], 'float32', 'cpu', None, None,
        (
            'tensor([[0., 0.],\n'
            '        [0., 0.]])'
        ),
        id='zeros',
    ),
    pytest.param(
        [-0.0, 1.0], 'float32', 'cpu', None, None,
        'tensor([-0., 1.])',
        id='negative_zero',
    ),
    pytest.param(
        [1, -20, 300], 'int64', 'cpu', None, None,
        'tensor([  1, -20, 300])',
        id='int64_vector',
    ),
    pytest.param(
        [2**62, -2**62, 0], 'int64', 'cpu', None, None,
        'tensor([ 4611686018427387904, -4611686018427387904,                    0])',
        id='int64_large',
    ),
    pytest.param(
        [[True, False], [False, True]], 'bool', 'cpu', None, None,
        (
            'tensor([[ True, False],\n'
            '        [False,  True]])'
        ),
        id='bool_matrix',
    ),
    pytest.param(
        np.zeros(0), 'float32', 'cpu', None, None,
        'tensor([])',
        id='empty_float32',
    ),
    pytest.param(
        np.zeros((0, 3)), 'float32', 'cpu', None, None,
        'tensor([], size=(0, 3))',
        id='empty_2d',
    ),
    pytest.param(
        np.zeros(0), 'int64', 'cpu', None, None,
        'tensor([], dtype=torch.int64)',
        id='empty_int64',
    ),
    pytest.param(
        np.zeros((2, 0, 1)), 'bool', 'cpu', None, None,
        'tensor([], size=(2, 0, 1), dtype=torch.bool)',
        id='empty_bool_3d',
    ),
    pytest.param(
        np.zeros((3, 0)), 'float64', 'cpu', 'requires_grad=True', None,
        'tensor([], size=(3, 0), dtype=torch.float64, requires_grad=True)',
        id='empty_float64_grad',
    ),
    pytest.param(
        np.zeros(0), 'float32', 'cuda:0', None, None,
        "tensor([], device='cuda:0')",
        id='empty_cuda',
    ),
    pytest.param(
        np.arange(40), 'int64', 'cpu', None, None,
        (
            'tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n'
            '        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n'
            '        36, 37, 38, 39])'
        ),
        id='wrap_int_row',
    ),
    pytest.param(
        np.arange(30) / 3, 'float32', 'cpu', None, None,
        (
            'tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n'
            '        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n'
            '        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,\n'
            '        9.0000, 9.3333, 9.6667])'
        ),
        id='wrap_float_row',
    ),
    pytest.param(
        np.arange(60).reshape(2, 30) * 1.5, 'float32', 'cpu', None, None,
        (
            'tensor([[ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n'
            '         12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n'
            '         24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n'
            '         36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000],\n'
            '        [45.0000, 46.5000, 48.0000, 49.5000, 51.0000, 52.5000, 54.0000, 55.5000,\n'
            '         57.0000, 58.5000, 60.0000, 61.5000, 63.0000, 64.5000, 66.0000, 67.5000,\n'
            '         69.0000, 70.5000, 72.0000, 73.5000, 75.0000, 76.5000, 78.0000, 79.5000,\n'
            '         81.0000, 82.5000, 84.0000, 85.5000, 87.0000, 88.5000]])'
        ),
        id='wrap_matrix_rows',
    ),
    pytest.param(
        np.arange(12).reshape(2, 2, 3), 'float32', 'cpu', None, None,
        (
            'tensor([[[ 0.,  1.,  2.],\n'
            '         [ 3.,  4.,  5.]],\n'
            '\n'
            '        [[ 6.,  7.,  8.],\n'
            '         [ 9., 10., 11.]]])'
        ),
        id='three_d',
    ),
    pytest.param(
        np.arange(16).reshape(2, 2, 2, 2) - 8, 'int64', 'cpu', None, None,
        (
            'tensor([[[[-8, -7],\n'
            '          [-6, -5]],\n'
            '\n'
            '         [[-4, -3],\n'
            '          [-2, -1]]],\n'
            '\n'
            '\n'
            '        [[[ 0,  1],\n'
            '          [ 2,  3]],\n'
            '\n'
            '         [[ 4,  5],\n'
            '          [ 6,  7]]]])'
        ),
        id='four_d',
    ),
    pytest.param(
        [[[0.5]]], 'float32', 'cpu', None, None,
        'tensor([[[0.5000]]])',
        id='size_one_dims',
    ),
    pytest.param(
        np.arange(2000), 'int64', 'cpu', None, None,
        'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])',
        id='summarize_int_vector',
    ),
    pytest.param(
        np.linspace(-1, 1, 1001), 'float32', 'cpu', None, None,
        'tensor([-1.0000, -0.9980, -0.9960,  ...,  0.9960,  0.9980,  1.0000])',
        id='summarize_float_vector',
    ),
    pytest.param(
        np.arange(2000).reshape(40, 50) / 7, 'float64', 'cpu', None, None,
        (
            'tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 6.7143e+00, 6.8571e+00,\n'
            '         7.0000e+00],\n'
            '        [7.1429e+00, 7.2857e+00, 7.4286e+00,  ..., 1.3857e+01, 1.4000e+01,\n'
            '         1.4143e+01],\n'
            '        [1.4286e+01, 1.4429e+01, 1.4571e+01,  ..., 2.1000e+01, 2.1143e+01,\n'
            '         2.1286e+01],\n'
            '        ...,\n'
            '        [2.6429e+02, 2.6443e+02, 2.6457e+02,  ..., 2.7100e+02, 2.7114e+02,\n'
            '         2.7129e+02],\n'
            '        [2.7143e+02, 2.7157e+02, 2.7171e+02,  ..., 2.7814e+02, 2.7829e+02,\n'
            '         2.7843e+02],\n'
            '        [2.7857e+02, 2.7871e+02, 2.7886e+02,  ..., 2.8529e+02, 2.8543e+02,\n'
            '         2.8557e+02]], dtype=torch.float64)'
        ),
        id='summarize_matrix',
    ),
    pytest.param(
        np.arange(1200).reshape(12, 10, 10), 'float32', 'cpu', 'requires_grad=True', None,
        (
            'tensor([[[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 7.0000e+00,\n'
            '          8.0000e+00, 9.0000e+00],\n'
            '         [1.0000e+01, 1.1000e+01, 1.2000e+01,  ..., 1.7000e+01,\n'
            '          1.8000e+01, 1.9000e+01],\n'
            '         [2.0000e+01, 2.1000e+01, 2.2000e+01,  ..., 2.7000e+01,\n'
            '          2.8000e+01, 2.9000e+01],\n'
            '         ...,\n'
            '         [7.0000e+01, 7.1000e+01, 7.2000e+01,  ..., 7.7000e+01,\n'
            '          7.8000e+01, 7.9000e+01],\n'
            '         [8.0000e+01, 8.1000e+01, 8.2000e+01,  ..., 8.7000e+01,\n'
            '          8.8000e+01, 8.9000e+01],\n'
            '         [9.0000e+01, 9.1000e+01, 9.2000e+01,  ..., 9.7000e+01,\n'
            '          9.8000e+01, 9.9000e+01]],\n'
            '\n'
            '        [[1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.0700e+02,\n'
            '          1.0800e+02, 1.0900e+02],\n'
            '         [1.1000e+02, 1.1100e+02, 1.1200e+02,  ..., 1.1700e+02,\n'
            '          1.1800e+02, 1.1900e+02],\n'
            '         [1.2000e+02, 1.2100e+02, 1.2200e+02,  ..., 1.2700e+02,\n'
            '          1.2800e+02, 1.2900e+02],\n'
            '         ...,\n'
            '         [1.7000e+02, 1.7100e+02, 1.7200e+02,  ..., 1.7700e+02,\n'
            '          1.7800e+02, 1.7900e+02],\n'
            '         [1.8000e+02, 1.8100e+02, 1.8200e+02,  ..., 1.8700e+02,\n'
            '          1.8800e+02, 1.8900e+02],\n'
            '         [1.9000e+02, 1.9100e+02, 1.9200e+02,  ..., 1.9700e+02,\n'
            '          1.9800e+02, 1.9900e+02]],\n'
            '\n'
            '        [[2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.0700e+02,\n'
            '          2.0800e+02, 2.0900e+02],\n'
            '         [2.1000e+02, 2.1100e+02, 2.1200e+02,  ..., 2.1700e+02,\n'
            '          2.1800e+02, 2.1900e+02],\n'
            '         [2.2000e+02, 2.2100e+02, 2.2200e+02,  ..., 2.2700e+02,\n'
            '          2.2800e+02, 2.2900e+02],\n'
            '         ...,\n'
            '         [2.7000e+02, 2.7100e+02, 2.7200e+02,  ..., 2.7700e+02,\n'
            '          2.7800e+02, 2.7900e+02],\n'
            '         [2.8000e+02, 2.8100e+02, 2.8200e+02,  ..., 2.8700e+02,\n'
            '          2.8800e+02, 2.8900e+02],\n'
            '         [2.9000e+02, 2.9100e+02, 2.9200e+02,  ..., 2.9700e+02,\n'
            '          2.9800e+02, 2.9900e+02]],\n'
            '\n'
            '        ...,\n'
            '\n'
            '        [[9.0000e+02, 9.0100e+02, 9.0200e+02,  ..., 9.0700e+02,\n'
            '          9.0800e+02, 9.0900e+02],\n'
            '         [9.1000e+02, 9.1100e+02, 9.1200e+02,  ..., 9.1700e+02,\n'
            '          9.1800e+02, 9.1900e+02],\n'
            '         [9.2000e+02, 9.2100e+02, 9.2200e+02,  ..., 9.2700e+02,\n'
            '          9.2800e+02, 9.2900e+02],\n'
            '         ...,\n'
            '         [9.7000e+02, 9.7100e+02, 9.7200e+02,  ..., 9.7700e+02,\n'
            '          9.7800e+02, 9.7900e+02],\n'
            '         [9.8000e+02, 9.8100e+02, 9.8200e+02,  ..., 9.8700e+02,\n'
            '          9.8800e+02, 9.8900e+02],\n'
            '         [9.9000e+02, 9.9100e+02, 9.9200e+02,  ..., 9.9700e+02,\n'
            '          9.9800e+02, 9.9900e+02]],\n'
            '\n'
            '        [[1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.0070e+03,\n'
            '          1.0080e+03, 1.0090e+03],\n'
            '         [1.0100e+03, 1.0110e+03, 1.0120e+03,  ..., 1.0170e+03,\n'
            '          1.0180e+03, 1.0190e+03],\n'
            '         [1.0200e+03, 1.0210e+03, 1.0220e+03,  ..., 1.0270e+03,\n'
            '          1.0280e+03, 1.0290e+03],\n'
            '         ...,\n'
            '         [1.0700e+03, 1.0710e+03, 1.0720e+03,  ..., 1.0770e+03,\n'
            '          1.0780e+03, 1.0790e+03],\n'
            '         [1.0800e+03, 1.0810e+03, 1.0820e+03,  ..., 1.0870e+03,\n'
            '          1.0880e+03, 1.0890e+03],\n'
            '         [1.0900e+03, 1.0910e+03, 1.0920e+03,  ..., 1.0970e+03,\n'
            '          1.0980e+03, 1.0990e+03]],\n'
            '\n'
            '        [[1.1000e+03, 1.1010e+03, 1.1020e+03,  ..., 1.1070e+03,\n'
            '          1.1080e+03, 1.1090e+03],\n'
            '         [1.1100e+03, 1.1110e+03, 1.1120e+03,  ..., 1.1170e+03,\n'
            '          1.1180e+03, 1.1190e+03],\n'
            '         [1.1200e+03, 1.1210e+03, 1.1220e+03,  ..., 1.1270e+03,\n'
            '          1.1280e+03, 1.1290e+03],\n'
            '         ...,\n'
            '         [1.1700e+03, 1.1710e+03, 1.1720e+03,  ..., 1.1770e+03,\n'
            '          1.1780e+03, 1.1790e+03],\n'
            '         [1.1800e+03, 1.1810e+03, 1.1820e+03,  ..., 1.1870e+03,\n'
            '          1.1880e+03, 1.1890e+03],\n'
            '         [1.1900e+03, 1.1910e+03, 1.1920e+03,  ..., 1.1970e+03,\n'
            '          1.1980e+03, 1.1990e+03]]], requires_grad=True)'
        ),
        id='summarize_3d',
    ),
    pytest.param(
        np.arange(1500) % 3 == 0, 'bool', 'cpu', None, None,
        'tensor([ True, False, False,  ...,  True, False, False])',
        id='summarize_bool',
    ),
    pytest.param(
        np.arange(1000), 'int64', 'cpu', None, None,
        (
            'tensor([  0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,\n'
            '         14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,\n'
            '         28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  41,\n'
            '         42,  43,  44,  45,  46,  47,  48,  49,  50,  51,  52,  53,  54,  55,\n'
            '         56,  57,  58,  59,  60,  61,  62,  63,  64,  65,  66,  67,  68,  69,\n'
            '         70,  71,  72,  73,  74,  75,  76,  77,  78,  79,  80,  81,  82,  83,\n'
            '         84,  85,  86,  87,  88,  89,  90,  91,  92,  93,  94,  95,  96,  97,\n'
            '         98,  99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,\n'
            '        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125,\n'
            '        126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139,\n'
            '        140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153,\n'
            '        154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167,\n'
            '        168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181,\n'
            '        182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195,\n'
            '        196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209,\n'
            '        210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223,\n'
            '        224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237,\n'
            '        238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251,\n'
            '        252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265,\n'
            '        266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279,\n'
            '        280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293,\n'
            '        294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305, 306, 307,\n'
            '        308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321,\n'
            '        322, 323, 324, 325, 326, 327, 328, 329, 330, 331, 332, 333, 334, 335,\n'
            '        336, 337, 338, 339, 340, 341, 342, 343, 344, 345, 346, 347, 348, 349,\n'
            '        350, 351, 352, 353, 354, 355, 356, 357, 358, 359, 360, 361, 362, 363,\n'
            '        364, 365, 366, 367, 368, 369, 370, 371, 372, 373, 374, 375, 376, 377,\n'
            '        378, 379, 380, 381, 382, 383, 384, 385, 386, 387, 388, 389, 390, 391,\n'
            '        392, 393, 394, 395, 396, 397, 398, 399, 400, 401, 402, 403, 404, 405,\n'
            '        406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 419,\n'
            '        420, 421, 422, 423, 424, 425, 426, 427, 428, 429, 430, 431, 432, 433,\n'
            '        434, 435, 436, 437, 438, 439, 440, 441, 442, 443, 444, 445, 446, 447,\n'
            '        448, 449, 450, 451, 452, 453, 454, 455, 456, 457, 458, 459, 460, 461,\n'
            '        462, 463, 464, 465, 466, 467, 468, 469, 470, 471, 472, 473, 474, 475,\n'
            '        476, 477, 478, 479, 480, 481, 482, 483, 484, 485, 486, 487, 488, 489,\n'
            '        490, 491, 492, 493, 494, 495, 496, 497, 498, 499, 500, 501, 502, 503,\n'
            '        504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517,\n'
            '        518, 519, 520, 521, 522, 523, 524, 525, 526, 527, 528, 529, 530, 531,\n'
            '        532, 533, 534, 535, 536, 537, 538, 539, 540, 541, 542, 543, 544, 545,\n'
            '        546, 547, 548, 549, 550, 551, 552, 553, 554, 555, 556, 557, 558, 559,\n'
            '        560, 561, 562, 563, 564, 565, 566, 567, 568, 569, 570, 571, 572, 573,\n'
            '        574, 575, 576, 577, 578, 579, 580, 581, 582, 583, 584, 585, 586, 587,\n'
            '        588, 589, 590, 591, 592, 593, 594, 595, 596, 597, 598, 599, 600, 601,\n'
            '        602, 603, 604, 605, 606, 607, 608, 609, 610, 611, 612, 613, 614, 615,\n'
            '        616, 617, 618, 619, 620, 621, 622, 623, 624, 625, 626, 627, 628, 629,\n'
            '        630, 631, 632, 633, 634, 635, 636, 637, 638, 639, 640, 641, 642, 643,\n'
            '        644, 645, 646, 647, 648, 649, 650, 651, 652, 653, 654, 655, 656, 657,\n'
            '        658, 659, 660, 661, 662, 663, 664, 665, 666, 667, 668, 669, 670, 671,\n'
            '        672, 673, 674, 675, 676, 677, 678, 679, 680, 681, 682, 683, 684, 685,\n'
            '        686, 687, 688, 689, 690, 691, 692, 693, 694, 695, 696, 697, 698, 699,\n'
            '        700, 701, 702, 703, 704, 705, 706, 707, 708, 709, 710, 711, 712, 713,\n'
            '        714, 715, 716, 717, 718, 719, 720, 721, 722, 723, 724, 725, 726, 727,\n'
            '        728, 729, 730, 731, 732, 733, 734, 735, 736, 737, 738, 739, 740, 741,\n'
            '        742, 743, 744, 745, 746, 747, 748, 749, 750, 751, 752, 753, 754, 755,\n'
            '        756, 757, 758, 759, 760, 761, 762, 763, 764, 765, 766, 767, 768, 769,\n'
            '        770, 771, 772, 773, 774, 775, 776, 777, 778, 779, 780, 781, 782, 783,\n'
            '        784, 785, 786, 787, 788, 789, 790, 791, 792, 793, 794, 795, 796, 797,\n'
            '        798, 799, 800, 801, 802, 803, 804, 805, 806, 807, 808, 809, 810, 811,\n'
            '        812, 813, 814, 815, 816, 817, 818, 819, 820, 821, 822, 823, 824, 825,\n'
            '        826, 827, 828, 829, 830, 831, 832, 833, 834, 835, 836, 837, 838, 839,\n'
            '        840, 841, 842, 843, 844, 845, 846, 847, 848, 849, 850, 851, 852, 853,\n'
            '        854, 855, 856, 857, 858, 859, 860, 861, 862, 863, 864, 865, 866, 867,\n'
            '        868, 869, 870, 871, 872, 873, 874, 875, 876, 877, 878, 879, 880, 881,\n'
            '        882, 883, 884, 885, 886, 887, 888, 889, 890, 891, 892, 893, 894, 895,\n'
            '        896, 897, 898, 899, 900, 901, 902, 903, 904, 905, 906, 907, 908, 909,\n'
            '        910, 911, 912, 913, 914, 915, 916, 917, 918, 919, 920, 921, 922, 923,\n'
            '        924, 925, 926, 927, 928, 929, 930, 931, 932, 933, 934, 935, 936, 937,\n'
            '        938, 939, 940, 941, 942, 943, 944, 945, 946, 947, 948, 949, 950, 951,\n'
            '        952, 953, 954, 955, 956, 957, 958, 959, 960, 961, 962, 963, 964, 965,\n'
            '        966, 967, 968, 969, 970, 971, 972, 973, 974, 975, 976, 977, 978, 979,\n'
            '        980, 981, 982, 983, 984, 985, 986, 987, 988, 989, 990, 991, 992, 993,\n'
            '        994, 995, 996, 997, 998, 999])'
        ),
        id='not_summarized_1000',
    ),
    pytest.param(
        [1., 2.], 'float32', 'cuda:0', None, None,
        "tensor([1., 2.], device='cuda:0')",
        id='cuda_simple',
    ),
    pytest.param(
        [[1.5, 2.]], 'float64', 'cuda:0', 'grad_fn=<MulBackward0>', None,
        (
            "tensor([[1.5000, 2.0000]], device='cuda:0', dtype=torch.float64,\n"
            '       grad_fn=<MulBackward0>)'
        ),
        id='cuda_dtype_grad',
    ),
    pytest.param(
        np.arange(9) + 0.1234, 'float64', 'cpu', 'grad_fn=<AddBackward0>', None,
        (
            'tensor([0.1234, 1.1234, 2.1234, 3.1234, 4.1234, 5.1234, 6.1234, 7.1234, 8.1234],\n'
            '       dtype=torch.float64, grad_fn=<AddBackward0>)'
        ),
        id='suffix_newline',
    ),
    pytest.param(
        np.arange(9) + 0.1234, 'float64', 'cuda:0', 'requires_grad=True', None,
        (
            'tensor([0.1234, 1.1234, 2.1234, 3.1234, 4.1234, 5.1234, 6.1234, 7.1234, 8.1234],\n'
            "       device='cuda:0', dtype=torch.float64, requires_grad=True)"
        ),
        id='suffix_newline_cuda',
    ),
    pytest.param(
        np.arange(18) + 0.5, 'float32', 'cpu', 'grad_fn=<DivBackward0>', None,
        (
            'tensor([ 0.5000,  1.5000,  2.5000,  3.5000,  4.5000,  5.5000,  6.5000,  7.5000,\n'
            '         8.5000,  9.5000, 10.5000, 11.5000, 12.5000, 13.5000, 14.5000, 15.5000,\n'
            '        16.5000, 17.5000], grad_fn=<DivBackward0>)'
        ),
        id='suffix_after_wrapped',
    ),
    pytest.param(
        [1.23456, 2.5], 'float32', 'cpu', None, {'precision': 2},
        'tensor([1.23, 2.50])',
        id='opts_precision_2',
    ),
    pytest.param(
        [1., 2.], 'float32', 'cpu', None, {'sci_mode': True},
        'tensor([1.0000e+00, 2.0000e+00])',
        id='opts_sci_on',
    ),
    pytest.param(
        [1e-8, 1e10], 'float64', 'cpu', None, {'sci_mode': False},
        'tensor([          0.0000, 10000000000.0000], dtype=torch.float64)',
        id='opts_sci_off',
    ),
    pytest.param(
        [0., np.nan], 'float32', 'cpu', None, {'sci_mode': True},
        'tensor([0., nan])',
        id='opts_sci_on_zeros',
    ),
    pytest.param(
        np.arange(10), 'int64', 'cpu', None, {'threshold': 5, 'edgeitems': 2},
        'tensor([0, 1,  ..., 8, 9])',
        id='opts_threshold_edgeitems',
    ),
    pytest.param(
        np.arange(20).reshape(4, 5), 'float32', 'cpu', 'requires_grad=True', {'threshold': 5, 'edgeitems': 0},
        'tensor([...], size=(4, 5), requires_grad=True)',
        id='opts_edgeitems_0',
    ),
    pytest.param(
        np.arange(20), 'int64', 'cpu', None, {'threshold': 5, 'edgeitems': 0},
        'tensor([...], size=(20,))',
        id='opts_edgeitems_0_vector',
    ),
    pytest.param(
        np.arange(20) * 1.25, 'float32', 'cpu', 'requires_grad=True', {'linewidth': 40},
        (
            'tensor([ 0.0000,  1.2500,  2.5000,\n'
            '         3.7500,  5.0000,  6.2500,\n'
            '         7.5000,  8.7500, 10.0000,\n'
            '        11.2500, 12.5000, 13.7500,\n'
            '        15.0000, 16.2500, 17.5000,\n'
            '        18.7500, 20.0000, 21.2500,\n'
            '        22.5000, 23.7500],\n'
            '       requires_grad=True)'
        ),
        id='opts_linewidth',
    ),
    pytest.param(
        np.arange(2000) / 3, 'float32', 'cpu', None, {'profile': 'short'},
        'tensor([0.00e+00, 3.33e-01,  ..., 6.66e+02, 6.66e+02])',
        id='opts_profile_short',
    ),
    pytest.param(
        [1.23456, 20.5], 'float32', 'cpu', None, {'profile': 'short', 'precision': 3},
        'tensor([ 1.235, 20.500])',
        id='opts_profile_short_precision',
    ),
]


@pytest.mark.parametrize("data, dtype, device, grad, options, expected", KNOWN_CASES)
def test_known_output(data, dtype, device, grad, options, expected):
    if options:
        set_printoptions(**options)
    array = np.asarray(data, dtype=NP_DTYPES[dtype])
    assert tensor_repr(array, dtype, device=device, grad_suffix=grad) == expected


def test_profile_full_disables_summarization():
    data = np.arange(1001) % 10
    set_printoptions(profile="full")
    text = tensor_repr(data, "int64")
    assert "..." not in text
    assert text.count(",") == 1000
    set_printoptions(profile="default")
    assert "..." in tensor_repr(data, "int64")


def test_set_printoptions_state():
    assert get_printoptions() == {
        "precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None,
    }
    set_printoptions(profile="short", linewidth=100, sci_mode=True)
    assert get_printoptions() == {
        "precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 100, "sci_mode": True,
    }
    set_printoptions(precision=6)  # like torch, omitting sci_mode resets it
    assert get_printoptions()["sci_mode"] is None
    assert get_printoptions()["precision"] == 6
    set_printoptions(profile="default")
    assert get_printoptions()["precision"] == 4
    assert get_printoptions()["linewidth"] == 80


def test_unknown_dtype_rejected():
    with pytest.raises(ValueError):
        tensor_repr(np.zeros(2, np.complex64), "complex64")


def test_module_does_not_import_torch():
    code = "import sys, gradc._printing; assert 'torch' not in sys.modules"
    repo_root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=repo_root)


# --------------------------------------------------------------------------
# Randomized parity against torch
# --------------------------------------------------------------------------

_GRAD_FNS = {
    "grad_fn=<MulBackward0>": lambda t: t * 1,
    "grad_fn=<CloneBackward0>": lambda t: t.clone(),
}


@contextlib.contextmanager
def _torch_prints_device(torch, device):
    """Make torch print a CPU tensor as if it lived on ``device``.

    torch adds ``device='...'`` when the tensor's device differs from the
    default one, so we pretend the default is not the CPU and make the
    module's ``str`` spell the device as requested.
    """
    if device == "cpu":
        yield
        return
    import torch._tensor_str as tensor_str

    def fake_str(obj):
        return device if isinstance(obj, torch.device) else builtins.str(obj)

    original = torch._C._get_default_device
    torch._C._get_default_device = lambda: "not-the-cpu"
    tensor_str.str = fake_str
    try:
        yield
    finally:
        torch._C._get_default_device = original
        del tensor_str.str


def _torch_repr(torch, array, grad, device):
    tensor = torch.from_numpy(array.copy())
    if grad == "requires_grad=True":
        tensor.requires_grad_(True)
    elif grad is not None:
        tensor = _GRAD_FNS[grad](tensor.clone().requires_grad_(True))
    with _torch_prints_device(torch, device):
        return repr(tensor)


def _random_shape(rng, max_numel):
    ndim = int(rng.integers(0, 5))
    if rng.random() < 0.25 and ndim > 0 and max_numel > 1000:
        # large enough to be summarized (more than 1000 elements)
        caps = {1: 3000, 2: 60, 3: 16, 4: 9}
        while True:
            shape = tuple(int(rng.integers(1, caps[ndim] + 1)) for _ in range(ndim))
            if 1000 < np.prod(shape) <= max_numel:
                return shape
    choices = [0, 1, 1, 2, 3, 4, 5, 7]
    return tuple(int(rng.choice(choices)) for _ in range(ndim))


def _random_floats(rng, shape):
    size = int(np.prod(shape))
    style = rng.integers(0, 5)
    if style == 0:  # integer-valued
        values = np.round(rng.normal(0, 10.0 ** rng.integers(0, 10), size))
    elif style == 1:  # narrow range, fixed notation likely
        values = rng.uniform(-1, 1, size) * 10.0 ** rng.integers(-3, 4)
    elif style == 2:  # magnitudes spread over many decades
        low = rng.integers(-40, 10)
        exponents = rng.uniform(low, low + rng.integers(0, 50), size)
        values = rng.choice([-1.0, 1.0], size) * 10.0**exponents
    elif style == 3:  # extreme float64 magnitudes
        values = rng.choice([-1.0, 1.0], size) * 10.0 ** rng.uniform(-300, 300, size)
    else:
        values = rng.normal(0, 1, size)
    if rng.random() < 0.4:
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
        mask = rng.random(size) < 0.2
        values[mask] = rng.choice(specials, int(mask.sum()))
    return values.reshape(shape)


def _random_case(rng, max_numel=20000):
    dtype = str(rng.choice(list(NP_DTYPES)))
    shape = _random_shape(rng, max_numel)
    if dtype == "bool":
        array = rng.random(shape) < rng.random()
    elif dtype == "int64":
        bound = 10 ** int(rng.integers(0, 19))
        array = rng.integers(-bound, bound, size=shape, dtype=np.int64)
    else:
        with np.errstate(over="ignore"):
            array = _random_floats(rng, shape).astype(NP_DTYPES[dtype])
    grad = None
    if dtype.startswith("float"):
        grad = [None, "requires_grad=True", *_GRAD_FNS][int(rng.integers(0, 4))]
    device = "cuda:0" if rng.random() < 0.25 else "cpu"
    return np.asarray(array, dtype=NP_DTYPES[dtype]), dtype, grad, device


def _check_parity(torch, rng, count, max_numel=20000):
    mismatches = []
    for _ in range(count):
        array, dtype, grad, device = _random_case(rng, max_numel)
        expected = _torch_repr(torch, array, grad, device)
        actual = tensor_repr(array, dtype, device=device, grad_suffix=grad)
        if actual != expected:
            mismatches.append((array.shape, dtype, grad, device, expected, actual))
    assert not mismatches, "\n\n".join(
        f"shape={s} dtype={d} grad={g} device={dev}\ntorch:\n{e}\ngradc:\n{a}"
        for s, d, g, dev, e, a in mismatches[:3]
    )


@pytest.mark.parametrize("seed", range(8))
def test_random_parity_with_torch(seed):
    torch = pytest.importorskip("torch")
    _check_parity(torch, np.random.default_rng(seed), count=150)


PRINT_OPTION_SETS = [
    {"precision": 0},
    {"precision": 2, "linewidth": 40},
    {"precision": 8, "linewidth": 120},
    {"sci_mode": True},
    {"sci_mode": False, "precision": 3},
    {"threshold": 10, "edgeitems": 1},
    {"threshold": 5, "edgeitems": 0},
    {"threshold": 0, "edgeitems": 2, "linewidth": 20},
    {"profile": "short"},
    {"profile": "full"},
    {"profile": "short", "edgeitems": 4, "linewidth": 60},
]


@pytest.mark.parametrize("options", PRINT_OPTION_SETS, ids=str)
def test_print_options_parity_with_torch(options):
    torch = pytest.importorskip("torch")
    torch.set_printoptions(**options)
    set_printoptions(**options)
    try:
        _check_parity(torch, np.random.default_rng(1234), count=80, max_numel=3000)
    finally:
        torch.set_printoptions(profile="default")
        set_printoptions(profile="default")


def test_return_types_print_and_pickle_as_pytorchs():
    """One helper (gradc.return_types) makes every named result: printed as PyTorch prints them
    (mode's printed as a plain named tuple before), picklable, and named by gradc.return_types."""
    import pickle
    import gradc
    a = gradc.tensor([[1., 2., 2.], [3., 0., 3.]])
    assert repr(a.mode(1)) == ("torch.return_types.mode(\nvalues=tensor([2., 3.]),\nindices=tensor([2, 2]))")
    assert repr(a.aminmax()) == "torch.return_types.aminmax(\nmin=tensor(0.),\nmax=tensor(3.))"
    assert repr(gradc.frexp(gradc.tensor([4.0]))).startswith("torch.return_types.frexp(\nmantissa=tensor([0.5000]),")
    r = pickle.loads(pickle.dumps(a.max(1)))
    assert isinstance(r, gradc.return_types.max) and r.indices.tolist() == [1, 0]
    assert isinstance(a.mode(1), gradc.return_types.mode) and isinstance(a.mode(1), tuple)

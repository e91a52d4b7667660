"""The ConvLSTM layers never check `filters`. With `filters=0` they build an output without
channels, then fail in TF's convolution kernel when the model runs ("filter must not have
zero elements"). With `filters=-1`, building fails on a variable's shape ("Cannot convert
'(1, 1, -4)' to a shape"). No error names `filters` or the layer. Exits 1 while any of them
fails so, 0 once each names `filters`.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

cases = [
    ("ConvLSTM1D(filters=0, kernel_size=1)", lambda: keras.layers.ConvLSTM1D(filters=0, kernel_size=1), (1, 2, 3, 1)),
    ("ConvLSTM2D(filters=0, kernel_size=1)", lambda: keras.layers.ConvLSTM2D(filters=0, kernel_size=1), (1, 2, 3, 3, 1)),
    ("ConvLSTM3D(filters=0, kernel_size=1)", lambda: keras.layers.ConvLSTM3D(filters=0, kernel_size=1), (1, 2, 3, 3, 3, 1)),
    ("ConvLSTM1D(filters=-1, kernel_size=1)", lambda: keras.layers.ConvLSTM1D(filters=-1, kernel_size=1), (1, 2, 3, 1)),
]
unnamed = 0
for name, make, shape in cases:
    x = keras.Input(batch_shape=(None,) + shape[1:])
    where = "built"
    try:
        y = make()(x)
        where = f"ran (built with output shape {tuple(y.shape)})"
        keras.Model(x, y)(np.ones(shape, "float32"))
        print(f"{name}: runs")
        unnamed += 1
    except Exception as e:
        message = " ".join(str(e).split())
        unnamed += "`filters`" not in message and "filters=" not in message
        print(f"{name}: {type(e).__name__} when it {where}: {message[:150]}")
print("expected: a ValueError naming `filters`, when the layer is made (as Conv1D gives)")
sys.exit(1 if unnamed else 0)

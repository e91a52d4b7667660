"""Keras's strided pooling layers (Max/AveragePooling1D-3D) take a stride of 0 without
complaint, then divide by it: a `ZeroDivisionError` ("division by zero") while the layer is
built on its input, instead of a `ValueError` naming `strides`. Shows on Keras 3.3.3
(TF 2.16.2) and 3.15.1 (TF 2.21.0). Exits 1 while any of them divides by zero, 0 once each
refuses the argument with another error.
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
    ("MaxPooling2D(pool_size=2, strides=(0, 1))", lambda: keras.layers.MaxPooling2D(pool_size=2, strides=(0, 1)), (1, 2, 2, 1)),
    ("AveragePooling2D(pool_size=2, strides=(0, 1))", lambda: keras.layers.AveragePooling2D(pool_size=2, strides=(0, 1)), (1, 2, 2, 1)),
    ("MaxPooling1D(pool_size=2, strides=0)", lambda: keras.layers.MaxPooling1D(pool_size=2, strides=0), (1, 4, 1)),
    ("AveragePooling1D(pool_size=2, strides=0)", lambda: keras.layers.AveragePooling1D(pool_size=2, strides=0), (1, 4, 1)),
]
divided = 0
for name, make, shape in cases:
    x = keras.Input(batch_shape=(None,) + shape[1:])
    where = "built"
    try:
        y = make()(x)
        where = f"ran (built with output shape {tuple(y.shape)})"
        keras.Model(x, y)(np.ones(shape, "float32"))
        print(f"{name}: runs")
    except ZeroDivisionError:
        divided += 1
        print(f"{name}: ZeroDivisionError when it {where}")
    except Exception as e:  # the fixed behaviour: the argument is refused
        print(f"{name}: refused: {type(e).__name__}: {str(e).strip().splitlines()[0]}")
print("expected: a ValueError naming the zero stride, when the layer is made")
sys.exit(1 if divided else 0)

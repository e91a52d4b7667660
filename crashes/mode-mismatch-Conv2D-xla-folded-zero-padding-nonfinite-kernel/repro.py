"""Under XLA (`jit_compile=True`), a ZeroPadding2D/3D layer's zeros do not multiply the
weights of the Conv2D/Conv3D after it: a NaN weight times a padded zero gives NaN in eager
mode (IEEE: 0 * NaN = NaN) and vanishes under XLA, which folds the pad into the
convolution's own padding. Exits 1 while the modes differ, 0 once they agree.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

same = True
for dtype in ["float32", "float64"]:
    for rank, pad, conv in [
        (2, keras.layers.ZeroPadding2D, keras.layers.Conv2D),
        (3, keras.layers.ZeroPadding3D, keras.layers.Conv3D),
    ]:
        x = keras.Input((1,) * rank + (1,), dtype=dtype)
        layer = conv(1, 2, use_bias=False, dtype=dtype)
        model = keras.Model(x, layer(pad(1, dtype=dtype)(x)))
        kernel = np.ones((2,) * rank + (1, 1), dtype)
        kernel.flat[0] = np.nan  # the first tap meets a padded zero at every output but the last
        layer.set_weights([kernel])
        inputs = np.ones((1,) + (1,) * rank + (1,), dtype)
        eager = np.asarray(model(inputs)).ravel()
        xla = np.asarray(tf.function(model, jit_compile=True)(inputs)).ravel()
        print(f"{dtype} {conv.__name__}: eager {eager.tolist()}, XLA {xla.tolist()}")
        same &= np.array_equal(eager, xla, equal_nan=True)
sys.exit(0 if same else 1)

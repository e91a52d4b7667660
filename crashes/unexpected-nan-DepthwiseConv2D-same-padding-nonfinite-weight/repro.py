"""TF's "same"-padded convolutions treat a NaN or infinite weight that lies over the implicit
zero padding differently by dtype and by execution mode.

Keras documents padding "same" as padding the input evenly with zeros; zero times a NaN or
infinite weight is NaN (and Keras's explicit "causal" padding gives NaN). TF's float64 eager
and graph kernels (Eigen) multiply the padded zeros and give NaN; the float32 kernels (oneDNN)
and XLA in either dtype skip them and give a finite value. The same layer on the same
numbers therefore gives NaN or 2.0 depending on dtype and mode.
Exits 1 while the results differ, 0 once every dtype and mode agree.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

results = {}
for dtype in ["float32", "float64"]:
    keras.config.set_floatx(dtype)
    x = keras.Input((1, 1, 1), dtype=dtype)
    layer = keras.layers.DepthwiseConv2D(2, padding="same", use_bias=False, dtype=dtype)
    model = keras.Model(x, layer(x))
    # Taps (0, 0) = 1 over the input; (0, 1) = NaN, (1, 0) = inf, (1, 1) = 5 over the padding.
    layer.set_weights([np.array([1.0, np.nan, np.inf, 5.0], dtype).reshape(2, 2, 1, 1)])
    data = np.array([[[[2.0]]]], dtype)
    for mode, f in [("eager", model), ("xla", tf.function(model, jit_compile=True))]:
        results[dtype, mode] = float(np.asarray(f(data)).ravel()[0])
        print(f"{dtype} {mode:5}: {results[dtype, mode]}")

values = {"nan" if np.isnan(v) else v for v in results.values()}
print("padded zeros times NaN/inf give NaN (Keras's explicit padding):", "nan" in values)
sys.exit(0 if len(values) == 1 else 1)

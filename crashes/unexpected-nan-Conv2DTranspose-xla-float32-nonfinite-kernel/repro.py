"""XLA on CPU (float32) turns every output of a transposed convolution's filter into NaN
when one kernel weight is NaN.

A transposed convolution with padding "valid" scatters `x[i] * kernel[k]` to output `i + k`;
a NaN weight reaches only the outputs it is scattered to. Eager float32, eager float64 and XLA
float64 do so; float32 under `jit_compile=True` multiplies the weight by the zeros around and
between the inputs as well (0 * NaN = NaN), and every output of that filter is NaN.
Exits 1 while the bug is present, 0 once fixed.
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

keras.config.set_floatx("float32")
x = keras.Input((2, 2, 1))
layer = keras.layers.Conv2DTranspose(1, 2, use_bias=False)
model = keras.Model(x, layer(x))
kernel = np.ones((2, 2, 1, 1), "float32")
kernel[0, 1, 0, 0] = np.nan
layer.set_weights([kernel])

data = np.ones((1, 2, 2, 1), "float32")
# The scatter: out[i + k] += x[i] * kernel[k]; the NaN tap (0, 1) reaches columns 1 and 2 of rows 0 and 1.
expected = np.array([[1, np.nan, np.nan], [2, np.nan, np.nan], [1, 2, 1]], "float32")

ok = True
for mode, f in [("eager", model), ("xla", tf.function(model, jit_compile=True))]:
    out = np.asarray(f(data))[0, :, :, 0]
    print(f"{mode:5}: {out.tolist()}")
    ok &= np.array_equal(out, expected, equal_nan=True)
print(f"expected: {expected.tolist()}")
sys.exit(0 if ok else 1)

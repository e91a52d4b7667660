"""oneDNN's float32 transposed convolution (1-D, 2-D and 3-D) with strides above 1 turns
outputs that a non-finite kernel weight never reaches into NaN.

A transposed convolution with padding "valid" scatters `x[i] * kernel[k]` to output
`i * s + k`. With kernel [1, 1, -inf], stride 2 and one input of 1, the outputs are
[1, 1, -inf]: the -inf tap reaches output 2 only. TF's float32 kernel (oneDNN) gives NaN at
output 0, as if it multiplied the weight by the zeros between the strided inputs
(0 * inf = NaN); float64 and oneDNN switched off (TF_ENABLE_ONEDNN_OPTS=0) give the scatter.
Exits 1 while the bug is present, 0 once fixed.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import keras  # noqa: E402

expected = [1.0, 1.0, -np.inf]
ok = True
for dtype in ["float32", "float64"]:
    x = keras.Input((1, 1), dtype=dtype)
    layer = keras.layers.Conv1DTranspose(1, 3, strides=2, use_bias=False, dtype=dtype)
    model = keras.Model(x, layer(x))
    layer.set_weights([np.array([1, 1, -np.inf], dtype).reshape(3, 1, 1)])
    out = np.asarray(model(np.ones((1, 1, 1), dtype)))[0, :, 0].tolist()
    print(f"{dtype}: {out}")
    ok &= np.array_equal(out, expected)
print(f"expected: {expected}")

# Conv3DTranspose: kernel 3, stride 2, +inf at the first tap, a 3x3x3 input of ones. Every
# product is 1 or +inf, so no output of the scatter is NaN.
x = keras.Input((3, 3, 3, 1))
layer = keras.layers.Conv3DTranspose(1, 3, strides=2, use_bias=False)
model = keras.Model(x, layer(x))
kernel = np.ones((3, 3, 3, 1, 1), "float32")
kernel[0, 0, 0] = np.inf
layer.set_weights([kernel])
nans = int(np.isnan(np.asarray(model(np.ones((1, 3, 3, 3, 1), "float32")))).sum())
print(f"float32 Conv3DTranspose: {nans} NaN outputs, expected 0")
ok &= nans == 0
sys.exit(0 if ok else 1)

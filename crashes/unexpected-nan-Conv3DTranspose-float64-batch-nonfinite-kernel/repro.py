"""TF's float64/float16 Conv3DTranspose kernel spreads a non-finite kernel weight over
outputs it does not reach, once the batch holds more than one example.

A transposed convolution with padding "valid" scatters `x[i] * kernel[k]` onto output `i + k`.
With kernel taps (inf, 1) along the first spatial axis and an input of ones, the outputs are
`[inf, 1]` per example. With a batch of one the float64 kernel gives that; with a batch of
two it gives `[inf, nan]` for the same first example (the infinite tap meets the zeros the
kernel pads around the input: 0 * inf = NaN). Float32 (oneDNN) is right in both.
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

ok = True
for dtype in ["float64", "float16", "float32"]:
    x = keras.Input((1, 1, 1, 1), dtype=dtype)
    layer = keras.layers.Conv3DTranspose(1, (2, 1, 1), use_bias=False, dtype=dtype)
    model = keras.Model(x, layer(x))
    layer.set_weights([np.array([np.inf, 1.0], dtype).reshape(2, 1, 1, 1, 1)])
    for batch in [1, 2]:
        out = np.asarray(model(np.ones((batch, 1, 1, 1, 1), dtype)))[0].ravel().tolist()
        print(f"{dtype}, batch {batch}: first example {out} (expected [inf, 1.0])")
        ok &= out == [np.inf, 1.0]
sys.exit(0 if ok else 1)

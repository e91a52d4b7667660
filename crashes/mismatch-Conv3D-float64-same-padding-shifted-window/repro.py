"""TF's float64/float16 Conv3D kernel shifts a `same`-padded window into the input when the
strides skip past its end.

`padding="same"` pads `max((out - 1) * stride + kernel - n, 0)` zeros in all, half of them
(rounded down) before the input. For n = 4, kernel 1, stride 4 there is one output and no
padding: the window is input position 0. The float64 and float16 kernels use the unclamped
`(out - 1) * stride + kernel - n = -3` and start the window at position 1 (a negative
padding of -1). Float32 (oneDNN) and the other convolution ranks clamp at 0.
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
    x = keras.Input((1, 4, 1, 1), dtype=dtype)
    layer = keras.layers.Conv3D(1, 1, strides=4, padding="same", use_bias=False, dtype=dtype)
    model = keras.Model(x, layer(x))
    layer.set_weights([np.ones((1, 1, 1, 1, 1), dtype)])
    data = np.arange(1, 5, dtype=dtype).reshape(1, 1, 4, 1, 1)  # 1, 2, 3, 4 along the rows
    out = np.asarray(model(data)).ravel().tolist()
    print(f"{dtype}: {out} (expected [1.0], the first row)")
    ok &= out == [1.0]
sys.exit(0 if ok else 1)

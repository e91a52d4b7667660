"""Keras's transposed convolutions declare an output length TF cannot produce for
padding="same", output_padding=0 and an even (dilated) kernel; the model builds and only the
TF kernel refuses it when it runs.

Keras computes the length as `(n - 1)·s + k - 2·(k // 2) + output_padding`: for
`Conv1DTranspose(1, 2, padding="same", output_padding=0)` on 3 steps that is 2, shorter than
the input. TF derives from an output of 2 an input of 2 steps, not 3, and
`Conv2DBackpropInput` fails. Exits 1 while the model builds and only the call fails, 0 once
Keras refuses the arguments when the layer is built or runs it with a consistent length.
"""

import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402

keras.config.set_floatx("float64")
x = keras.Input((3, 1))
try:
    layer = keras.layers.Conv1DTranspose(1, 2, padding="same", output_padding=0)
    model = keras.Model(x, layer(x))
except ValueError as e:
    print("refused when built:", e)
    sys.exit(0)
print("built; Keras's output shape", model.output.shape)
try:
    out = model(np.ones((1, 3, 1)))
except Exception as e:  # noqa: BLE001
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    line = next((s for s in text.splitlines() if "Conv" in s and "{{" in s), text)
    print("raised only when called:", type(e).__name__, line.strip()[:300])
    sys.exit(1)
print("ran:", np.asarray(out).shape)
sys.exit(0 if np.asarray(out).shape == tuple(d or 1 for d in model.output.shape) else 1)

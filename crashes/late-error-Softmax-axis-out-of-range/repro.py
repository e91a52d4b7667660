"""Keras accepts `Softmax(axis=3)` (axis=3 on a rank-3 input) when the model is built; the
error comes only when the model runs, from inside a TF kernel (InvalidArgumentError).

Exits 1 while the model builds and only the call fails, 0 once Keras refuses the argument
when the layer is built (a ValueError naming the layer's `axis`).
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

x = keras.Input((2, 3))
try:
    model = keras.Model(x, keras.layers.Softmax(axis=3)(x))
except ValueError as e:
    print("refused when built:", e)
    sys.exit(0)
print("built; output shape", model.output.shape)
try:
    model(np.ones((1, 2, 3), "float32"))
except Exception as e:  # noqa: BLE001
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    print("raised only when called:", type(e).__name__, " | ".join(s for s in text.splitlines() if s.strip())[:300])
    sys.exit(1)
print("ran")
sys.exit(1)

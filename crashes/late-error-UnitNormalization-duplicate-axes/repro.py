"""Keras accepts `UnitNormalization(axis=[2, -1])` (axis 2 twice on a rank-3 input) when the
model is built, and so do `LayerNormalization` and `RMSNormalization`; the error comes only
when the model runs, from inside a TF reduction kernel (InvalidArgumentError).

Exits 1 while any of the three builds and only the call fails, 0 once Keras refuses the
argument when the layer is built (a ValueError naming the layer's `axis`).
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

late = False
for layer in [keras.layers.UnitNormalization, keras.layers.LayerNormalization, keras.layers.RMSNormalization]:
    name = layer.__name__
    x = keras.Input((2, 3))
    try:
        model = keras.Model(x, layer(axis=[2, -1])(x))
    except ValueError as e:
        print(f"{name}: refused when built:", e)
        continue
    try:
        model(np.ones((1, 2, 3), "float32"))
    except Exception as e:  # noqa: BLE001
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
        line = next((s for s in text.splitlines() if "duplicate" in s), text.splitlines()[0])
        print(f"{name}: built, raised only when called:", type(e).__name__, line.strip()[:200])
    else:
        print(f"{name}: built and ran")
    late = True
sys.exit(1 if late else 0)

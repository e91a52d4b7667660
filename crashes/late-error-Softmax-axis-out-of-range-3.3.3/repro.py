"""Keras 3.3.3 accepts `Softmax(axis=3)` (axis=3 on a rank-3 input) when the model is built;
the error comes only when the model runs: an `IndexError` ("tuple index out of range") from
the layer's own look-up of the axis's length (a list of axes, e.g. `Softmax(axis=[2, 7])` on
a rank-2 input, reaches TF's reduction kernel instead: InvalidArgumentError "Invalid
reduction dimension"). Keras 3.15.1 fails on both in the kernel
(crashes/late-error-Softmax-axis-out-of-range).

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

failed_late = 0
for axis, shape in [(3, (2, 3)), ([2, 7], (160,))]:
    x = keras.Input(shape)
    try:
        model = keras.Model(x, keras.layers.Softmax(axis=axis)(x))
    except ValueError as e:
        print(f"Softmax(axis={axis}) on rank {len(shape) + 1}: refused when built:", e)
        continue
    print(f"Softmax(axis={axis}) on rank {len(shape) + 1}: built; output shape", model.output.shape)
    try:
        model(np.ones((1,) + shape, "float32"))
        print("  ran")
    except Exception as e:  # noqa: BLE001
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
        print("  raised only when called:", type(e).__name__, " | ".join(s for s in text.splitlines() if s.strip())[:300])
    failed_late += 1
sys.exit(1 if failed_late else 0)

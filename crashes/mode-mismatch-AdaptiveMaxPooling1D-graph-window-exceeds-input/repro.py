"""Keras's adaptive pooling (TF backend) fails to trace in a tf.function / under XLA (so in
model.predict and model.fit) whenever one output size is 1 or one input axis has length 1,
while the same layer runs eagerly.

The backend pools with two VALID pools, of windows `small = ceil(length / output_size)` and
`big = small + 1`, and gathers from both. When `small >= length`, the `big` window is longer
than the input: the eager kernel returns an empty pool (never gathered), but graph
construction's shape inference refuses it ("Negative dimension size"). Exits 1 while the bug
is present, 0 once fixed.
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
import tensorflow as tf  # noqa: E402

keras.config.set_floatx("float64")
x = keras.Input((3, 1))
model = keras.Model(x, keras.layers.AdaptiveMaxPooling1D(output_size=1)(x))
data = np.array([[[1.0], [2.0], [3.0]]])

ok = True
for mode, f in [
    ("eager", model),
    ("graph", tf.function(model)),
    ("xla", tf.function(model, jit_compile=True)),
    ("predict", lambda d: model.predict(d, verbose=0)),
]:
    try:
        print(f"{mode:7}: {np.asarray(f(data)).ravel().tolist()}")
    except Exception as e:  # noqa: BLE001
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
        msg = next((line for line in text.splitlines() if "Negative" in line), text)
        print(f"{mode:7}: {type(e).__name__}: {msg.strip()[:140]}")
        ok = False
sys.exit(0 if ok else 1)

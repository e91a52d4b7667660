"""Keras's Dot layer refuses the batch axis (`axes=0`) only when it is called on data; when a
functional model is built, it declares an output shape for it without complaint, and a
wrong one.

`Dot(axes=0)` on two inputs of shape (None, 3, 4) declares an output of shape (3, 4, 4): the
batch axis is gone, and the input's first non-batch size stands in its place. The layers
after it are built on that shape, so the model fails (or not) at some later layer, in words
about shapes that do not name the Dot. Called on data, the same layer refuses clearly:
"Cannot perform batch_dot over axis 0". Exits 1 while a model builds on the declared shape,
0 once building refuses the axis.
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

accepted = False
a, b = keras.Input((3, 4)), keras.Input((3, 4))
try:
    declared = keras.layers.Dot(axes=0)([a, b])
    accepted = True
    print(f"Dot(axes=0) on {a.shape} and {b.shape}: builds, declared output {declared.shape}")
except Exception as e:  # the fixed behaviour
    print(f"Dot(axes=0): refused when built: {type(e).__name__}: {str(e).splitlines()[0]}")

x = np.ones((2, 3, 4), "float32")
try:
    out = keras.layers.Dot(axes=0)([x, x])
    print(f"called on {x.shape}: output {tuple(out.shape)}")
except Exception as e:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))  # Keras's bold markers
    lines = [line for line in text.splitlines() if line.strip()]
    print(f"called on {x.shape}: {type(e).__name__}: {lines[1] if len(lines) > 1 else lines[0]}")
print("expected: a ValueError naming `axes` when the layer is built, as when it is called")
sys.exit(1 if accepted else 0)

"""XLA on CPU drops NaN in tf.maximum / tf.minimum (Keras's Maximum / Minimum layers).

Eager and graph mode propagate NaN through `tf.maximum` and `tf.minimum` (as NumPy's
`maximum`/`minimum` do); the same op compiled with `jit_compile=True` on CPU returns the
other operand when the NaN is the second one, so the result depends on the execution mode
and on the operand order. Exits 1 while the bug is present, 0 once fixed.
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
a = keras.Input((4,), name="a")
b = keras.Input((4,), name="b")
model = keras.Model([a, b], [keras.layers.Maximum()([a, b]), keras.layers.Minimum()([a, b])])

xa = np.array([[np.nan, 1.0, np.nan, -np.inf]], "float32")
xb = np.array([[2.0, np.nan, np.nan, np.nan]], "float32")
expected = np.full((1, 4), np.nan, "float32")  # np.maximum / np.minimum: NaN everywhere

ok = True
for mode, f in [("eager", model), ("xla", tf.function(model, jit_compile=True))]:
    for name, out in zip(["maximum", "minimum"], f([xa, xb])):
        out = np.asarray(out)
        print(f"{mode:5} {name}: {out.ravel().tolist()}")
        if not np.array_equal(out, expected, equal_nan=True):
            ok = False
print("expected (numpy):", np.maximum(xa, xb).ravel().tolist())
sys.exit(0 if ok else 1)

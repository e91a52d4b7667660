"""oneDNN's graph-mode convolution cannot run SeparableConv2D(filters=1, kernel_size=1) on one
channel (float32, batch of 2 or more).

Eager mode computes the layer; the same model in `tf.function` raises AbortedError ("could not
create a primitive descriptor for the reorder primitive", mkl_conv_ops.cc). With
TF_ENABLE_ONEDNN_OPTS=0 both modes agree. Exits 1 while the bug is present, 0 once fixed.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

x = keras.Input((1, 1, 1))
model = keras.Model(x, keras.layers.SeparableConv2D(filters=1, kernel_size=1)(x))
feed = np.array([1.0, -3.0], "float32").reshape(2, 1, 1, 1)

eager = np.asarray(model(feed))
print("eager:", eager.ravel().tolist())
try:
    graph = np.asarray(tf.function(model)(feed))
except tf.errors.AbortedError as e:
    print("graph raises AbortedError:", [l for l in str(e).splitlines() if "primitive" in l][:1])
    sys.exit(1)
print("graph:", graph.ravel().tolist())
sys.exit(0 if np.allclose(eager, graph) else 1)

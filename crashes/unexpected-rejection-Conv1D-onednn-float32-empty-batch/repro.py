"""With oneDNN (TF's default on x86 CPUs), a float32 convolution of an empty batch returns
a tensor with the input's channels instead of the filters': conv1d of (0, 5, 2) with a
(2, 2, 3) kernel gives (0, 5, 2). float64, or TF_ENABLE_ONEDNN_OPTS=0, gives (0, 5, 3).
Keras's Conv1D then fails adding its bias. Exits 1 while the bug is present, 0 once fixed.
Needs TensorFlow only."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

y = tf.nn.conv1d(tf.zeros((0, 5, 2)), tf.zeros((2, 2, 3)), stride=1, padding="SAME")
print("float32 conv1d of an empty batch:", tuple(y.shape), "expected (0, 5, 3)")
sys.exit(0 if tuple(y.shape) == (0, 5, 3) else 1)

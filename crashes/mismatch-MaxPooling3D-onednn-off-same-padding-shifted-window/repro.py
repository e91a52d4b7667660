"""TensorFlow's float32 MaxPool3D/AvgPool3D kernel without oneDNN (TF's default on CPUs
without AVX-512) shifts a `SAME` window into the input where the strides step past a short
axis: ksize 1, stride 3 on an axis of 3 must take element 0; it takes element 1.

Exits 1 while either op (or the Keras layer) takes the wrong element, 0 once all are right.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The kernels TF picks itself on CPUs without AVX-512 (with oneDNN on, float32 is right).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

x = np.array([4.0, -4.0, -4.0], dtype="float32").reshape(1, 1, 1, 3, 1)
results = {
    "tf.nn.max_pool3d": tf.nn.max_pool3d(x, ksize=1, strides=3, padding="SAME"),
    "tf.nn.avg_pool3d": tf.nn.avg_pool3d(x, ksize=1, strides=3, padding="SAME"),
    "keras.layers.MaxPooling3D": keras.layers.MaxPooling3D(1, strides=3, padding="same")(x),
}
bad = False
for name, y in results.items():
    y = np.asarray(y).ravel().tolist()
    print(f"{name}(ksize 1, stride 3, SAME) on {x.ravel().tolist()}: {y} (expected [4.0])")
    bad |= y != [4.0]
print(f"TF {tf.__version__}, TF_ENABLE_ONEDNN_OPTS={os.environ['TF_ENABLE_ONEDNN_OPTS']}")
sys.exit(1 if bad else 0)

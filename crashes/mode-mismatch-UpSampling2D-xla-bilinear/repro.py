"""Bilinear resize compiled with XLA returns the wrong neighbour where a sample point lands
exactly on an input pixel.

tf.image.resize(..., "bilinear") (and keras.layers.UpSampling2D(interpolation="bilinear"),
which calls it) inside tf.function(jit_compile=True) gives, for an upscale of 6 -> 18 pixels,
x[k + 1] instead of x[k] at some outputs whose source coordinate is the integer k: the output
jumps by a whole input step. Eager and plain tf.function agree with the exact value.

Exits 1 while the bug is present, 0 once fixed. Needs only TensorFlow, Keras and NumPy.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

x = np.arange(6, dtype=np.float32).reshape(1, 1, 6, 1)


def resize(t):
    return tf.image.resize(t, (1, 18), "bilinear")


# Half-pixel centres: output j samples input coordinate (j + 0.5) * 6 / 18 - 0.5, clamped at 0.
coordinate = np.clip((np.arange(18) + 0.5) / 3 - 0.5, 0, 5)
expected = np.interp(coordinate, np.arange(6), x.ravel())
eager = resize(tf.constant(x)).numpy().ravel()
xla = tf.function(resize, jit_compile=True)(tf.constant(x)).numpy().ravel()

layer = keras.layers.UpSampling2D(size=(1, 3), interpolation="bilinear")
layer_xla = tf.function(layer, jit_compile=True)(tf.constant(x)).numpy().ravel()

np.set_printoptions(precision=4, linewidth=120)
print("expected          ", expected)
print("eager             ", eager)
print("xla               ", xla)
print("UpSampling2D, xla ", layer_xla)
bad = np.flatnonzero(np.abs(xla - expected) > 1e-5)
print("wrong at outputs", bad.tolist(), "(source coordinates", coordinate[bad].tolist(), ")")
assert np.allclose(eager, expected, atol=1e-5), "eager itself is off"
sys.exit(1 if bad.size or not np.allclose(layer_xla, expected, atol=1e-5) else 0)

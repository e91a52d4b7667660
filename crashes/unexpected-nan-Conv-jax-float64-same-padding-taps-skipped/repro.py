"""JAX backend, float64 (jax_enable_x64): a `same`-padded convolution (and the recurrent
convolution of a ConvLSTM) skips the implicit zero padding, so a NaN/inf weight on a tap that
meets only padding leaves the output finite, where zero padding then convolving gives NaN
(0 * inf = NaN), as TensorFlow float64 eager (Eigen) and the reference do. Eager and jit alike:
every JAX op is an XLA computation. Exits 1 while JAX's result is finite. Needs JAX, Keras, NumPy.
"""
import os
import sys

os.environ["KERAS_BACKEND"] = "jax"
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402
import keras  # noqa: E402

bad = False
# Conv1D(1, 3, padding="same") on one position: taps 0 and 2 meet only padding.
conv = keras.layers.Conv1D(1, 3, padding="same", use_bias=False, dtype="float64")
conv.build((1, 1, 1))
conv.set_weights([np.array([np.inf, 1.0, 1.0]).reshape(3, 1, 1)])
y = np.asarray(conv(np.array([[[2.0]]])))
print("Conv1D same, inf on a padding-only tap:", y.ravel(), "(expected NaN)")
bad |= bool(np.isfinite(y).all())

# ConvLSTM1D: the recurrent convolution is always `same`; inf on its padding-only tap.
lstm = keras.layers.ConvLSTM1D(1, 3, padding="same", dtype="float64")
lstm.build((1, 2, 1, 1))
w = [np.full(v.shape, 0.5) for v in lstm.get_weights()]
w[1][0] = np.inf  # recurrent kernel, tap 0
lstm.set_weights(w)
x = np.full((1, 2, 1, 1), 0.5)
for mode, f in [("eager", lambda: lstm(x)), ("jit", lambda: jax.jit(lambda v: lstm(v))(x))]:
    y = np.asarray(f())
    print(f"ConvLSTM1D {mode}, inf on the recurrent kernel's padding-only tap:", y.ravel(), "(expected NaN)")
    bad |= bool(np.isfinite(y).all())
sys.exit(1 if bad else 0)

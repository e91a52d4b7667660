"""AdaptiveMaxPooling2D(output_size=[2, 4]) on a rank-3 input runs the 1-D pooling instead of
refusing the input, and the model declares the 2-D output shape; AdaptiveMaxPooling1D on a
rank-4 input, and AdaptiveAveragePooling2D on a rank-2 one, build and fail only when they
run. Exits 1 while the bug is present, 0 once fixed (a refusal of the rank-3 input counts as
fixed). Needs only TensorFlow, Keras and NumPy.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on
# some CPUs).
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers, ops  # noqa: E402,F401

keras.config.set_floatx("float32")
keras.config.set_dtype_policy("float32")

input_layer_2_0 = keras.Input(batch_shape=(None, 2, 1,), dtype="float32", name="input_layer_2")
adaptive_max_pooling2d_ = layers.AdaptiveMaxPooling2D(output_size=[2, 4], name="adaptive_max_pooling2d")
adaptive_max_pooling2d_0 = adaptive_max_pooling2d_(input_layer_2_0)
model = keras.Model(input_layer_2_0, adaptive_max_pooling2d_0)

inputs = [np.array([0.0, 0.0], dtype="float32").reshape([1, 2, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

# The reference calls this model invalid: AdaptiveMaxPooling2D 'adaptive_max_pooling2d': input[0]=rank 3 has the wrong rank: Keras runs the 1-D pooling to output_size[0]=2 instead of refusing it (expected rank 4)
present = False
try:
    out = model(feed, training=False)
    print("TensorFlow runs it:", out)
    print("declared output shape:", adaptive_max_pooling2d_0.shape, "actual:", tuple(out.shape))
    present = True
except Exception as e:
    print("TensorFlow refuses it:", type(e).__name__, e)


def builds_on(layer, what, shape):
    """Whether `layer` builds on inputs of `shape` (batch first); prints what it declares and
    how the model fails when it runs."""
    x = keras.Input(batch_shape=(None,) + shape, dtype="float32")
    try:
        y = layer(x)
    except Exception as e:
        print(f"{what} on {(None,) + shape} refused when built:", type(e).__name__)
        return False
    print(f"{what} on {(None,) + shape} builds, declaring", tuple(y.shape))
    try:
        keras.Model(x, y)(np.zeros((1,) + shape, "float32"))
    except Exception as e:
        print("  and fails when it runs:", type(e).__name__, " ".join(str(e).split())[:160])
    return True


# Other ranks build, declaring an output of the layer's own rank, and fail only when the
# model runs, inside the backend: the 1-D pooling on a rank-4 input, the 2-D one on rank 2.
present |= builds_on(layers.AdaptiveMaxPooling1D(3), "AdaptiveMaxPooling1D(3)", (1, 1, 1))
present |= builds_on(
    layers.AdaptiveAveragePooling2D([2, 2]), "AdaptiveAveragePooling2D([2, 2])", (4,)
)
sys.exit(1 if present else 0)

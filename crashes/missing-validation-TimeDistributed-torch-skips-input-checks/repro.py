"""Standalone repro of the semfuzz case missing-validation-TimeDistributed-torch-skips-input-checks/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in
PyTorch (eager).

The reference calls the model invalid: exits 1 while PyTorch takes it (runs it, or
builds 'time_distributed' and only a later layer refuses while the model is built), 0 once it
is refused at 'time_distributed' (or before), built or run.

Needs only PyTorch, Keras and NumPy.
"""

import os

# The backend, chosen before Keras is imported.
os.environ["KERAS_BACKEND"] = "torch"
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

# The reference calls this model invalid: TimeDistributed 'time_distributed': layer.input[0]=rank 2 has the wrong rank (expected rank 3)
error = None
try:
    input_layer_0 = keras.Input(batch_shape=(None, 6, 8,), dtype="float32", name="input_layer")
    time_distributed_ = layers.TimeDistributed(layer=keras.saving.deserialize_keras_object({"module": "keras.layers", "class_name": "MaxPooling1D", "config": {"pool_size": 2, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}}}), name="time_distributed")
    time_distributed_0 = time_distributed_(input_layer_0)
    reshape_ = layers.Reshape(target_shape=[6, 4], name="reshape")
    reshape_0 = reshape_(time_distributed_0)
    model = keras.Model(input_layer_0, reshape_0)

    inputs = [np.array([0.273923, -0.460427, -0.918053, -0.966945, 0.62654, 0.825511, 0.213272, 0.458993, 0.08725, 0.870145, 0.631707, -0.994523, 0.714809, -0.932829, 0.459311, -0.648689, 0.726358, 0.082922, -0.400576, -0.154626, -0.943361, -0.751433, 0.341249, 0.294379, 0.23077, -0.232645, 0.99442, 0.961671, 0.371084, 0.300919, 0.376893, -0.222157, -0.729807, 0.442977, 0.050709, -0.379516, -0.028329, 0.778976, 0.868087, -0.28441, 0.14306, -0.356261, 0.1886, -0.324178, -0.216762, 0.780549, -0.545685, 0.246374, -0.831969, 0.665288, 0.574197, -0.521261, 0.752968, -0.882864, -0.327766, -0.699441, -0.099321, 0.592649, -0.538716, -0.895957, -0.190896, -0.602974, -0.818494, 0.160665, -0.402608, 0.34399, -0.600969, 0.884226, -0.26978, -0.789009, 0.258216, 0.854309, -0.119246, 0.909181, -0.000208, -0.149543, 0.240427, 0.990193, 0.897887, -0.07991, 0.515458, -0.005155, 0.058624, 0.571571, -0.170688, 0.468967, 0.422286, 0.864119, -0.770135, 0.45803, 0.854848, 0.935852, -0.970587, 0.72728, 0.96239, 0.91442], dtype="float32").reshape([2, 6, 8])]
    feed = inputs[0] if len(inputs) == 1 else inputs
    out = model(feed, training=False)
except Exception as e:  # noqa: BLE001
    error = e
if error is None:
    print("PyTorch runs it:", out)
else:
    print("PyTorch refuses it:", type(error).__name__, error)
# missing-validation: whether every call of the invalid layer was made when a later layer
# refused, while the model was built.
past = "model" not in globals() and all(c in globals() for c in ["time_distributed_0"])
sys.exit(1 if error is None or past else 0)

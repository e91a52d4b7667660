"""Standalone repro of the semfuzz case crashes/unexpected-rejection-Maximum-time-distributed-mask-rank/case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
TensorFlow (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree, 0 when they agree.
Needs only TensorFlow, Keras and NumPy.
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

input_1_0 = keras.Input(batch_shape=(None, 2, 8, 1,), dtype="float32", name="input_1")
not_equal_0 = keras.src.ops.numpy.NotEqual(name="not_equal")(input_1_0, 0.0)
masking_ = layers.Masking(mask_value=0.0, name="masking")
masking_0 = masking_(input_1_0)
any_0 = keras.src.ops.numpy.Any(name="any", axis=-1, keepdims=False)(not_equal_0)
time_distributed_ = layers.TimeDistributed(layer=keras.saving.deserialize_keras_object({"module": "keras.layers", "class_name": "Flatten", "config": {"name": "flatten", "trainable": True, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}, "data_format": "channels_last"}, "registered_name": None, "build_config": {"input_shape": [None, 8, 1]}}), name="time_distributed")
time_distributed_0 = time_distributed_(masking_0, mask=any_0)
maximum_ = layers.Maximum(name="maximum")
maximum_0 = maximum_([time_distributed_0, time_distributed_0])
model = keras.Model(input_1_0, maximum_0)

inputs = [np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75], dtype="float32").reshape([1, 2, 8, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75], dtype="float64").reshape([1, 2, 8])]  # semfuzz's reference (f64)
ATOL, RTOL = 1e-300, 2.220446049250313e-16  # loosest layer tolerance x depth 6

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
    print(f"output {i}: TensorFlow {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False
sys.exit(0 if ok else 1)

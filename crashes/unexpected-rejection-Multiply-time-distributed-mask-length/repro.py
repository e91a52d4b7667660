"""Standalone repro of the semfuzz case case.case.json.

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

input_1_0 = keras.Input(batch_shape=(None, 3, 7, 8,), dtype="float32", name="input_1")
not_equal_0 = keras.src.ops.numpy.NotEqual(name="not_equal")(input_1_0, 0.0)
masking_ = layers.Masking(mask_value=0.0, name="masking")
masking_0 = masking_(input_1_0)
any_0 = keras.src.ops.numpy.Any(name="any", axis=-1, keepdims=False)(not_equal_0)
time_distributed_ = layers.TimeDistributed(layer=keras.saving.deserialize_keras_object({"module": "keras.layers", "class_name": "MaxPooling1D", "config": {"name": "max_pooling1d", "trainable": True, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}, "pool_size": [2], "padding": "valid", "strides": [2], "data_format": "channels_last"}, "registered_name": None}), name="time_distributed")
time_distributed_0 = time_distributed_(masking_0, mask=any_0)
multiply_ = layers.Multiply(name="multiply")
multiply_0 = multiply_([time_distributed_0, time_distributed_0])
model = keras.Model(input_1_0, multiply_0)

inputs = [np.array([0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375, 0.5, 0.5625, 0.625, 0.6875, 0.75, 0.8125, 0.875, 0.9375, 1.0, 1.0625, 1.125, 1.1875, 1.25, 1.3125, 1.375, 1.4375, 1.5, 1.5625, 1.625, 1.6875, 1.75, 1.8125, 1.875, 1.9375, 2.0, 2.0625, 2.125, 2.1875, 2.25, 2.3125, 2.375, 2.4375, 2.5, 2.5625, 2.625, 2.6875, 2.75, 2.8125, 2.875, 2.9375, 3.0, 3.0625, 3.125, 3.1875, 3.25, 3.3125, 3.375, 3.4375, 3.5, 3.5625, 3.625, 3.6875, 3.75, 3.8125, 3.875, 3.9375, 4.0, 4.0625, 4.125, 4.1875, 4.25, 4.3125, 4.375, 4.4375, 4.5, 4.5625, 4.625, 4.6875, 4.75, 4.8125, 4.875, 4.9375, 5.0, 5.0625, 5.125, 5.1875, 5.25, 5.3125, 5.375, 5.4375, 5.5, 5.5625, 5.625, 5.6875, 5.75, 5.8125, 5.875, 5.9375, 6.0, 6.0625, 6.125, 6.1875, 6.25, 6.3125, 6.375, 6.4375, 6.5, 6.5625, 6.625, 6.6875, 6.75, 6.8125, 6.875, 6.9375, 7.0, 7.0625, 7.125, 7.1875, 7.25, 7.3125, 7.375, 7.4375, 7.5, 7.5625, 7.625, 7.6875, 7.75, 7.8125, 7.875, 7.9375, 8.0, 8.0625, 8.125, 8.1875, 8.25, 8.3125, 8.375, 8.4375, 8.5, 8.5625, 8.625, 8.6875, 8.75, 8.8125, 8.875, 8.9375, 9.0, 9.0625, 9.125, 9.1875, 9.25, 9.3125, 9.375, 9.4375, 9.5, 9.5625, 9.625, 9.6875, 9.75, 9.8125, 9.875, 9.9375, 10.0, 10.0625, 10.125, 10.1875, 10.25, 10.3125, 10.375, 10.4375, 10.5], dtype="float32").reshape([1, 3, 7, 8])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([0.31640625, 0.390625, 0.47265625, 0.5625, 0.66015625, 0.765625, 0.87890625, 1.0, 2.44140625, 2.640625, 2.84765625, 3.0625, 3.28515625, 3.515625, 3.75390625, 4.0, 6.56640625, 6.890625, 7.22265625, 7.5625, 7.91015625, 8.265625, 8.62890625, 9.0, 16.50390625, 17.015625, 17.53515625, 18.0625, 18.59765625, 19.140625, 19.69140625, 20.25, 25.62890625, 26.265625, 26.91015625, 27.5625, 28.22265625, 28.890625, 29.56640625, 30.25, 36.75390625, 37.515625, 38.28515625, 39.0625, 39.84765625, 40.640625, 41.44140625, 42.25, 57.19140625, 58.140625, 59.09765625, 60.0625, 61.03515625, 62.015625, 63.00390625, 64.0, 73.31640625, 74.390625, 75.47265625, 76.5625, 77.66015625, 78.765625, 79.87890625, 81.0, 91.44140625, 92.640625, 93.84765625, 95.0625, 96.28515625, 97.515625, 98.75390625, 100.0], dtype="float64").reshape([1, 3, 3, 8])]  # semfuzz's reference (f64)
ATOL, RTOL = 1.3452465257518244e-42, 5.7220458984375e-6  # loosest layer tolerance x depth 6

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

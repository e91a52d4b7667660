"""Standalone repro of the semfuzz case case.case.json.

Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in
PyTorch (eager) and prints each model output next to semfuzz's reference output.
Exits 1 when they disagree, 0 when they agree.
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

keras.config.set_floatx("float64")
keras.config.set_dtype_policy("float64")

input_1_0 = keras.Input(batch_shape=(None, 3, 1,), dtype="float64", name="input_1")
group_query_attention_ = layers.GroupQueryAttention(head_dim=1, num_query_heads=4, num_key_value_heads=2, dropout=0.0, use_bias=True, use_gate=True, sliding_window=3, name="group_query_attention")
group_query_attention_0 = group_query_attention_(input_1_0, input_1_0)
model = keras.Model(input_1_0, group_query_attention_0)

model.get_layer("group_query_attention").set_weights([np.array([-0.5139094502038031, -0.5815168706436249, 0.3632390853503842, -0.6783621273874942], dtype="float64").reshape([1, 4, 1]), np.array([-0.38634198227309113, 0.5947173377327442, 0.664021248293388, 0.42570072105917856], dtype="float64").reshape([4, 1]), np.array([-0.6561460791886042, -0.9999083162218292], dtype="float64").reshape([1, 2, 1]), np.array([-0.018318781253922722, -np.inf], dtype="float64").reshape([2, 1]), np.array([-4327.145078245714, -174.94611094358402, -9049.564963779954, -146.4349637959395], dtype="float64").reshape([1, 4, 1]), np.array([0.20423099005884415, -0.9622228875222212, 0.8914839907402898, 0.45624739007787163], dtype="float64").reshape([4, 1]), np.array([-0.9943546435177257, 0.29476171194478784], dtype="float64").reshape([1, 2, 1]), np.array([8.60096606156567e-6, 5.865558191727691e-6], dtype="float64").reshape([2, 1]), np.array([175.60556345719286, -1818.1356334136308, 1194.1548415731702, -4668.8322548638225], dtype="float64").reshape([4, 1, 1]), np.array([-0.9342749945663544], dtype="float64").reshape([1])])
inputs = [np.array([-0.2391727662438643, -0.2391727662438643, -0.2391727662438643, 0.8134323392605158, 0.8134323392605158, 0.8134323392605158], dtype="float64").reshape([2, 3, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

expected = [np.array([np.nan, np.nan, np.nan, np.nan, np.nan, np.nan], dtype="float64").reshape([2, 3, 1])]  # semfuzz's reference (f64)
ATOL, RTOL = 2.9553592552329343e-8, 3.552713678800501e-15  # loosest layer tolerance x depth 2

actual = model(feed, training=False)
actual = actual if isinstance(actual, (list, tuple)) else [actual]
ok = True
for i, (e, a) in enumerate(zip(expected, actual)):
    a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
    print(f"output {i}: PyTorch {a.tolist()}")
    print(f"output {i}: reference  {e.tolist()}")
    if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
        print(f"output {i} DISAGREES")
        ok = False
sys.exit(0 if ok else 1)

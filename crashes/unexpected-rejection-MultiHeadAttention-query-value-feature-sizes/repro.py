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

input_layer_0 = keras.Input(batch_shape=(None, 3, 4,), dtype="float32", name="input_layer")
input_layer_1_0 = keras.Input(batch_shape=(None, 2, 1,), dtype="float32", name="input_layer_1")
multi_head_attention_ = layers.MultiHeadAttention(num_heads=1, key_dim=2, value_dim=2, dropout=0.0, use_bias=True, output_shape=None, attention_axes=None, name="multi_head_attention")
multi_head_attention_0 = multi_head_attention_(input_layer_0, input_layer_1_0)
model = keras.Model([input_layer_0, input_layer_1_0], multi_head_attention_0)

model.get_layer("multi_head_attention").set_weights([np.array([0.27000001072883606, -0.46000000834465027, -0.9200000166893005, -0.9700000286102295, 0.6299999952316284, 0.8299999833106995, 0.20999999344348907, 0.46000000834465027], dtype="float32").reshape([4, 1, 2]), np.array([0.09000000357627869, 0.8700000047683716], dtype="float32").reshape([1, 2]), np.array([0.6299999952316284, -0.9900000095367432], dtype="float32").reshape([1, 1, 2]), np.array([0.7099999785423279, -0.9300000071525574], dtype="float32").reshape([1, 2]), np.array([0.46000000834465027, -0.6499999761581421], dtype="float32").reshape([1, 1, 2]), np.array([0.7300000190734863, 0.07999999821186066], dtype="float32").reshape([1, 2]), np.array([-0.4000000059604645, -0.15000000596046448, -0.9399999976158142, -0.75, 0.3400000035762787, 0.28999999165534973, 0.23000000417232513, -0.23000000417232513], dtype="float32").reshape([1, 2, 4]), np.array([0.9900000095367432, 0.9599999785423279, 0.3700000047683716, 0.30000001192092896], dtype="float32").reshape([4])])
inputs = [np.array([0.38, -0.22, -0.73, 0.44, 0.05, -0.38, -0.03, 0.78, 0.87, -0.28, 0.14, -0.36, 0.19, -0.32, -0.22, 0.78, -0.55, 0.25, -0.83, 0.67, 0.57, -0.52, 0.75, -0.88], dtype="float32").reshape([2, 3, 4]), np.array([-0.33, -0.7, -0.1, 0.59], dtype="float32").reshape([2, 2, 1])]
feed = inputs[0] if len(inputs) == 1 else inputs

def run_eager(feed):
    return model(feed, training=False)

expected = [np.array([0.9385000392240775, 1.0093166590132312, 0.008667384034346248, -0.1629366440241593, 0.9450318297081317, 1.0134695873932331, 0.018052196147536892, -0.15978364378298482, 0.9368133685719989, 1.0082442696835623, 0.006243992285141664, -0.1637508270549483, 0.6583104977670348, 0.8311714626329512, -0.3939061842812259, -0.298188638702392, 0.6567319687421034, 0.8301678300145598, -0.39617419920766384, -0.29895062003177797, 0.6489532760217582, 0.825222118140228, -0.4073505481497952, -0.30270552002177986], dtype="float64").reshape([2, 3, 4])]  # semfuzz's reference (f64)
ATOL, RTOL = 0.00029094464410511973, 2.86102294921875e-6  # loosest layer tolerance x depth 3

ok = True
for mode, run in [("eager", run_eager)]:
    actual = run(feed)
    actual = actual if isinstance(actual, (list, tuple)) else [actual]
    for i, (e, a) in enumerate(zip(expected, actual)):
        a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)
        print(f"output {i} ({mode}): TensorFlow {a.tolist()}")
        print(f"output {i} ({mode}): reference  {e.tolist()}")
        if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):
            print(f"output {i} ({mode}) DISAGREES")
            ok = False
sys.exit(0 if ok else 1)

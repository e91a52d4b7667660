"""Golden cases for the core and activation layers. See common.py."""

from common import invalid, valid, write_all
import keras
from keras import layers

valid("dense", lambda: layers.Dense(3), [(2, 4)])
valid("dense_relu_nobias", lambda: layers.Dense(5, activation="relu", use_bias=False), [(2, 3, 4)])
valid("dense_rank4", lambda: layers.Dense(2, activation="tanh"), [(1, 2, 3, 4)])
invalid("dense_zero_units", lambda: layers.Dense(3), [(2, 4)], {"units": 0})
invalid("dense_rank1", lambda: layers.Dense(3), [(2, 4)], {}, feed=[(4,)])
valid("identity", lambda: layers.Identity(), [(2, 3)])
GELU_F64 = ("TF's gelu(approximate=False) multiplies by math_ops.cast(0.7071067811865476, dtype): the constant "
            "becomes a float32 tensor before the cast, so float64 GELU carries a ~5e-9 relative error")
valid("activation_gelu_f64_constant", lambda: layers.Activation("gelu"), [(2, 5)], divergence=GELU_F64)
for act in ["relu", "sigmoid", "tanh", "softmax", "elu", "selu", "silu", "hard_silu", "softplus",
            "softsign", "exponential", "leaky_relu", "mish", "log_sigmoid", "hard_sigmoid", "hard_tanh",
            "hard_shrink", "soft_shrink", "tanh_shrink", "sparse_plus", "sparse_sigmoid", "squareplus",
            "celu", "relu6", "log_softmax", "linear"]:
    valid(f"activation_{act}", lambda a=act: layers.Activation(a), [(2, 5)], dist="normal")
valid("relu_default", lambda: layers.ReLU(), [(2, 6)])
valid("relu_max6", lambda: layers.ReLU(max_value=6.0), [(2, 6)], dist="integers")
valid("relu_slope", lambda: layers.ReLU(negative_slope=0.3), [(2, 6)])
valid("relu_all", lambda: layers.ReLU(max_value=1.5, negative_slope=0.5, threshold=0.25), [(3, 6)])
valid("relu_threshold", lambda: layers.ReLU(threshold=0.5), [(3, 6)])
invalid("relu_negative_slope", lambda: layers.ReLU(), [(2, 3)], {"negative_slope": -1.0})

write_all("core")

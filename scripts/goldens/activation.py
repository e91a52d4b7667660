"""Golden cases for the activation layers LeakyReLU, PReLU, ELU and Softmax. See common.py.
(Activation and ReLU are in core.py.)"""

from common import invalid, valid, write_all
from keras import layers


def randw(layer, rng):
    return [rng.standard_normal(tuple(w.shape)) for w in layer.weights]


# LeakyReLU: TF's LeakyRelu takes the slope as a float32 attribute.
LR = layers.LeakyReLU
valid("leaky_relu_default", lambda: LR(), [(3, 5)])
valid("leaky_relu_zero", lambda: LR(negative_slope=0.0), [(3, 5)])
valid("leaky_relu_one", lambda: LR(negative_slope=1.0), [(3, 5)])
valid("leaky_relu_steep", lambda: LR(negative_slope=2.5), [(2, 3, 4)])
valid("leaky_relu_small", lambda: LR(negative_slope=0.01), [(2, 3, 4)], dist="integers")
invalid("leaky_relu_negative", lambda: LR(), [(2, 3)], {"negative_slope": -0.1})
invalid("leaky_relu_null", lambda: LR(), [(2, 3)], {"negative_slope": None})

# PReLU: relu(x) - alpha * relu(-x), alpha shared along shared_axes.
PR = layers.PReLU
valid("prelu_default_alpha", lambda: PR(), [(2, 5)])
valid("prelu_rank2", lambda: PR(), [(3, 5)], weights=randw)
valid("prelu_rank3", lambda: PR(), [(2, 3, 4)], weights=randw)
valid("prelu_shared_spatial", lambda: PR(shared_axes=[1, 2]), [(2, 3, 4, 2)], weights=randw)
valid("prelu_shared_int", lambda: PR(shared_axes=1), [(2, 3, 4)], weights=randw)
valid("prelu_shared_last", lambda: PR(shared_axes=[2]), [(2, 3, 4)], weights=randw)
valid("prelu_shared_all", lambda: PR(shared_axes=[1, 2]), [(2, 3, 4)], weights=randw)
valid("prelu_batch_only", lambda: PR(), [(6,)], weights=randw)
invalid("prelu_shared_out_of_range", lambda: PR(), [(2, 3, 4)], {"shared_axes": [3]})
invalid("prelu_shared_far_negative", lambda: PR(), [(2, 3, 4)], {"shared_axes": [-3]})
# Keras accepts these and shares another axis than named (param_shape[axis - 1]).
invalid("prelu_shared_batch_axis", lambda: PR(), [(2, 3, 4)], {"shared_axes": [0]})
invalid("prelu_shared_negative", lambda: PR(), [(2, 3, 4)], {"shared_axes": [-1]})

# ELU: x if x > 0 else alpha * (exp(x) - 1).
valid("elu_default", lambda: layers.ELU(), [(3, 6)])
valid("elu_half", lambda: layers.ELU(alpha=0.5), [(3, 6)])
valid("elu_two", lambda: layers.ELU(alpha=2.0), [(2, 3, 4)])
valid("elu_zero", lambda: layers.ELU(alpha=0.0), [(3, 6)])
valid("elu_negative_alpha", lambda: layers.ELU(alpha=-1.5), [(3, 6)])
valid("elu_uniform", lambda: layers.ELU(alpha=0.7), [(4, 8)], dist="uniform")

# Softmax: one axis (tf.nn.softmax), several (exp(x - logsumexp)), or None (everything).
SM = layers.Softmax
valid("softmax_default", lambda: SM(), [(3, 5)])
valid("softmax_axis1", lambda: SM(axis=1), [(2, 3, 4)])
valid("softmax_batch_axis", lambda: SM(axis=0), [(3, 4)])
valid("softmax_one_axis_list", lambda: SM(axis=[2]), [(2, 3, 4)])
valid("softmax_two_axes", lambda: SM(axis=[1, 2]), [(2, 3, 4)])
valid("softmax_mixed_sign_axes", lambda: SM(axis=[-1, 1]), [(2, 3, 4)])
valid("softmax_rank4_axes", lambda: SM(axis=[1, 3]), [(2, 3, 2, 4)])
valid("softmax_all_axes", lambda: SM(axis=None), [(2, 3, 4)])
valid("softmax_size1_axis", lambda: SM(), [(4, 1)])
valid("softmax_ties", lambda: SM(axis=[1, 2]), [(2, 2, 3)], dist="integers")
invalid("softmax_axis_out_of_range", lambda: SM(), [(2, 3, 4)], {"axis": 3})
invalid("softmax_axes_out_of_range", lambda: SM(), [(2, 3, 4)], {"axis": [1, 5]})
invalid("softmax_axes_empty", lambda: SM(), [(2, 3, 4)], {"axis": []})
invalid("softmax_axes_repeated", lambda: SM(), [(2, 3, 4)], {"axis": [1, -2]})

write_all("activation")

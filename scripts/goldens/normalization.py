"""Golden cases for the normalization layers. See common.py.

Not representable here (the harness declares an unknown batch size): normalizing over the
batch axis with weights (BatchNormalization/LayerNormalization/RMSNormalization axis 0,
GroupNormalization axis 0), which Keras refuses to build without a known batch size.
"""

import numpy as np
import keras
from common import invalid, valid, valid_model, write_all
from keras import layers

NON_NEGATIVE = ("moving_variance",)


def randw(layer, rng):
    """Non-trivial weights in get_weights() order, keeping the variance non-negative."""
    out = []
    for w in layer.weights:
        a = rng.standard_normal(tuple(w.shape))
        if w.name in NON_NEGATIVE:
            a = np.abs(a)
        out.append(a)
    return out


# BatchNormalization (inference: moving statistics).
BN = layers.BatchNormalization
valid("bn_default", lambda: BN(), [(3, 5)], weights=randw)
valid("bn_rank3", lambda: BN(), [(2, 3, 4)], weights=randw)
valid("bn_channels_first", lambda: BN(axis=1), [(2, 3, 4, 4)], weights=randw)
valid("bn_axis_neg2", lambda: BN(axis=-2), [(2, 3, 4)], weights=randw)
valid("bn_axis_last_positive", lambda: BN(axis=2), [(2, 3, 4)], weights=randw)
valid("bn_no_center", lambda: BN(center=False), [(2, 3, 4)], weights=randw)
valid("bn_no_scale", lambda: BN(scale=False), [(2, 3, 4)], weights=randw)
valid("bn_neither", lambda: BN(center=False, scale=False), [(2, 6)], weights=randw)
valid("bn_epsilon", lambda: BN(epsilon=0.5, momentum=0.5), [(2, 4)], weights=randw)
valid("bn_one_channel", lambda: BN(), [(4, 1)], weights=randw)
valid("bn_renorm", lambda: BN(renorm=True, renorm_clipping={"rmax": 3.0, "rmin": 0.5, "dmax": 1.0}),
      [(2, 3, 2)], weights=randw)
valid("bn_default_weights", lambda: BN(), [(3, 4)])
invalid("bn_axis_out_of_range", lambda: BN(), [(2, 3, 4)], {"axis": 3})
invalid("bn_axis_below_range", lambda: BN(), [(2, 3, 4)], {"axis": -4})
invalid("bn_renorm_clipping_order", lambda: BN(), [(2, 3)],
        {"renorm": True, "renorm_clipping": {"rmax": 1.0, "rmin": 2.0}})
invalid("bn_renorm_clipping_key", lambda: BN(), [(2, 3)], {"renorm": True, "renorm_clipping": {"r": 1.0}})
invalid("bn_renorm_clipping_dmax", lambda: BN(), [(2, 3)], {"renorm": True, "renorm_clipping": {"dmax": -1.0}})

# LayerNormalization: moments over the axes, x·inv + (β − mean·inv).
LN = layers.LayerNormalization
valid("ln_default", lambda: LN(), [(3, 5)], weights=randw)
valid("ln_rank3", lambda: LN(), [(2, 3, 4)], weights=randw)
valid("ln_axis1", lambda: LN(axis=1), [(2, 3, 4)], weights=randw)
valid("ln_two_axes", lambda: LN(axis=[1, 2]), [(2, 3, 4)], weights=randw)
valid("ln_negative_axes", lambda: LN(axis=[-2, -1]), [(2, 3, 4)], weights=randw)
# Weights of shape (4, 3), reshaped (not transposed) onto axes (1, 2).
valid("ln_mixed_sign_axes", lambda: LN(axis=[-1, 1]), [(2, 3, 4)], weights=randw)
valid("ln_rank4_axes_1_3", lambda: LN(axis=[1, 3]), [(2, 3, 2, 4)], weights=randw)
valid("ln_no_center", lambda: LN(center=False), [(2, 3, 4)], weights=randw)
valid("ln_no_scale", lambda: LN(scale=False), [(2, 3, 4)], weights=randw)
valid("ln_neither", lambda: LN(center=False, scale=False), [(2, 7)])
valid("ln_epsilon", lambda: LN(epsilon=0.7), [(2, 5)], weights=randw)
valid("ln_one_element_lanes", lambda: LN(), [(3, 1)], weights=randw)
valid("ln_no_axes", lambda: LN(axis=[]), [(2, 3)], weights=randw)
valid("ln_rms_scaling", lambda: LN(rms_scaling=True), [(2, 3, 4)], weights=randw)
valid("ln_rms_scaling_no_scale", lambda: LN(rms_scaling=True, scale=False, center=True), [(2, 5)], weights=randw)
valid("ln_rms_scaling_axes", lambda: LN(rms_scaling=True, axis=[1, 2]), [(2, 3, 2)], weights=randw)
valid("ln_integers", lambda: LN(), [(4, 3)], dist="integers", weights=randw)
invalid("ln_axis_out_of_range", lambda: LN(), [(2, 3, 4)], {"axis": [3]})
invalid("ln_axis_repeated", lambda: LN(), [(2, 3, 4)], {"axis": [1, 1]})
invalid("ln_axis_repeated_negative", lambda: LN(), [(2, 3, 4)], {"axis": [-1, 2]})
invalid("ln_axis_null", lambda: LN(), [(2, 3)], {"axis": None})

# GroupNormalization.
GN = layers.GroupNormalization
valid("gn_two_groups", lambda: GN(groups=2), [(2, 3, 4)], weights=randw)
valid("gn_instance", lambda: GN(groups=-1), [(2, 3, 4)], weights=randw)
valid("gn_one_group", lambda: GN(groups=1), [(2, 3, 4)], weights=randw)
valid("gn_channels_first", lambda: GN(groups=2, axis=1), [(2, 4, 3)], weights=randw)
valid("gn_axis_neg2", lambda: GN(groups=2, axis=-2), [(2, 3, 4, 2)], weights=randw)
valid("gn_rank2", lambda: GN(groups=3), [(2, 6)], weights=randw)
valid("gn_rank4", lambda: GN(groups=2), [(2, 3, 3, 4)], weights=randw)
valid("gn_no_center", lambda: GN(groups=2, center=False), [(2, 3, 4)], weights=randw)
valid("gn_no_scale", lambda: GN(groups=2, scale=False, epsilon=0.2), [(2, 3, 4)], weights=randw)
valid("gn_groups_equal_channels", lambda: GN(groups=4), [(2, 2, 4)], weights=randw)
invalid("gn_groups_not_divisor", lambda: GN(groups=2), [(2, 3, 4)], {"groups": 3})
invalid("gn_groups_too_many", lambda: GN(groups=2), [(2, 3, 4)], {"groups": 5})
invalid("gn_groups_zero", lambda: GN(groups=2), [(2, 3, 4)], {"groups": 0})
invalid("gn_groups_negative", lambda: GN(groups=2), [(2, 3, 4)], {"groups": -2})
invalid("gn_axis_out_of_range", lambda: GN(groups=2), [(2, 3, 4)], {"axis": 3})
invalid("gn_batch_axis", lambda: GN(groups=1), [(2, 3, 4)], {"axis": 0})


def gn_products_overflow():
    """Float32 instance normalization of a channel holding -1.1e38 alone in its group: the mean is
    the value itself, and `x·inv` and `mean·inv` (inv = γ/√ε ≈ -8.9) both overflow, so Keras's
    `x·inv + (β − mean·inv)` is `inf + (-inf)` = NaN where the exact value is β."""
    inp = keras.Input(batch_shape=(None, 2))
    layer = GN(groups=-1)
    model = keras.Model(inp, layer(inp))
    layer.set_weights([np.array([-0.2807655847052897, 1.3]), np.array([0.7144947980317866, -0.2])])
    return model


valid_model("gn_products_overflow_f32", gn_products_overflow,
            [np.array([[-1.1141410534899834e38, 0.5], [2.0, 3.0]])], dtype="float32")


def gn_mean_overflow_in_order():
    """Float32, one group of 7 elements whose exact sum (7e37) is finite but whose running sum
    overflows at the fourth: TF sums a group this small in order, the mean is inf, and with
    γ = 0 the output is `x·0 + (0 − inf·0)` = NaN. The second sample holds the same values in an
    order whose running sum stays finite: its mean is finite, its variance inf, its output 0."""
    inp = keras.Input(batch_shape=(None, 7))
    layer = GN(groups=1)
    model = keras.Model(inp, layer(inp))
    layer.set_weights([np.zeros(7), np.zeros(7)])
    return model


valid_model("gn_mean_overflow_in_order_f32", gn_mean_overflow_in_order,
            [np.array([[-1.1141410534899834e38, 1.7561958398887317e38, 2.477393906917553e38, 1.729143161959381e38,
                        -4.936306989264499e37, -1.3670191954789198e38, -2.2829728131798293e38],
                       [1.7561958398887317e38, -1.1141410534899834e38, 2.477393906917553e38,
                        -2.2829728131798293e38, 1.729143161959381e38, -1.3670191954789198e38,
                        -4.936306989264499e37]])], dtype="float32")

# UnitNormalization (no weights; built at construction).
UN = layers.UnitNormalization
valid("un_default", lambda: UN(), [(3, 5)])
valid("un_axis1", lambda: UN(axis=1), [(2, 3, 4)])
valid("un_two_axes", lambda: UN(axis=[1, 2]), [(2, 3, 4)])
valid("un_mixed_sign_axes", lambda: UN(axis=[-1, 1]), [(2, 3, 4)])
valid("un_batch_axis", lambda: UN(axis=0), [(3, 4)])
valid("un_no_axes", lambda: UN(axis=[]), [(2, 3)])
valid("un_integers_zero_lanes", lambda: UN(), [(6, 2)], dist="integers", seed=3)
UN_F16 = ("ops.normalize clamps rsqrt(sum(x**2)) with minimum(inv, 1.0 / epsilon), and 1/1e-12 converted "
          "to float16 is inf: the clamp does nothing, so a zero lane gives 0*inf = NaN instead of 0")
valid("un_float16_zero_lane", lambda: UN(), [(8, 1)], dist="integers", seed=1, dtype="float16",
      divergence=UN_F16)
invalid("un_axis_out_of_range", lambda: UN(), [(2, 3, 4)], {"axis": 3})
invalid("un_axis_repeated", lambda: UN(), [(2, 3, 4)], {"axis": [1, 1]})

# RMSNormalization.
RMS = layers.RMSNormalization
valid("rms_default", lambda: RMS(), [(3, 5)], weights=randw)
valid("rms_rank3", lambda: RMS(), [(2, 3, 4)], weights=randw)
valid("rms_trailing_axes", lambda: RMS(axis=[1, 2]), [(2, 3, 4)], weights=randw)
valid("rms_negative_axes", lambda: RMS(axis=[-2, -1]), [(2, 3, 4)], weights=randw)
valid("rms_no_axes", lambda: RMS(axis=[]), [(2, 3)], weights=randw)
valid("rms_epsilon", lambda: RMS(epsilon=0.5), [(2, 4)], weights=randw)
RMS_AXIS = ("ops.rms_normalization multiplies by `scale` without reshaping it onto the normalized axes, so "
            "broadcasting aligns it with the trailing axes: with axis=1 on (b, 3, 3) it scales along axis 2")
valid("rms_axis1_square", lambda: RMS(axis=1), [(2, 3, 3)], weights=randw, divergence=RMS_AXIS)
invalid("rms_axis_out_of_range", lambda: RMS(), [(2, 3, 4)], {"axis": 3})
invalid("rms_axis_repeated", lambda: RMS(), [(2, 3, 4)], {"axis": [2, -1]})

write_all("normalization")

"""Golden cases for the convolutional LSTMs (ConvLSTM1D/2D/3D) and TimeDistributed. See common.py.

float64 runs TF's own (Eigen) CPU kernels, which refuse channels_first ConvLSTM1D/2D; float32
runs oneDNN, which accepts them.
Keep each input at most ~300 elements.
"""

import sys

import numpy as np

import common
from common import invalid, valid, valid_model, write_all
import keras
from keras import layers as L


def W(scale=0.5):
    """Non-trivial weights: every kernel and bias drawn from N(0, scale²)."""
    return lambda layer, rng: [scale * rng.standard_normal(w.shape) for w in layer.get_weights()]


# The cell adds its bias with the tensor's own `+=` (tf.add), not keras.ops.add: the channels_first
# bias bug of the conv layers (keras.ops.add turning x + bias(1, F, 1..) into an NHWC bias_add when x's
# last axis has F entries) does not reach it; convlstm3d_channels_first_last_axis_is_filters checks so.

# --- float32 (oneDNN, channels_first accepted) ---------------------------------------------------
valid("convlstm1d_channels_first_f32", lambda: L.ConvLSTM1D(2, 3, data_format="channels_first"),
      [(2, 3, 2, 6)], weights=W(), dtype="float32")
valid("convlstm2d_channels_first_same_f32",
      lambda: L.ConvLSTM2D(3, 2, padding="same", data_format="channels_first", return_sequences=True),
      [(2, 2, 2, 3, 4)], weights=W(), dtype="float32")

valid("convlstm1d_long_f32", lambda: L.ConvLSTM1D(3, 3, padding="same", return_sequences=True),
      [(2, 16, 5, 2)], weights=W(0.8), dtype="float32")
valid("convlstm2d_state_f32", lambda: L.ConvLSTM2D(2, 2, return_state=True), [(2, 4, 4, 3, 3)], weights=W(),
      dtype="float32")
valid("convlstm3d_f32", lambda: L.ConvLSTM3D(2, 2, padding="same"), [(1, 3, 3, 3, 2, 2)], weights=W(),
      dtype="float32")
valid("td_conv2d_f32", lambda: L.TimeDistributed(L.Conv2D(3, 2)), [(2, 3, 4, 4, 2)], weights=W(), dtype="float32")

# --- ConvLSTM1D ------------------------------------------------------------------------------
valid("convlstm1d", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], weights=W())
valid("convlstm1d_default_weights", lambda: L.ConvLSTM1D(3, 2), [(2, 4, 5, 2)])
valid("convlstm1d_same", lambda: L.ConvLSTM1D(2, 3, padding="same"), [(2, 3, 5, 2)], weights=W())
valid("convlstm1d_same_even_kernel", lambda: L.ConvLSTM1D(2, 4, padding="same"), [(2, 3, 5, 2)], weights=W())
valid("convlstm1d_strides2", lambda: L.ConvLSTM1D(2, 3, strides=2), [(2, 3, 8, 2)], weights=W())
valid("convlstm1d_same_strides2", lambda: L.ConvLSTM1D(3, 3, strides=2, padding="same"), [(2, 3, 7, 2)],
      weights=W())
valid("convlstm1d_dilation2", lambda: L.ConvLSTM1D(2, 2, dilation_rate=2), [(2, 3, 6, 2)], weights=W())
valid("convlstm1d_dilation2_same", lambda: L.ConvLSTM1D(2, 3, dilation_rate=2, padding="same"),
      [(2, 3, 6, 2)], weights=W())
valid("convlstm1d_no_bias", lambda: L.ConvLSTM1D(2, 2, use_bias=False), [(2, 3, 5, 3)], weights=W())
valid("convlstm1d_sequences", lambda: L.ConvLSTM1D(2, 3, return_sequences=True), [(2, 4, 5, 2)], weights=W())
valid("convlstm1d_state", lambda: L.ConvLSTM1D(2, 3, return_state=True), [(2, 4, 5, 2)], weights=W())
valid("convlstm1d_sequences_state", lambda: L.ConvLSTM1D(2, 2, return_sequences=True, return_state=True),
      [(2, 3, 4, 2)], weights=W())
valid("convlstm1d_backwards", lambda: L.ConvLSTM1D(2, 3, go_backwards=True), [(2, 4, 5, 2)], weights=W())
valid("convlstm1d_backwards_sequences", lambda: L.ConvLSTM1D(2, 3, go_backwards=True, return_sequences=True),
      [(2, 4, 5, 2)], weights=W())
valid("convlstm1d_unroll", lambda: L.ConvLSTM1D(2, 3, unroll=True, return_sequences=True), [(2, 3, 5, 2)],
      weights=W())
valid("convlstm1d_relu_hard_sigmoid",
      lambda: L.ConvLSTM1D(2, 2, activation="relu", recurrent_activation="hard_sigmoid"), [(2, 4, 5, 2)],
      weights=W())
valid("convlstm1d_linear_linear",
      lambda: L.ConvLSTM1D(2, 2, activation=None, recurrent_activation="linear", return_sequences=True),
      [(2, 4, 4, 2)], weights=W(0.3))
valid("convlstm1d_softmax", lambda: L.ConvLSTM1D(3, 2, activation="softmax"), [(2, 3, 5, 2)], weights=W())
valid("convlstm1d_elu_exponential",
      lambda: L.ConvLSTM1D(2, 2, activation="elu", recurrent_activation="exponential"), [(2, 3, 5, 2)],
      weights=W(0.3))
valid("convlstm1d_long", lambda: L.ConvLSTM1D(2, 2, return_sequences=True), [(1, 12, 4, 2)], weights=W(0.8))
valid("convlstm1d_large_weights", lambda: L.ConvLSTM1D(2, 3), [(2, 4, 5, 2)], weights=W(4.0))
valid("convlstm1d_empty_batch", lambda: L.ConvLSTM1D(2, 3, return_state=True), [(0, 3, 5, 2)], weights=W())
valid("convlstm1d_same_empty_steps", lambda: L.ConvLSTM1D(2, 3, padding="same"), [(2, 3, 0, 2)], weights=W())
valid("convlstm1d_channels_first_empty_batch", lambda: L.ConvLSTM1D(2, 3, data_format="channels_first"),
      [(0, 3, 2, 5)], weights=W())

# --- ConvLSTM2D ------------------------------------------------------------------------------
valid("convlstm2d", lambda: L.ConvLSTM2D(2, 2), [(2, 3, 4, 3, 2)], weights=W())
valid("convlstm2d_same_rect_kernel", lambda: L.ConvLSTM2D(2, (3, 2), padding="same"), [(2, 3, 4, 3, 2)],
      weights=W())
valid("convlstm2d_strides", lambda: L.ConvLSTM2D(2, 2, strides=(2, 1)), [(2, 3, 5, 4, 1)], weights=W())
valid("convlstm2d_dilation", lambda: L.ConvLSTM2D(1, 2, dilation_rate=(1, 2)), [(2, 2, 3, 4, 2)], weights=W())
valid("convlstm2d_sequences_state_backwards",
      lambda: L.ConvLSTM2D(2, 2, padding="same", return_sequences=True, return_state=True, go_backwards=True),
      [(2, 3, 3, 3, 2)], weights=W())

# --- ConvLSTM3D ------------------------------------------------------------------------------
valid("convlstm3d", lambda: L.ConvLSTM3D(2, 2), [(2, 2, 3, 3, 3, 2)], weights=W())
valid("convlstm3d_same_sequences", lambda: L.ConvLSTM3D(2, 2, padding="same", return_sequences=True),
      [(1, 3, 2, 3, 2, 2)], weights=W())
valid("convlstm3d_channels_first", lambda: L.ConvLSTM3D(2, 2, data_format="channels_first"),
      [(1, 2, 2, 4, 3, 4)], weights=W())
valid("convlstm3d_channels_first_last_axis_is_filters",
      lambda: L.ConvLSTM3D(2, 2, data_format="channels_first"), [(2, 2, 2, 3, 3, 3)], weights=W())

# --- invalid ConvLSTM ------------------------------------------------------------------------
invalid("convlstm1d_channels_first_f64", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 4, 4)],
        {"data_format": "channels_first"})
invalid("convlstm2d_channels_first_f64", lambda: L.ConvLSTM2D(2, 2), [(1, 2, 3, 3, 3)],
        {"data_format": "channels_first"})
invalid("convlstm1d_rank3", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {}, feed=[(2, 3, 6)])
invalid("convlstm2d_rank4", lambda: L.ConvLSTM2D(2, 2), [(2, 3, 4, 3, 2)], {}, feed=[(2, 3, 4, 3)])
invalid("convlstm1d_no_steps", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {}, feed=[(2, 0, 6, 2)])
invalid("convlstm1d_kernel_too_large", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {"kernel_size": [7]})
invalid("convlstm1d_valid_empty_steps", lambda: L.ConvLSTM1D(2, 1), [(2, 3, 6, 2)], {}, feed=[(2, 3, 0, 2)])
invalid("convlstm2d_dilated_kernel_too_large", lambda: L.ConvLSTM2D(2, 2), [(2, 3, 4, 3, 2)],
        {"dilation_rate": [1, 3]})
invalid("convlstm1d_zero_channels", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {}, feed=[(2, 3, 6, 0)])
invalid("convlstm1d_zero_filters", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {"filters": 0})
invalid("convlstm1d_negative_filters", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {"filters": -2})
invalid("convlstm1d_zero_strides", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {"strides": [0]})
invalid("convlstm1d_zero_kernel", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {"kernel_size": [0]})
invalid("convlstm1d_strides_and_dilation", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 9, 2)],
        {"strides": [2], "dilation_rate": [2]})
invalid("convlstm1d_causal", lambda: L.ConvLSTM1D(2, 3), [(2, 3, 6, 2)], {"padding": "causal"})
invalid("convlstm3d_kernel_too_large", lambda: L.ConvLSTM3D(2, 2), [(2, 2, 3, 3, 3, 2)],
        {"kernel_size": [2, 4, 2]})

# --- TimeDistributed -------------------------------------------------------------------------
valid("td_dense", lambda: L.TimeDistributed(L.Dense(3)), [(2, 4, 5)], weights=W())
valid("td_dense_rank4_softmax", lambda: L.TimeDistributed(L.Dense(3, activation="softmax")), [(2, 3, 4, 5)],
      weights=W())
valid("td_conv1d", lambda: L.TimeDistributed(L.Conv1D(2, 3, padding="same")), [(2, 3, 5, 2)], weights=W())
valid("td_conv2d", lambda: L.TimeDistributed(L.Conv2D(2, 2, strides=2)), [(2, 2, 5, 4, 2)], weights=W())
valid("td_flatten", lambda: L.TimeDistributed(L.Flatten()), [(2, 3, 4, 5)])
valid("td_maxpool1d", lambda: L.TimeDistributed(L.MaxPooling1D(2)), [(2, 3, 6, 2)])
valid("td_layer_normalization", lambda: L.TimeDistributed(L.LayerNormalization()), [(2, 3, 4, 5)], weights=W())
valid("td_td_dense", lambda: L.TimeDistributed(L.TimeDistributed(L.Dense(2))), [(2, 3, 4, 5)], weights=W())
valid("td_convlstm1d", lambda: L.TimeDistributed(L.ConvLSTM1D(2, 2, return_sequences=True)), [(2, 2, 3, 4, 2)],
      weights=W())
valid("td_empty_batch", lambda: L.TimeDistributed(L.Dense(3)), [(0, 4, 5)], weights=W())
invalid("td_rank2", lambda: L.TimeDistributed(L.Dense(3)), [(2, 4, 5)], {}, feed=[(2, 5)])
invalid("td_no_steps", lambda: L.TimeDistributed(L.Dense(3)), [(2, 4, 5)], {}, feed=[(2, 0, 5)])
invalid("td_conv1d_kernel_too_large", lambda: L.TimeDistributed(L.Conv1D(2, 5)), [(2, 3, 6, 2)], {},
        feed=[(2, 3, 4, 2)])
invalid("td_convlstm_state", lambda: L.TimeDistributed(L.ConvLSTM1D(2, 2)), [(2, 3, 4, 5, 2)],
        {"layer": {"module": "keras.layers", "class_name": "ConvLSTM1D", "registered_name": None,
                   "config": {"filters": 2, "kernel_size": [2], "return_state": True}}})
invalid("td_dense_zero_units", lambda: L.TimeDistributed(L.Dense(3)), [(2, 4, 5)],
        {"layer": {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
                   "config": {"units": 0}}})


# --- masks ---------------------------------------------------------------------------------
# Embedding(mask_zero=True) over (batch, time) ids masks whole steps; TimeDistributed keeps that
# (batch, time) mask through a Reshape to (batch, time, 3, 2) for the ConvLSTM. Over (batch, time,
# steps) ids it masks positions: a (batch, time, steps) mask, which TF tiles onto the state position
# by position when the state has as many steps (padding "same").
def set_normal(model, seed):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if layer.get_weights():
            layer.set_weights([0.5 * rng.standard_normal(w.shape) for w in layer.get_weights()])
    return model


STEP_IDS = np.array([[1, 0, 2, 0, 3], [0, 4, 5, 1, 0]])


def masked_steps(**kw):
    def build():
        i = keras.Input((5,), dtype="int32")
        e = L.Embedding(6, 6, mask_zero=True)(i)
        r = L.TimeDistributed(L.Reshape((3, 2)))(e)
        y = L.ConvLSTM1D(2, 2, padding="same", **kw)(r)
        return set_normal(keras.Model(i, y), 7)
    return build


POSITION_IDS = np.array([[[1, 2, 3, 4, 5], [1, 0, 3, 4, 5], [0, 0, 0, 0, 0], [5, 4, 3, 2, 1]],
                         [[0, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 0, 0, 5], [1, 2, 3, 4, 0]]])


def masked_positions(**kw):
    def build():
        i = keras.Input((4, 5), dtype="int32")
        e = L.Embedding(6, 2, mask_zero=True)(i)
        y = L.ConvLSTM1D(2, 3, padding="same", **kw)(e)
        return set_normal(keras.Model(i, y), 8)
    return build


def td_then_lstm():
    i = keras.Input((5,), dtype="int32")
    e = L.Embedding(6, 6, mask_zero=True)(i)
    d = L.TimeDistributed(L.Dense(6))(e)
    r = L.TimeDistributed(L.Reshape((3, 2)))(d)
    y = L.ConvLSTM1D(2, 2, return_sequences=True)(r)
    return set_normal(keras.Model(i, y), 9)


if "--no-masks" not in sys.argv:
    valid_model("mask_steps_sequences", masked_steps(return_sequences=True), [STEP_IDS])
    valid_model("mask_steps_last", masked_steps(), [STEP_IDS])
    valid_model("mask_steps_zero_output", masked_steps(return_sequences=True, zero_output_for_mask=True),
                [STEP_IDS])
    valid_model("mask_steps_backwards_state",
                masked_steps(return_sequences=True, return_state=True, go_backwards=True), [STEP_IDS])
    valid_model("mask_steps_unroll", masked_steps(return_sequences=True, unroll=True), [STEP_IDS])
    valid_model("mask_positions_sequences", masked_positions(return_sequences=True), [POSITION_IDS])
    valid_model("mask_positions_state", masked_positions(return_state=True), [POSITION_IDS])
    valid_model("mask_positions_zero_output_backwards",
                masked_positions(return_sequences=True, zero_output_for_mask=True, go_backwards=True),
                [POSITION_IDS])
    valid_model("mask_td_dense_keeps_mask", td_then_lstm, [STEP_IDS])


# --- Initial states ([h, c], tensor keyword or second positional argument) -------------------
# Keras does not check their shapes; TF fails on sizes that neither fit nor broadcast, and runs
# eagerly with states that only broadcast (a graph's while_loop refuses them).
def with_states(make, x_shape, state_shapes, positional=False, as_list=True, seed=0, scale=0.5):
    """`layer(x, initial_state=[h, c])` (or `layer(x, [h, c])`) on float inputs; state shapes
    batch first, as fed (declared with an unknown batch)."""

    def build():
        x = keras.Input(batch_shape=(None,) + x_shape[1:])
        states = [keras.Input(batch_shape=(None,) + s[1:]) for s in state_shapes]
        layer = make()
        given = states if as_list or len(states) != 1 else states[0]
        out = layer(x, given) if positional else layer(x, initial_state=given)
        model = keras.Model([x] + states, out)
        rng = np.random.default_rng(seed + 1)
        layer.set_weights([scale * rng.standard_normal(w.shape) for w in layer.get_weights()])
        return model

    rng = np.random.default_rng(seed)
    return build, [rng.standard_normal(x_shape)] + [rng.standard_normal(s) for s in state_shapes]


def invalid_model(name, build, arrays):
    """A model Keras builds; what it does when it runs."""
    keras.utils.set_random_seed(0)
    keras.backend.clear_session()
    keras.config.set_floatx("float64")
    keras.config.set_dtype_policy("float64")
    try:
        model = build()
    finally:
        keras.config.set_floatx("float32")
        keras.config.set_dtype_policy("float32")
    case = {"format": "semfuzz-case/1", "keras_version": keras.__version__, "dtype": "float64",
            "model": model.get_config(), "weights": {}, "inputs": [common.tensor(a) for a in arrays]}
    try:
        model(arrays, training=False)
        expected = {"keras_accepts": True}
    except Exception as e:  # what Keras says is the point of the case
        expected = {"error": common._describe(e)}
    common._CASES.append((name, case, expected))


C1 = lambda **kw: L.ConvLSTM1D(2, 3, padding="same", **kw)  # noqa: E731
X1, S1 = (2, 3, 5, 2), (2, 5, 2)
valid_model("convlstm1d_initial_state",
            *with_states(lambda: C1(return_sequences=True, return_state=True), X1, [S1, S1]))
valid_model("convlstm1d_initial_state_positional",
            *with_states(lambda: L.ConvLSTM1D(2, 3, return_state=True), (2, 4, 5, 2), [(2, 3, 2)] * 2,
                         positional=True, seed=1))
valid_model("convlstm2d_initial_state_backwards",
            *with_states(lambda: L.ConvLSTM2D(2, 2, go_backwards=True, return_sequences=True),
                         (2, 3, 4, 3, 2), [(2, 3, 2, 2)] * 2, seed=2))
valid_model("convlstm3d_initial_state_channels_first",
            *with_states(lambda: L.ConvLSTM3D(2, 2, data_format="channels_first", return_state=True),
                         (1, 2, 2, 3, 3, 3), [(1, 2, 2, 2, 2)] * 2, seed=3))
valid_model("convlstm2d_initial_state_channels_first_f32",
            *with_states(lambda: L.ConvLSTM2D(2, 2, padding="same", data_format="channels_first"),
                         (2, 3, 2, 3, 4), [(2, 2, 3, 4)] * 2, seed=4), dtype="float32")

invalid_model("convlstm1d_one_initial_state", *with_states(C1, X1, [S1]))
invalid_model("convlstm1d_one_initial_state_tensor", *with_states(C1, X1, [S1], as_list=False))
invalid_model("convlstm1d_three_initial_states", *with_states(C1, X1, [S1] * 3))
invalid_model("convlstm1d_initial_state_batch", *with_states(C1, X1, [(3, 5, 2), (3, 5, 2)]))
invalid_model("convlstm1d_initial_state_steps", *with_states(C1, X1, [(2, 6, 2), S1]))
invalid_model("convlstm1d_initial_cell_state_steps", *with_states(C1, X1, [S1, (2, 6, 2)]))
invalid_model("convlstm1d_initial_state_channels", *with_states(C1, X1, [(2, 5, 1), S1]))
invalid_model("convlstm1d_initial_state_cell_rank", *with_states(C1, X1, [S1, (2, 5)]))
# Accepted eagerly: a state that broadcasts, and `h` with a multiple of the filters as channels
# (a grouped convolution).
invalid_model("convlstm1d_initial_state_broadcasts", *with_states(C1, X1, [S1, (2, 1, 2)]))
invalid_model("convlstm1d_initial_state_grouped", *with_states(C1, X1, [(2, 5, 4), S1]))


def exponential_gates_overflow():
    """A float32 ConvLSTM2D whose `exponential` gates overflow at the second step: the forget
    gate exp(439) is inf in float32, so `f·c + i·g` is `-inf + inf` = NaN where the previous cell
    state and the candidate differ in sign (float64 would carry 7e190 and a finite state)."""
    inp = keras.Input(batch_shape=(None, 2, 1, 1, 1))
    layer = L.ConvLSTM2D(3, 1, recurrent_activation="exponential", return_sequences=True, return_state=True)
    model = keras.Model(inp, layer(inp))
    kernel = np.array([-0.28077, -0.00946, 0.71449, -0.41023, -0.37096, -0.79155, -0.86842, 0.25214,
                       -0.34576, -0.44601, -0.91931, -0.13136]).reshape(1, 1, 1, 12)
    recurrent = np.array([[751.06, 148.15, 183.01, -1068.96, 1223.0, -3428.0, -1587.51, -824.89, 101.38,
                           9584.14, 1230.83, 4971.61],
                          [-114.73, 8939.0, -850.36, 6746.14, -636.55, -1353.7, 8333.46, 4700.42, -898.65,
                           -473.89, 941.67, 708.81],
                          [577.49, -3628.85, -803.59, -715.12, 696.65, -1050.72, 453.46, -1826.88, 321.23,
                           -592.9, 6250.09, -136.69]]).reshape(1, 1, 3, 12)
    bias = np.array([0.6406, -0.07157, 0.44141, 0.34834, 0.45126, -0.06245, 0.78261, -0.15847, -0.8314,
                     0.03193, -0.30856, 0.2421])
    layer.set_weights([kernel, recurrent, bias])
    return model


valid_model("convlstm2d_exponential_gates_overflow_f32", exponential_gates_overflow,
            [np.zeros((1, 2, 1, 1, 1))], dtype="float32")

write_all("rnn_conv")

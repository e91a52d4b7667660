"""Golden cases for the pooling layers. See common.py.

TF's CPU kernels for 3-D pooling (MaxPool3D, AvgPool3D) exist for float32 and bfloat16 only,
so the 3-D windowed and adaptive cases run in float32 on integer inputs (exactly
representable: a max is then exact, an average rounds once per term).
"""

import contextlib

import numpy as np

import common
from common import invalid, valid, write_all
from keras import layers

MAX_NAN = ("TF's CPU MaxPool starts each window at the dtype's lowest finite value and folds with Eigen's "
           "cwiseMax (PropagateFast): on x86 a NaN never wins, so NaN is dropped (tensorflow#125965: per "
           "SIMD lane on ARM); tf.reduce_max, and so GlobalMaxPooling, propagates it")
MAX_NEG_INF = ("TF's CPU MaxPool starts each window at the dtype's lowest finite value, so a window of -inf "
               "(or of NaN only) gives -1.797e308 instead of -inf (tensorflow#2501)")


@contextlib.contextmanager
def inputs(*arrays):
    """Feeds these arrays instead of the seeded random inputs (for NaN and infinities)."""
    original = common.inputs_for
    common.inputs_for = lambda shapes, seed, dist="normal": [np.asarray(a, dtype=np.float64) for a in arrays]
    try:
        yield
    finally:
        common.inputs_for = original


F32 = dict(dtype="float32", dist="integers")

# --- MaxPooling / AveragePooling (strided windows) -------------------------------------------

for kind, L in [("max", layers.MaxPooling1D), ("avg", layers.AveragePooling1D)]:
    p = kind + "pool1d"
    valid(f"{p}_default", lambda L=L: L(pool_size=2), [(2, 7, 3)])
    valid(f"{p}_pool3_stride1_same", lambda L=L: L(pool_size=3, strides=1, padding="same"), [(2, 6, 2)])
    valid(f"{p}_pool4_stride1_same_even", lambda L=L: L(pool_size=4, strides=1, padding="same"), [(1, 7, 2)])
    valid(f"{p}_pool3_stride2_valid", lambda L=L: L(pool_size=3, strides=2), [(2, 8, 2)])
    valid(f"{p}_stride_over_pool_valid", lambda L=L: L(pool_size=2, strides=3), [(2, 8, 2)])
    valid(f"{p}_stride_over_pool_same", lambda L=L: L(pool_size=2, strides=3, padding="same"), [(2, 7, 2)])
    valid(f"{p}_pool_equals_input", lambda L=L: L(pool_size=5), [(2, 5, 3)])
    valid(f"{p}_pool_over_input_same", lambda L=L: L(pool_size=5, strides=1, padding="same"), [(2, 2, 3)])
    valid(f"{p}_pool1", lambda L=L: L(pool_size=1), [(2, 4, 3)])
    valid(f"{p}_channels_first", lambda L=L: L(pool_size=2, strides=1, data_format="channels_first"),
          [(2, 3, 6)])
    valid(f"{p}_channels_first_same", lambda L=L: L(pool_size=3, strides=2, padding="same",
                                                    data_format="channels_first"), [(2, 3, 8)])
    valid(f"{p}_f32_same", lambda L=L: L(pool_size=3, strides=2, padding="same"), [(2, 9, 3)], **F32)
    valid(f"{p}_batch_zero", lambda L=L: L(pool_size=2), [(0, 6, 3)])
    valid(f"{p}_spatial_zero_same", lambda L=L: L(pool_size=2, padding="same"), [(2, 0, 3)])

for kind, L in [("max", layers.MaxPooling2D), ("avg", layers.AveragePooling2D)]:
    p = kind + "pool2d"
    valid(f"{p}_default", lambda L=L: L(pool_size=2) if L is layers.AveragePooling2D else L(), [(2, 5, 4, 3)])
    valid(f"{p}_asym_same", lambda L=L: L(pool_size=(2, 3), strides=(1, 2), padding="same"), [(2, 5, 6, 2)])
    valid(f"{p}_asym_valid", lambda L=L: L(pool_size=(3, 2), strides=(2, 1)), [(1, 7, 5, 2)])
    valid(f"{p}_channels_first", lambda L=L: L(pool_size=2, strides=1, data_format="channels_first"),
          [(2, 2, 4, 5)])
    valid(f"{p}_channels_first_same", lambda L=L: L(pool_size=(3, 2), strides=2, padding="same",
                                                    data_format="channels_first"), [(1, 2, 5, 5)])
    valid(f"{p}_pool_equals_input", lambda L=L: L(pool_size=(4, 3)), [(2, 4, 3, 2)])
    valid(f"{p}_pool1", lambda L=L: L(pool_size=1, strides=(1, 2)), [(1, 3, 5, 2)])
    valid(f"{p}_pool_over_input_same", lambda L=L: L(pool_size=(6, 2), strides=1, padding="same"),
          [(1, 3, 4, 2)])
    valid(f"{p}_f32_same", lambda L=L: L(pool_size=3, strides=2, padding="same"), [(2, 7, 6, 2)], **F32)
    valid(f"{p}_f16_same", lambda L=L: L(pool_size=2, strides=1, padding="same"), [(1, 4, 5, 2)],
          dtype="float16", dist="integers")
    valid(f"{p}_bf16_same", lambda L=L: L(pool_size=3, strides=2, padding="same"), [(1, 5, 5, 2)],
          dtype="bfloat16", dist="integers")

for kind, L in [("max", layers.MaxPooling3D), ("avg", layers.AveragePooling3D)]:
    p = kind + "pool3d"
    valid(f"{p}_f32_valid", lambda L=L: L(pool_size=2), [(2, 4, 5, 4, 2)], **F32)
    valid(f"{p}_f32_same", lambda L=L: L(pool_size=(2, 3, 2), strides=(1, 2, 2), padding="same"),
          [(1, 4, 5, 3, 2)], **F32)
    valid(f"{p}_f32_channels_first", lambda L=L: L(pool_size=(3, 1, 2), strides=1,
                                                   data_format="channels_first"), [(1, 2, 4, 3, 5)], **F32)
    valid(f"{p}_f32_channels_first_same", lambda L=L: L(pool_size=3, strides=2, padding="same",
                                                        data_format="channels_first"), [(1, 2, 5, 4, 3)], **F32)
    valid(f"{p}_bf16", lambda L=L: L(pool_size=2, padding="same"), [(1, 3, 4, 3, 2)],
          dtype="bfloat16", dist="integers")
    invalid(f"{p}_f64_no_kernel", lambda L=L: L(pool_size=2), [(1, 4, 4, 4, 2)], {})
    invalid(f"{p}_f16_no_kernel", lambda L=L: L(pool_size=2), [(1, 4, 4, 4, 2)], {}, dtype="float16")

# Preconditions of the strided windows.
invalid("maxpool1d_rank4", lambda: layers.MaxPooling1D(2), [(2, 6, 3)], {}, feed=[(2, 6, 3, 1)])
invalid("avgpool2d_rank3", lambda: layers.AveragePooling2D(2), [(2, 6, 6, 3)], {}, feed=[(2, 6, 3)])
invalid("maxpool3d_rank4", lambda: layers.MaxPooling3D(2), [(1, 4, 4, 4, 2)], {}, dtype="float32",
        feed=[(1, 4, 4, 2)])
invalid("maxpool1d_pool_zero", lambda: layers.MaxPooling1D(2), [(2, 6, 3)], {"pool_size": [0]})
invalid("avgpool2d_pool_negative", lambda: layers.AveragePooling2D(2), [(2, 6, 6, 3)], {"pool_size": [2, -1]})
invalid("maxpool2d_pool_wrong_length", lambda: layers.MaxPooling2D(2), [(2, 6, 6, 3)], {"pool_size": [2, 2, 2]})
invalid("maxpool1d_strides_zero", lambda: layers.MaxPooling1D(2), [(2, 6, 3)], {"strides": [0]})
invalid("avgpool2d_strides_negative", lambda: layers.AveragePooling2D(2), [(2, 6, 6, 3)], {"strides": [1, -2]})
invalid("maxpool1d_padding_upper", lambda: layers.MaxPooling1D(2), [(2, 6, 3)], {"padding": "VALID"})
invalid("avgpool1d_padding_causal", lambda: layers.AveragePooling1D(2), [(2, 6, 3)], {"padding": "causal"})
invalid("maxpool2d_padding_null", lambda: layers.MaxPooling2D(2), [(2, 6, 6, 3)], {"padding": None})
invalid("maxpool2d_data_format_bogus", lambda: layers.MaxPooling2D(2), [(2, 6, 6, 3)],
        {"data_format": "channels_middle"})
invalid("maxpool1d_pool_over_input", lambda: layers.MaxPooling1D(2), [(2, 6, 3)], {"pool_size": [7]})
invalid("avgpool2d_pool_over_input_one_axis", lambda: layers.AveragePooling2D(2), [(2, 6, 4, 3)],
        {"pool_size": [2, 5], "strides": [1, 1]})
invalid("maxpool2d_channels_first_pool_over_input", lambda: layers.MaxPooling2D(2, data_format="channels_first"),
        [(2, 3, 6, 6)], {}, feed=[(2, 3, 6, 1)])
invalid("avgpool1d_spatial_zero_valid", lambda: layers.AveragePooling1D(1), [(2, 4, 3)], {}, feed=[(2, 0, 3)])

# NaN and infinities: an exact max propagates NaN and keeps -inf; TF's MaxPool does neither.
SPECIAL = np.array([[[np.nan, 1.0], [1.0, np.nan], [-np.inf, 2.0], [-np.inf, -np.inf],
                     [np.inf, 3.0], [2.0, np.nan]]])
with inputs(SPECIAL):
    valid("maxpool1d_nan", lambda: layers.MaxPooling1D(2, strides=1), [(1, 6, 2)], divergence=MAX_NAN)
    valid("avgpool1d_nan_inf", lambda: layers.AveragePooling1D(2, strides=1), [(1, 6, 2)])
    valid("global_maxpool1d_nan", lambda: layers.GlobalMaxPooling1D(), [(1, 6, 2)])
    valid("adaptive_avgpool1d_nan_inf", lambda: layers.AdaptiveAveragePooling1D(4), [(1, 6, 2)])
with inputs(np.array([[[-np.inf, 1.0], [-np.inf, 2.0], [0.5, -np.inf], [1.5, -np.inf]]])):
    valid("maxpool1d_neg_inf", lambda: layers.MaxPooling1D(2), [(1, 4, 2)], divergence=MAX_NEG_INF)
    valid("global_maxpool1d_neg_inf", lambda: layers.GlobalMaxPooling1D(), [(1, 4, 2)])

# --- Global pooling ---------------------------------------------------------------------------

for n, shape_last, shape_first in [(1, (2, 5, 3), (2, 3, 5)), (2, (2, 4, 3, 3), (2, 3, 4, 3)),
                                   (3, (2, 3, 4, 2, 3), (2, 3, 3, 4, 2))]:
    for kind in ["Max", "Average"]:
        L = getattr(layers, f"Global{kind}Pooling{n}D")
        p = f"global_{kind.lower()}pool{n}d"
        valid(f"{p}", lambda L=L: L(), [shape_last])
        valid(f"{p}_keepdims", lambda L=L: L(keepdims=True), [shape_last])
        valid(f"{p}_channels_first", lambda L=L: L(data_format="channels_first"), [shape_first])
        valid(f"{p}_channels_first_keepdims", lambda L=L: L(data_format="channels_first", keepdims=True),
              [shape_first])
        invalid(f"{p}_rank", lambda L=L: L(), [shape_last], {}, feed=[shape_last[:-1]])
valid("global_averagepool2d_f16", lambda: layers.GlobalAveragePooling2D(), [(2, 4, 5, 3)], dtype="float16")
valid("global_averagepool3d_f32_keepdims", lambda: layers.GlobalAveragePooling3D(keepdims=True),
      [(1, 3, 4, 5, 2)], dtype="float32")
valid("global_averagepool1d_spatial_zero", lambda: layers.GlobalAveragePooling1D(), [(2, 0, 3)])
valid("global_averagepool2d_batch_zero", lambda: layers.GlobalAveragePooling2D(), [(0, 3, 3, 2)])
invalid("global_maxpool1d_spatial_zero", lambda: layers.GlobalMaxPooling1D(), [(2, 4, 3)], {}, feed=[(2, 0, 3)])
invalid("global_maxpool2d_batch_zero", lambda: layers.GlobalMaxPooling2D(), [(2, 4, 4, 3)], {},
        feed=[(0, 4, 4, 3)])
invalid("global_maxpool3d_channels_zero", lambda: layers.GlobalMaxPooling3D(), [(1, 2, 2, 2, 3)], {},
        feed=[(1, 2, 2, 2, 0)])
invalid("global_averagepool1d_data_format_bogus", lambda: layers.GlobalAveragePooling1D(), [(2, 4, 3)],
        {"data_format": "nwc"})

# --- Adaptive pooling -------------------------------------------------------------------------

for kind in ["Max", "Average"]:
    p = f"adaptive_{kind.lower()}pool"
    A1, A2, A3 = (getattr(layers, f"Adaptive{kind}Pooling{n}D") for n in (1, 2, 3))
    valid(f"{p}1d_7_to_3", lambda A=A1: A(3), [(2, 7, 2)])
    valid(f"{p}1d_7_to_5", lambda A=A1: A(5), [(2, 7, 2)])
    valid(f"{p}1d_5_to_3", lambda A=A1: A(3), [(2, 5, 2)])
    valid(f"{p}1d_7_to_10", lambda A=A1: A(10), [(1, 7, 2)])
    valid(f"{p}1d_to_1", lambda A=A1: A(1), [(2, 6, 2)])
    valid(f"{p}1d_same_size", lambda A=A1: A(4), [(2, 4, 2)])
    valid(f"{p}1d_13_to_6", lambda A=A1: A(6), [(1, 13, 2)])
    valid(f"{p}1d_channels_first", lambda A=A1: A(4, data_format="channels_first"), [(2, 3, 9)])
    valid(f"{p}2d", lambda A=A2: A((3, 2)), [(2, 7, 5, 2)])
    valid(f"{p}2d_upsample", lambda A=A2: A((6, 4)), [(1, 4, 3, 2)])
    valid(f"{p}2d_channels_first", lambda A=A2: A(3, data_format="channels_first"), [(1, 2, 8, 5)])
    valid(f"{p}3d_f32", lambda A=A3: A((2, 3, 4)), [(1, 5, 4, 6, 2)], **F32)
    valid(f"{p}3d_f32_channels_first", lambda A=A3: A(2, data_format="channels_first"), [(1, 2, 5, 3, 4)], **F32)
    valid(f"{p}2d_f16", lambda A=A2: A((3, 2)), [(1, 7, 5, 2)], dtype="float16", dist="integers")
    valid(f"{p}1d_batch_zero", lambda A=A1: A(3), [(0, 7, 2)])
    invalid(f"{p}1d_output_zero", lambda A=A1: A(3), [(2, 7, 2)], {"output_size": [0]})
    invalid(f"{p}2d_output_negative", lambda A=A2: A(3), [(2, 7, 7, 2)], {"output_size": [3, -1]})
    invalid(f"{p}2d_output_wrong_length", lambda A=A2: A(3), [(2, 7, 7, 2)], {"output_size": [3, 3, 3]})
    invalid(f"{p}1d_data_format_upper", lambda A=A1: A(3), [(2, 7, 2)], {"data_format": "CHANNELS_LAST"})
    invalid(f"{p}1d_spatial_zero", lambda A=A1: A(3), [(2, 7, 2)], {}, feed=[(2, 0, 2)])
    invalid(f"{p}1d_rank4", lambda A=A1: A(3), [(2, 7, 2)], {}, feed=[(2, 7, 5, 2)])
    invalid(f"{p}3d_rank4", lambda A=A3: A(2), [(1, 5, 4, 6, 2)], {}, dtype="float32", feed=[(1, 5, 4, 2)])
    invalid(f"{p}2d_rank5", lambda A=A2: A(2), [(1, 5, 4, 2)], {}, feed=[(1, 5, 4, 6, 2)])
    # No InputSpec: a rank-3 input runs the 1-D pooling (Keras accepts; the reference: semantic).
    invalid(f"{p}2d_rank3", lambda A=A2: A((3, 2)), [(1, 7, 5, 2)], {}, feed=[(1, 7, 2)])
    invalid(f"{p}3d_rank3", lambda A=A3: A(2), [(1, 5, 4, 6, 2)], {}, dtype="float32", feed=[(1, 7, 2)])
    invalid(f"{p}3d_f64_no_kernel", lambda A=A3: A(2), [(1, 4, 4, 4, 2)], {})

write_all("pooling")

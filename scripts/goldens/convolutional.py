"""Golden cases for the convolution layers. See common.py.

float64 runs TF's own (Eigen) CPU kernels and float32 runs oneDNN's: the float32 cases cover
what only oneDNN accepts (channels_first Conv1D/Conv2D, channels_first and dilated transposed
convs) and the oneDNN code paths. Keep each input at most ~300 elements.
"""

import common
from common import invalid, valid, write_all
from keras import layers as L


def W(layer, rng):
    """Non-trivial weights: every kernel and bias drawn from N(0, 1)."""
    return [rng.standard_normal(w.shape) for w in layer.get_weights()]


# keras/src/backend/tensorflow/numpy.py add(): an `x2` with one non-unit axis whose length is
# that of `x1`'s axis 1 or its last axis is taken for a bias, and added with tf.nn.bias_add in
# NHWC whenever `x1`'s last axis has that length. Conv layers add their bias reshaped to
# (1, filters, 1, ...) in channels_first: when the output's last axis has `filters` positions,
# the bias lands on the last axis instead of the channels.
BIAS_ADD = ("keras.ops.add (TF backend) turns x + bias(1, F, 1..) into tf.nn.bias_add(..., 'NHWC') when "
            "x's last axis also has F entries: in channels_first the bias is added along the last spatial "
            "axis instead of the channels")


# TF's float64/float16 Conv3D CPU kernel (Eigen's CuboidConvolution) computes "same" padding
# as ((out-1)·s + k - n) / 2 without clamping it at 0: when strides leave input positions
# unread, the padding goes negative and the windows start that far into the input.
CONV3D_SAME = ("TF's float64/float16 Conv3D CPU kernel (Eigen CuboidConvolution, padding SAME) does not clamp "
               "the padding ((out-1)*s + k - n)/2 at 0: with strides skipping input positions the windows are "
               "shifted into the input (tf.nn.conv3d on [10,20,30], k=1, s=3 gives 20, not 10; conv2d and "
               "oneDNN give 10)")
# oneDNN's float32 depthwise kernel with one input channel, a depth multiplier > 1 and a
# column stride > 1 with row stride 1 computes some output rows wrong (NaN or other values).
DEPTHWISE_ONEDNN = ("oneDNN float32 depthwise conv with 1 channel, depth_multiplier 2 and strides (1, 3) "
                    "computes wrong values (NaN in other runs) for some output rows")


def known_bug(cause):
    """Marks the last case as a known TF/Keras bug: the reference keeps its semantics."""
    common._CASES[-1][2]["divergence"] = cause


# --- Conv1D -------------------------------------------------------------------------------
valid("conv1d", lambda: L.Conv1D(3, 3), [(2, 7, 2)], weights=W)
valid("conv1d_k1_nobias", lambda: L.Conv1D(2, 1, use_bias=False), [(2, 5, 3)], weights=W)
valid("conv1d_kernel_equals_input", lambda: L.Conv1D(2, 5), [(2, 5, 3)], weights=W)
valid("conv1d_strides2_valid", lambda: L.Conv1D(2, 3, strides=2), [(2, 8, 2)], weights=W)
valid("conv1d_strides3_valid_rest", lambda: L.Conv1D(2, 2, strides=3), [(2, 9, 2)], weights=W)
valid("conv1d_same", lambda: L.Conv1D(2, 3, padding="same"), [(2, 6, 2)], weights=W)
valid("conv1d_same_even_kernel", lambda: L.Conv1D(2, 4, padding="same"), [(2, 7, 2)], weights=W)
valid("conv1d_same_strides2", lambda: L.Conv1D(4, 3, strides=2, padding="same"), [(2, 8, 3)], weights=W)
valid("conv1d_same_strides3_k5", lambda: L.Conv1D(2, 5, strides=3, padding="same"), [(2, 10, 2)], weights=W)
valid("conv1d_same_kernel_larger_than_input", lambda: L.Conv1D(2, 6, padding="same"), [(2, 3, 2)], weights=W)
valid("conv1d_dilation2", lambda: L.Conv1D(2, 3, dilation_rate=2), [(2, 9, 3)], weights=W)
valid("conv1d_dilation3_same", lambda: L.Conv1D(2, 3, dilation_rate=3, padding="same"), [(2, 8, 2)], weights=W)
valid("conv1d_causal", lambda: L.Conv1D(2, 3, padding="causal"), [(2, 6, 2)], weights=W)
valid("conv1d_causal_dilation3", lambda: L.Conv1D(2, 2, padding="causal", dilation_rate=3), [(2, 7, 2)], weights=W)
valid("conv1d_causal_strides2", lambda: L.Conv1D(3, 3, padding="causal", strides=2), [(2, 7, 2)], weights=W)
valid("conv1d_groups2", lambda: L.Conv1D(4, 3, groups=2), [(2, 6, 4)], weights=W)
valid("conv1d_groups4_same", lambda: L.Conv1D(4, 2, groups=4, padding="same"), [(2, 5, 4)], weights=W)
valid("conv1d_groups2_channels_first", lambda: L.Conv1D(4, 3, groups=2, data_format="channels_first"),
      [(2, 4, 7)], weights=W)
valid("conv1d_groups2_channels_first_square_output", lambda: L.Conv1D(4, 3, groups=2,
      data_format="channels_first"), [(2, 4, 6)], weights=W, divergence=BIAS_ADD)
valid("conv1d_groups2_causal_channels_first",
      lambda: L.Conv1D(2, 3, groups=2, padding="causal", data_format="channels_first"), [(2, 4, 5)], weights=W)
valid("conv1d_relu", lambda: L.Conv1D(3, 2, activation="relu"), [(2, 6, 2)], weights=W)
valid("conv1d_tanh", lambda: L.Conv1D(3, 2, activation="tanh"), [(2, 6, 2)], weights=W)
valid("conv1d_softmax_last_axis", lambda: L.Conv1D(3, 2, activation="softmax"), [(2, 6, 2)], weights=W)
valid("conv1d_softmax_channels_first_spatial", lambda: L.Conv1D(4, 2, activation="softmax", groups=2,
      data_format="channels_first"), [(2, 2, 6)], weights=W)
valid("conv1d_empty_batch", lambda: L.Conv1D(3, 2), [(0, 5, 2)], weights=W)
valid("conv1d_same_empty_sequence", lambda: L.Conv1D(3, 2, padding="same"), [(2, 0, 2)], weights=W)
valid("conv1d_causal_empty_batch_and_sequence", lambda: L.Conv1D(3, 3, padding="causal"), [(0, 0, 2)],
      weights=W)
valid("conv1d_channels_first_f32", lambda: L.Conv1D(3, 3, padding="same", data_format="channels_first"),
      [(2, 2, 6)], weights=W, dtype="float32")
valid("conv1d_channels_first_empty_batch", lambda: L.Conv1D(3, 3, data_format="channels_first"),
      [(0, 2, 6)], weights=W)
valid("conv1d_f32", lambda: L.Conv1D(4, 3, strides=2, padding="same"), [(3, 9, 3)], weights=W, dtype="float32")

invalid("conv1d_zero_filters", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {"filters": 0})
invalid("conv1d_negative_kernel", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {"kernel_size": [-1]})
invalid("conv1d_zero_strides", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {"strides": [0]})
invalid("conv1d_zero_dilation", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {"dilation_rate": [0]})
invalid("conv1d_strides_with_dilation", lambda: L.Conv1D(2, 3), [(2, 9, 2)], {"strides": [2], "dilation_rate": [2]})
invalid("conv1d_kernel_too_large", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {}, feed=[(2, 2, 2)])
invalid("conv1d_dilated_kernel_too_large", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {"dilation_rate": [3]})
invalid("conv1d_valid_empty_sequence", lambda: L.Conv1D(2, 1), [(2, 6, 2)], {}, feed=[(2, 0, 2)])
invalid("conv1d_causal_empty_sequence", lambda: L.Conv1D(2, 3, padding="causal"), [(2, 6, 2)], {},
        feed=[(2, 0, 2)])
invalid("conv1d_causal_empty_sequence_grouped", lambda: L.Conv1D(2, 3, padding="causal", groups=2),
        [(2, 6, 2)], {}, feed=[(0, 0, 2)])
invalid("conv1d_causal_empty_sequence_f32", lambda: L.Conv1D(2, 3, padding="causal"), [(2, 6, 2)], {},
        feed=[(2, 0, 2)], dtype="float32")
known_bug("oneDNN's float32 conv with a VALID window larger than its input returns an output shaped "
          "like the input, uninitialised, instead of an empty one; Keras's empty-output check in "
          "backend/tensorflow/nn.py conv() then passes and the layer returns garbage")
invalid("conv1d_groups_not_dividing_filters", lambda: L.Conv1D(3, 3), [(2, 6, 4)], {"groups": 2})
invalid("conv1d_groups_not_dividing_channels", lambda: L.Conv1D(4, 3), [(2, 6, 3)], {"groups": 2})
invalid("conv1d_zero_groups", lambda: L.Conv1D(4, 3), [(2, 6, 3)], {"groups": 0})
invalid("conv1d_zero_channels", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {}, feed=[(2, 6, 0)])
invalid("conv1d_zero_channels_f32", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {}, feed=[(2, 6, 0)], dtype="float32")
invalid("conv1d_rank4", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {}, feed=[(2, 6, 2, 2)])
invalid("conv1d_rank2", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {}, feed=[(2, 6)])
invalid("conv1d_unknown_padding", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {"padding": "full"})
invalid("conv1d_unknown_data_format", lambda: L.Conv1D(2, 3), [(2, 6, 2)], {"data_format": "nwc"})
invalid("conv1d_channels_first_f64", lambda: L.Conv1D(2, 3), [(2, 6, 4)], {"data_format": "channels_first"})
invalid("conv1d_channels_first_causal_f64", lambda: L.Conv1D(2, 3, padding="causal"), [(2, 6, 4)],
        {"data_format": "channels_first"})

# --- Conv2D -------------------------------------------------------------------------------
valid("conv2d", lambda: L.Conv2D(3, 3), [(2, 5, 5, 2)], weights=W)
valid("conv2d_asymmetric", lambda: L.Conv2D(2, (2, 3), strides=(1, 2), padding="same"), [(2, 5, 6, 2)],
      weights=W)
valid("conv2d_same_strides2", lambda: L.Conv2D(3, 3, strides=2, padding="same"), [(2, 6, 5, 2)], weights=W)
valid("conv2d_same_even_kernel", lambda: L.Conv2D(2, (4, 2), padding="same"), [(2, 5, 4, 2)], weights=W)
valid("conv2d_dilation", lambda: L.Conv2D(2, 2, dilation_rate=(1, 2), padding="valid"), [(2, 5, 5, 2)],
      weights=W)
valid("conv2d_dilation_same", lambda: L.Conv2D(2, 3, dilation_rate=2, padding="same"), [(1, 6, 5, 3)],
      weights=W)
valid("conv2d_kernel_equals_input", lambda: L.Conv2D(4, (3, 4)), [(3, 3, 4, 2)], weights=W)
valid("conv2d_size1_axes", lambda: L.Conv2D(2, 1, strides=(1, 3)), [(2, 1, 7, 3)], weights=W)
valid("conv2d_groups3", lambda: L.Conv2D(6, 2, groups=3), [(2, 4, 4, 3)], weights=W)
valid("conv2d_groups2_channels_first", lambda: L.Conv2D(4, 3, groups=2, padding="same",
      data_format="channels_first"), [(2, 4, 4, 5)], weights=W)
valid("conv2d_sigmoid_nobias", lambda: L.Conv2D(3, 2, activation="sigmoid", use_bias=False), [(2, 4, 4, 2)],
      weights=W)
valid("conv2d_channels_first_f32", lambda: L.Conv2D(3, 3, strides=(2, 1), padding="same",
      data_format="channels_first"), [(2, 2, 5, 5)], weights=W, dtype="float32")
valid("conv2d_dilation_f32", lambda: L.Conv2D(3, 3, dilation_rate=2), [(2, 6, 6, 2)], weights=W,
      dtype="float32")
valid("conv2d_groups2_f32", lambda: L.Conv2D(4, 3, groups=2), [(2, 5, 5, 4)], weights=W, dtype="float32")
valid("conv2d_channels_first_empty_output", lambda: L.Conv2D(2, 3, padding="same",
      data_format="channels_first"), [(2, 2, 0, 4)], weights=W)

invalid("conv2d_kernel_too_large", lambda: L.Conv2D(2, 3), [(2, 5, 5, 2)], {}, feed=[(2, 5, 2, 2)])
invalid("conv2d_strides_with_dilation", lambda: L.Conv2D(2, 3), [(2, 9, 9, 2)],
        {"strides": [1, 2], "dilation_rate": [2, 1]})
invalid("conv2d_causal", lambda: L.Conv2D(2, 3), [(2, 5, 5, 2)], {"padding": "causal"})
invalid("conv2d_rank3", lambda: L.Conv2D(2, 3), [(2, 5, 5, 2)], {}, feed=[(2, 5, 2)])
invalid("conv2d_rank5", lambda: L.Conv2D(2, 1), [(2, 5, 5, 2)], {}, feed=[(2, 5, 5, 2, 2)])
invalid("conv2d_channels_first_f64", lambda: L.Conv2D(2, 3), [(2, 5, 5, 4)], {"data_format": "channels_first"})
invalid("conv2d_zero_channels_grouped", lambda: L.Conv2D(2, 3, groups=2), [(2, 5, 5, 2)], {},
        feed=[(2, 5, 5, 0)])
invalid("conv2d_kernel_size_wrong_length", lambda: L.Conv2D(2, 3), [(2, 5, 5, 2)], {"kernel_size": [3, 3, 3]})

# --- Conv3D -------------------------------------------------------------------------------
valid("conv3d", lambda: L.Conv3D(2, 2), [(2, 3, 4, 3, 2)], weights=W)
valid("conv3d_same_strides", lambda: L.Conv3D(2, (3, 2, 1), strides=(2, 1, 2), padding="same"),
      [(1, 5, 4, 5, 2)], weights=W)
valid("conv3d_dilation", lambda: L.Conv3D(2, 2, dilation_rate=(2, 1, 1)), [(1, 5, 3, 3, 2)], weights=W)
valid("conv3d_channels_first", lambda: L.Conv3D(3, 2, padding="same", data_format="channels_first"),
      [(2, 2, 3, 3, 4)], weights=W)
valid("conv3d_groups2", lambda: L.Conv3D(4, 2, groups=2), [(1, 3, 3, 3, 4)], weights=W)
valid("conv3d_same_strides_skip_inputs_f64", lambda: L.Conv3D(2, (2, 1, 1), strides=3, padding="same"),
      [(2, 2, 3, 2, 3)], weights=W, divergence=CONV3D_SAME)
valid("conv2d_same_strides_skip_inputs", lambda: L.Conv2D(2, (2, 1), strides=3, padding="same"),
      [(2, 2, 5, 3)], weights=W)
valid("conv1d_same_strides_skip_inputs", lambda: L.Conv1D(2, 1, strides=4, padding="same"), [(2, 7, 3)],
      weights=W)
valid("depthwise_conv2d_same_strides_skip_inputs", lambda: L.DepthwiseConv2D((2, 1), strides=3, padding="same"),
      [(2, 2, 5, 3)], weights=W)
valid("separable_conv1d_same_strides_skip_inputs", lambda: L.SeparableConv1D(2, 1, strides=4, padding="same"),
      [(2, 7, 3)], weights=W)
valid("conv3d_channels_first_same_strides_skip_inputs", lambda: L.Conv3D(2, (2, 1, 1), strides=3,
      padding="same", data_format="channels_first"), [(2, 3, 2, 3, 2)], weights=W)
valid("conv3d_same_strides_skip_inputs_f32", lambda: L.Conv3D(2, (2, 1, 1), strides=3, padding="same"),
      [(2, 2, 3, 2, 3)], weights=W, dtype="float32")
valid("conv3d_f32", lambda: L.Conv3D(3, 2, strides=(1, 2, 1), padding="same"), [(2, 4, 4, 3, 2)], weights=W,
      dtype="float32")
valid("conv3d_channels_first_f32", lambda: L.Conv3D(3, 2, data_format="channels_first"), [(2, 2, 3, 4, 3)],
      weights=W, dtype="float32")

invalid("conv3d_kernel_too_large", lambda: L.Conv3D(2, 3), [(1, 4, 4, 4, 2)], {}, feed=[(1, 4, 2, 4, 2)])
invalid("conv3d_rank4", lambda: L.Conv3D(2, 1), [(1, 4, 4, 4, 2)], {}, feed=[(1, 4, 4, 2)])
invalid("conv3d_zero_channels", lambda: L.Conv3D(2, 1), [(1, 4, 4, 4, 2)], {}, feed=[(1, 4, 4, 4, 0)])

# --- Conv1DTranspose / Conv2DTranspose / Conv3DTranspose ----------------------------------
valid("conv1d_transpose", lambda: L.Conv1DTranspose(2, 3), [(2, 4, 3)], weights=W)
valid("conv1d_transpose_strides2", lambda: L.Conv1DTranspose(2, 3, strides=2), [(2, 4, 3)], weights=W)
valid("conv1d_transpose_strides_above_kernel", lambda: L.Conv1DTranspose(2, 2, strides=3), [(2, 4, 2)],
      weights=W)
valid("conv1d_transpose_same", lambda: L.Conv1DTranspose(2, 3, padding="same"), [(2, 5, 2)], weights=W)
valid("conv1d_transpose_same_strides2", lambda: L.Conv1DTranspose(2, 3, strides=2, padding="same"),
      [(2, 4, 3)], weights=W)
valid("conv1d_transpose_same_even_kernel", lambda: L.Conv1DTranspose(2, 4, strides=2, padding="same"),
      [(2, 4, 3)], weights=W)
valid("conv1d_transpose_same_output_padding", lambda: L.Conv1DTranspose(2, 3, strides=2, padding="same",
      output_padding=1), [(2, 4, 2)], weights=W)
valid("conv1d_transpose_same_output_padding0_odd_kernel", lambda: L.Conv1DTranspose(2, 3, strides=2,
      padding="same", output_padding=0), [(2, 4, 2)], weights=W)
valid("conv1d_transpose_same_even_kernel_output_padding1", lambda: L.Conv1DTranspose(2, 4, strides=3,
      padding="same", output_padding=1), [(2, 4, 2)], weights=W)
valid("conv1d_transpose_valid_output_padding", lambda: L.Conv1DTranspose(2, 3, strides=3, output_padding=2),
      [(2, 3, 2)], weights=W)
valid("conv1d_transpose_empty_sequence", lambda: L.Conv1DTranspose(2, 4, strides=2), [(2, 0, 3)], weights=W)
valid("conv1d_transpose_zero_channels", lambda: L.Conv1DTranspose(2, 3), [(2, 4, 0)], weights=W)
valid("conv1d_transpose_relu", lambda: L.Conv1DTranspose(3, 2, strides=2, activation="relu"), [(2, 3, 2)],
      weights=W)
valid("conv1d_transpose_dilation_f32", lambda: L.Conv1DTranspose(2, 3, dilation_rate=2), [(2, 4, 3)],
      weights=W, dtype="float32")
valid("conv1d_transpose_dilation_same_f32", lambda: L.Conv1DTranspose(2, 2, dilation_rate=3, padding="same"),
      [(2, 5, 2)], weights=W, dtype="float32")
valid("conv1d_transpose_channels_first_f32", lambda: L.Conv1DTranspose(2, 3, strides=2, padding="same",
      data_format="channels_first"), [(2, 3, 4)], weights=W, dtype="float32")
valid("conv2d_transpose", lambda: L.Conv2DTranspose(2, 3), [(2, 3, 4, 2)], weights=W)
valid("conv2d_transpose_asymmetric", lambda: L.Conv2DTranspose(3, (2, 3), strides=(2, 1), padding="same",
      output_padding=(1, 0)), [(2, 3, 4, 2)], weights=W)
valid("conv2d_transpose_strides", lambda: L.Conv2DTranspose(2, (3, 1), strides=(2, 3)), [(1, 3, 3, 2)],
      weights=W)
valid("conv2d_transpose_f32", lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same"), [(2, 3, 3, 2)],
      weights=W, dtype="float32")
valid("conv2d_transpose_channels_first_f32", lambda: L.Conv2DTranspose(2, 3, strides=(1, 2),
      data_format="channels_first"), [(2, 2, 3, 3)], weights=W, dtype="float32")
valid("conv2d_transpose_dilation_f32", lambda: L.Conv2DTranspose(2, 2, dilation_rate=(2, 1), padding="same"),
      [(2, 3, 3, 2)], weights=W, dtype="float32")
valid("conv1d_transpose_same_even_kernel_empty_output_f32", lambda: L.Conv1DTranspose(2, 2, padding="same",
      output_padding=0), [(2, 1, 3)], weights=W, dtype="float32")
valid("conv3d_transpose", lambda: L.Conv3DTranspose(2, 2, strides=(2, 1, 1)), [(1, 2, 3, 2, 2)], weights=W)
valid("conv3d_transpose_same", lambda: L.Conv3DTranspose(2, (3, 2, 1), strides=2, padding="same",
      output_padding=(1, 1, 0)), [(1, 2, 2, 3, 2)], weights=W)
valid("conv3d_transpose_channels_first_f32", lambda: L.Conv3DTranspose(2, 2, data_format="channels_first"),
      [(1, 2, 2, 3, 2)], weights=W, dtype="float32")

invalid("conv1d_transpose_channels_first_f64", lambda: L.Conv1DTranspose(2, 3), [(2, 4, 3)],
        {"data_format": "channels_first"})
invalid("conv3d_transpose_channels_first_f64", lambda: L.Conv3DTranspose(2, 2), [(1, 2, 2, 2, 2)],
        {"data_format": "channels_first"})
invalid("conv1d_transpose_dilation_f64", lambda: L.Conv1DTranspose(2, 3), [(2, 4, 3)], {"dilation_rate": [2]})
invalid("conv2d_transpose_dilation_f64", lambda: L.Conv2DTranspose(2, 3), [(2, 4, 3, 2)],
        {"dilation_rate": [1, 2]})
invalid("conv1d_transpose_same_even_kernel_output_padding0", lambda: L.Conv1DTranspose(2, 4, padding="same"),
        [(2, 4, 3)], {"output_padding": [0]})
invalid("conv2d_transpose_same_even_kernel_output_padding0_f32", lambda: L.Conv2DTranspose(2, (3, 2),
        padding="same", strides=2), [(2, 3, 3, 2)], {"output_padding": [1, 0]}, dtype="float32")
invalid("conv1d_transpose_output_padding_not_below_strides", lambda: L.Conv1DTranspose(2, 3, strides=2),
        [(2, 4, 3)], {"output_padding": [2]})
invalid("conv1d_transpose_negative_output_padding", lambda: L.Conv1DTranspose(2, 3, strides=2), [(2, 4, 3)],
        {"output_padding": [-1]})
invalid("conv1d_transpose_negative_output_length", lambda: L.Conv1DTranspose(2, 1, strides=3,
        output_padding=0), [(2, 4, 3)], {}, feed=[(2, 0, 3)])
invalid("conv1d_transpose_strides_with_dilation", lambda: L.Conv1DTranspose(2, 3), [(2, 4, 3)],
        {"strides": [2], "dilation_rate": [2]})
invalid("conv1d_transpose_causal", lambda: L.Conv1DTranspose(2, 3), [(2, 4, 3)], {"padding": "causal"})
invalid("conv2d_transpose_rank3", lambda: L.Conv2DTranspose(2, 3), [(2, 4, 3, 2)], {}, feed=[(2, 4, 3)])
invalid("conv2d_transpose_rank5", lambda: L.Conv2DTranspose(2, 3), [(2, 4, 3, 2)], {}, feed=[(2, 4, 3, 2, 2)])
invalid("conv2d_transpose_zero_filters", lambda: L.Conv2DTranspose(2, 3), [(2, 4, 3, 2)], {"filters": 0})

# --- DepthwiseConv1D / DepthwiseConv2D -----------------------------------------------------
valid("depthwise_conv1d", lambda: L.DepthwiseConv1D(3), [(2, 6, 3)], weights=W)
valid("depthwise_conv1d_multiplier", lambda: L.DepthwiseConv1D(2, depth_multiplier=3, padding="same"),
      [(2, 5, 2)], weights=W)
valid("depthwise_conv1d_strides_dilation_valid", lambda: L.DepthwiseConv1D(3, strides=2, dilation_rate=2,
      depth_multiplier=2), [(2, 9, 2)], weights=W)
valid("depthwise_conv1d_strides_dilation_same", lambda: L.DepthwiseConv1D(3, strides=2, dilation_rate=2,
      padding="same"), [(2, 8, 3)], weights=W)
valid("depthwise_conv1d_channels_first", lambda: L.DepthwiseConv1D(3, strides=2, depth_multiplier=2,
      data_format="channels_first"), [(2, 3, 7)], weights=W)
valid("depthwise_conv1d_zero_channels", lambda: L.DepthwiseConv1D(3), [(2, 6, 0)], weights=W)
valid("depthwise_conv1d_kernel_equals_input", lambda: L.DepthwiseConv1D(4, activation="elu"), [(2, 4, 3)],
      weights=W)
valid("depthwise_conv2d", lambda: L.DepthwiseConv2D(3), [(2, 5, 5, 2)], weights=W)
valid("depthwise_conv2d_asymmetric", lambda: L.DepthwiseConv2D((2, 3), strides=(2, 2), padding="same",
      depth_multiplier=2), [(2, 5, 4, 2)], weights=W)
valid("depthwise_conv2d_unequal_strides_f32", lambda: L.DepthwiseConv2D((2, 3), strides=(2, 1), padding="same",
      depth_multiplier=2), [(2, 5, 4, 2)], weights=W, dtype="float32")
valid("depthwise_conv2d_dilation_same", lambda: L.DepthwiseConv2D(2, dilation_rate=(2, 1), padding="same"),
      [(2, 5, 4, 3)], weights=W)
valid("depthwise_conv2d_strides_dilation_same", lambda: L.DepthwiseConv2D(3, strides=(2, 1),
      dilation_rate=(1, 2), padding="same", depth_multiplier=2), [(1, 7, 6, 2)], weights=W)
valid("depthwise_conv2d_channels_first", lambda: L.DepthwiseConv2D(2, padding="same",
      data_format="channels_first", use_bias=False), [(2, 3, 4, 4)], weights=W)
valid("depthwise_conv2d_channels_first_square_output", lambda: L.DepthwiseConv2D(2,
      data_format="channels_first"), [(2, 3, 4, 4)], weights=W, divergence=BIAS_ADD)
valid("depthwise_conv2d_f32", lambda: L.DepthwiseConv2D(3, strides=2, depth_multiplier=2, padding="same"),
      [(2, 5, 5, 3)], weights=W, dtype="float32")
valid("depthwise_conv2d_multiplier_column_stride_f32", lambda: L.DepthwiseConv2D((1, 2), strides=(1, 3),
      depth_multiplier=2), [(1, 3, 3, 1)], weights=W, dtype="float32", divergence=DEPTHWISE_ONEDNN)
valid("depthwise_conv2d_channels_first_dilation_f32", lambda: L.DepthwiseConv2D(2, dilation_rate=2,
      data_format="channels_first"), [(2, 2, 5, 5)], weights=W, dtype="float32")

invalid("depthwise_conv1d_zero_multiplier", lambda: L.DepthwiseConv1D(3), [(2, 6, 3)], {"depth_multiplier": 0})
invalid("depthwise_conv1d_kernel_too_large", lambda: L.DepthwiseConv1D(3), [(2, 6, 3)], {}, feed=[(2, 2, 3)])
invalid("depthwise_conv1d_causal", lambda: L.DepthwiseConv1D(3), [(2, 6, 3)], {"padding": "causal"})
invalid("depthwise_conv1d_zero_channels_f32", lambda: L.DepthwiseConv1D(3), [(2, 6, 3)], {}, feed=[(2, 6, 0)],
        dtype="float32")
invalid("depthwise_conv2d_unequal_strides_f64", lambda: L.DepthwiseConv2D(2), [(2, 5, 4, 2)],
        {"strides": [2, 1]})
invalid("depthwise_conv2d_rank5", lambda: L.DepthwiseConv2D(1), [(2, 4, 4, 3)], {}, feed=[(2, 4, 4, 3, 1)])
invalid("depthwise_conv2d_zero_kernel", lambda: L.DepthwiseConv2D(3), [(2, 4, 4, 3)], {"kernel_size": [0, 3]})

# --- SeparableConv1D / SeparableConv2D -----------------------------------------------------
valid("separable_conv1d", lambda: L.SeparableConv1D(3, 3), [(2, 6, 2)], weights=W)
valid("separable_conv1d_multiplier_same", lambda: L.SeparableConv1D(2, 3, depth_multiplier=2, padding="same",
      strides=2), [(2, 7, 3)], weights=W)
valid("separable_conv1d_strides_dilation", lambda: L.SeparableConv1D(2, 2, strides=2, dilation_rate=3,
      padding="same"), [(2, 8, 2)], weights=W)
valid("separable_conv1d_channels_first", lambda: L.SeparableConv1D(3, 2, data_format="channels_first",
      activation="softplus"), [(2, 2, 6)], weights=W)
valid("separable_conv2d", lambda: L.SeparableConv2D(3, 3), [(2, 5, 5, 2)], weights=W)
valid("separable_conv2d_asymmetric", lambda: L.SeparableConv2D(2, (3, 2), depth_multiplier=2,
      padding="same"), [(2, 4, 5, 2)], weights=W)
valid("separable_conv2d_unequal_strides_f32", lambda: L.SeparableConv2D(2, (3, 2), strides=(1, 2),
      depth_multiplier=2, padding="same"), [(2, 4, 5, 2)], weights=W, dtype="float32")
valid("separable_conv2d_strides_dilation_valid", lambda: L.SeparableConv2D(2, 2, strides=2, dilation_rate=2,
      use_bias=False), [(1, 7, 6, 3)], weights=W)
valid("separable_conv2d_channels_first", lambda: L.SeparableConv2D(2, 3, padding="same",
      data_format="channels_first"), [(2, 3, 4, 4)], weights=W)
valid("separable_conv2d_f32", lambda: L.SeparableConv2D(4, 3, depth_multiplier=2), [(2, 5, 5, 2)], weights=W,
      dtype="float32")

invalid("separable_conv1d_zero_filters", lambda: L.SeparableConv1D(2, 3), [(2, 6, 3)], {"filters": 0})
invalid("separable_conv1d_zero_channels", lambda: L.SeparableConv1D(2, 3), [(2, 6, 3)], {}, feed=[(2, 6, 0)])
invalid("separable_conv2d_kernel_too_large", lambda: L.SeparableConv2D(2, 3), [(2, 5, 5, 3)], {},
        feed=[(2, 5, 2, 3)])
invalid("separable_conv2d_zero_multiplier", lambda: L.SeparableConv2D(2, 3), [(2, 5, 5, 3)],
        {"depth_multiplier": -1})
invalid("separable_conv2d_unequal_strides_f64", lambda: L.SeparableConv2D(2, 2), [(2, 5, 4, 2)],
        {"strides": [1, 3]})
invalid("separable_conv2d_rank3", lambda: L.SeparableConv2D(2, 1), [(2, 5, 5, 3)], {}, feed=[(2, 5, 3)])

write_all("convolutional")

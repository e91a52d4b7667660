//! `keras.layers.AdaptiveAveragePooling3D`: the mean over adaptive windows that pool the 3
//! spatial axes to `output_size`.
//! TF has CPU kernels for it in float32 and bfloat16 only.

use super::Reduce;

pooling_class!(
    AdaptiveAveragePooling3D,
    "AdaptiveAveragePooling3D",
    adaptive,
    3,
    Reduce::Average
);

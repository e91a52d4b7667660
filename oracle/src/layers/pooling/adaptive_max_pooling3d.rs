//! `keras.layers.AdaptiveMaxPooling3D`: the maximum over adaptive windows that pool the 3
//! spatial axes to `output_size`.
//! TF has CPU kernels for it in float32 and bfloat16 only.

use super::Reduce;

pooling_class!(
    AdaptiveMaxPooling3D,
    "AdaptiveMaxPooling3D",
    adaptive,
    3,
    Reduce::Max
);

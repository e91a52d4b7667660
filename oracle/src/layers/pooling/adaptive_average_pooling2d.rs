//! `keras.layers.AdaptiveAveragePooling2D`: the mean over adaptive windows that pool the 2
//! spatial axes to `output_size`.

use super::Reduce;

pooling_class!(
    AdaptiveAveragePooling2D,
    "AdaptiveAveragePooling2D",
    adaptive,
    2,
    Reduce::Average
);

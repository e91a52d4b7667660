//! `keras.layers.AdaptiveMaxPooling2D`: the maximum over adaptive windows that pool the 2
//! spatial axes to `output_size`.

use super::Reduce;

pooling_class!(
    AdaptiveMaxPooling2D,
    "AdaptiveMaxPooling2D",
    adaptive,
    2,
    Reduce::Max
);

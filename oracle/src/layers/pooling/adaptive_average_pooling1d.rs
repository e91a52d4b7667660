//! `keras.layers.AdaptiveAveragePooling1D`: the mean over adaptive windows that pool the steps
//! axis to `output_size`.

use super::Reduce;

pooling_class!(
    AdaptiveAveragePooling1D,
    "AdaptiveAveragePooling1D",
    adaptive,
    1,
    Reduce::Average
);

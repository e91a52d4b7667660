//! `keras.layers.AdaptiveMaxPooling1D`: the maximum over adaptive windows that pool the steps
//! axis to `output_size`.

use super::Reduce;

pooling_class!(
    AdaptiveMaxPooling1D,
    "AdaptiveMaxPooling1D",
    adaptive,
    1,
    Reduce::Max
);

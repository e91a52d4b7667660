//! `keras.layers.GlobalAveragePooling1D`: the mean over the steps axis (kept as size 1 with
//! `keepdims`). A mask argument is not modelled.

use super::Reduce;

pooling_class!(
    GlobalAveragePooling1D,
    "GlobalAveragePooling1D",
    global,
    1,
    Reduce::Average
);

//! `keras.layers.MaxPooling1D`: the maximum over `pool_size` windows of the steps axis, moved
//! by `strides`, with `valid` or `same` padding.

use super::Reduce;

pooling_class!(MaxPooling1D, "MaxPooling1D", windowed, 1, Reduce::Max);

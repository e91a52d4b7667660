//! Recurrent layers, their cells, and the wrappers over layers (Bidirectional, TimeDistributed).

pub mod conv_lstm;
pub mod conv_lstm1d;
pub mod conv_lstm2d;
pub mod conv_lstm3d;
pub mod time_distributed;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &conv_lstm1d::ConvLSTM1D,
    &conv_lstm2d::ConvLSTM2D,
    &conv_lstm3d::ConvLSTM3D,
    &time_distributed::TimeDistributed,
];

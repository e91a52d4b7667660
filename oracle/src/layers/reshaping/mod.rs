//! Reshaping layers (Reshape, Flatten, Permute, RepeatVector, Cropping, ZeroPadding, UpSampling).

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[];

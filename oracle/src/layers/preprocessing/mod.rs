//! Preprocessing layers that are part of a model: Rescaling, Normalization.

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[];

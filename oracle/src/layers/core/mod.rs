//! Core layers.

pub mod dense;
pub mod embedding;
pub mod identity;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[&dense::Dense, &identity::Identity, &embedding::Embedding];

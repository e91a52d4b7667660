//! Core layers.

pub mod dense;
pub mod einsum_dense;
pub mod embedding;
pub mod identity;
pub mod masking;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &dense::Dense,
    &identity::Identity,
    &embedding::Embedding,
    &masking::Masking,
    &einsum_dense::EinsumDense,
];

//! Attention layers: `Attention` and `AdditiveAttention` (one spec, two score functions), and
//! `MultiHeadAttention` and `GroupedQueryAttention` (projections around one multi-head core);
//! and the `ConvertToTensor` operation Keras records for `Attention`'s output mask.

pub mod additive_attention;
#[allow(clippy::module_inception)]
pub mod attention;
pub mod base_attention;
pub mod call;
pub mod convert_to_tensor;
pub mod grouped_query_attention;
pub mod heads;
pub mod multi_head_attention;
pub mod tensor_ops;

use super::LayerKind;

/// The classes of this family, one line each.
pub static KINDS: &[&dyn LayerKind] = &[
    &attention::Attention,
    &additive_attention::AdditiveAttention,
    &multi_head_attention::MultiHeadAttention,
    &grouped_query_attention::GroupedQueryAttention,
    &convert_to_tensor::ConvertToTensor,
];

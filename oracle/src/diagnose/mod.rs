//! Diagnosis of a user's model, for `semfuzz check`: beyond the violations themselves, what
//! to change (a suggestion per violation, and the single-argument changes the checker
//! confirms would remove it), how the model behaves under other input sizes or arguments,
//! and where its values can overflow or leave a function's domain (interval analysis).
//!
//! Everything here is built on [`crate::check`]: a fix or a size is only reported once the
//! checker has re-run on the changed model, so the diagnosis cannot disagree with `check`.

pub mod edit;
pub mod fixes;
pub mod hazards;
pub mod initializers;
pub mod paths;
pub mod sizes;
pub mod suggest;

pub use edit::{EditError, set_argument, set_input_shape};
pub use fixes::{Fix, FixBudget, fixes};
pub use hazards::{
    Hazard, HazardReport, SafeOp, StoredWeight, WeightRanges, hazards, hazards_with_weights,
};
pub use paths::{LayerPath, locate};

/// Where a violation is, as a path of layer names (`backbone/conv` inside the nested model
/// `backbone`; the layer's own name at the top level).
pub fn violation_path(model: &crate::case::Model, v: &crate::Violation) -> String {
    locate(model, &v.layer, &v.class)
        .map(|p| paths::display(model, &p))
        .unwrap_or_else(|| v.layer.clone())
}
pub use sizes::{SizeWarning, size_warnings};
pub use suggest::suggestion;

//! Unknown dimensions: a model whose inputs leave a size open (`None`) may be valid for some
//! sizes only (a valid-padded convolution needs at least its kernel). Each open non-batch
//! dimension is tried alone at a fixed set of sizes, and the sizes that fail are named.

use crate::case::{Case, Dims};
use crate::check::{CheckError, check_model, declared_inputs};
use crate::violation::Violation;

/// The sizes each open dimension is tried at: the small sizes where windows stop fitting,
/// and a few common larger ones.
pub const TRIED_SIZES: [usize; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 224];

/// An open dimension of a model input for which some sizes make the model invalid.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeWarning {
    /// The input layer's name.
    pub input: String,
    pub axis: usize,
    /// The sizes (of [`TRIED_SIZES`]) for which the model is invalid.
    pub failing: Vec<usize>,
    /// The sizes for which it is valid.
    pub valid: Vec<usize>,
    /// The violation at the smallest failing size.
    pub example: Violation,
}

impl std::fmt::Display for SizeWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |xs: &[usize]| {
            xs.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(
            f,
            "input '{}' axis {} is unknown (None): the model is invalid for sizes {} (valid for {}); e.g. {}",
            self.input,
            self.axis,
            list(&self.failing),
            if self.valid.is_empty() {
                "none tried".to_owned()
            } else {
                list(&self.valid)
            },
            self.example
        )
    }
}

/// The open dimensions that some sizes make invalid. Empty when the model declares every
/// size, or is invalid (or unsupported) on its declared shapes already.
pub fn size_warnings(case: &Case) -> Vec<SizeWarning> {
    let Ok(declared) = declared_inputs(&case.model) else {
        return Vec::new();
    };
    if check_model(&case.model, &declared, case.dtype).is_err() {
        return Vec::new();
    }
    let names: Vec<String> = case
        .model
        .input_refs()
        .into_iter()
        .map(|r| r.layer)
        .collect();
    let mut out = Vec::new();
    for (i, shape) in declared.iter().enumerate() {
        for axis in (1..shape.len()).filter(|&a| shape[a].is_none()) {
            if let Some(w) = try_sizes(case, &declared, i, axis) {
                out.push(SizeWarning {
                    input: names.get(i).cloned().unwrap_or_default(),
                    axis,
                    ..w
                });
            }
        }
    }
    out
}

/// Checks the model with input `i`'s `axis` set to each of [`TRIED_SIZES`].
fn try_sizes(case: &Case, declared: &[Dims], i: usize, axis: usize) -> Option<SizeWarning> {
    let mut shapes = declared.to_vec();
    let mut failing = Vec::new();
    let mut valid = Vec::new();
    let mut example = None;
    for size in TRIED_SIZES {
        shapes[i][axis] = Some(size);
        match check_model(&case.model, &shapes, case.dtype) {
            Ok(_) => valid.push(size),
            Err(CheckError::Invalid(v)) => {
                failing.push(size);
                example.get_or_insert(v);
            }
            Err(CheckError::Unsupported(_)) => {}
        }
    }
    Some(SizeWarning {
        input: String::new(),
        axis,
        failing,
        valid,
        example: example?,
    })
}

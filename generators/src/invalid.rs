//! Minimally-invalid cases: one targeted change that breaks exactly one precondition.

use oracle::{Case, Violation};

use crate::Rng;
use crate::edit::Skipped;

/// A copy of a valid case with exactly one violated precondition, and that violation.
pub fn make_minimally_invalid(_case: &Case, _rng: &mut Rng) -> Result<(Case, Violation), Skipped> {
    Err(Skipped("not available"))
}

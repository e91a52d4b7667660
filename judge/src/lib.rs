//! What counts as a bug: the verdicts on what a framework did with a case, judged layer by
//! layer against the reference, with typed evidence, and the kept-bug entries that explain
//! some of them. Pure Rust: the worker's outcome is plain data, so judging is tested without
//! Python.

pub mod entries;
pub mod evidence;
pub mod outcome;
pub mod predicates;
pub mod verdict;

pub use entries::{Suppressions, Target};
pub use evidence::Evidence;
pub use outcome::{Backend, LayerOutputs, Mode, ModeOutcome, PyError, TfOutcome};
pub use verdict::{Judge, Kind, Tier, Verdict};

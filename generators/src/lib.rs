//! Random generation, mutation and badness-guided repair of semfuzz cases: plain functions
//! over [`oracle::Case`], deterministic under a seeded [`Rng`], with no fuzzing-engine types.
//!
//! - [`generate`]: random layer-graph models (DAGs with fan-out, merges, several inputs and
//!   outputs), arguments from each class's declared parameter space;
//! - [`repair`]: the ExAIS hill-climb on the oracle's badness, generalised to graphs;
//! - [`mutate`]: small named mutations that never corrupt a case;
//! - [`invalid`]: minimally-invalid cases, to test a framework's validation;
//! - [`values`]: weights and inputs from several value distributions;
//! - [`minimize`]: delta debugging of a case while a caller's test (a signature) persists.

pub mod balance;
pub mod build;
pub mod edit;
pub mod generate;
pub mod invalid;
pub mod minimize;
pub mod mutate;
pub mod repair;
pub mod sample;
pub mod stats;
pub mod target;
pub mod values;

pub use balance::ClassBalance;
pub use edit::Skipped;
pub use generate::{GenOptions, Generated, generate, generate_structure};
pub use invalid::make_minimally_invalid;
pub use mutate::mutate;
pub use repair::{RepairOptions, RepairStats, Score, diagnose, repair};

/// The random number generator of every function here: small, fast, seedable.
pub type Rng = rand::rngs::SmallRng;

/// A generator seeded from a number (the same seed gives the same cases).
pub fn rng(seed: u64) -> Rng {
    use rand::SeedableRng;
    Rng::seed_from_u64(seed)
}

//! The mutators. [`CaseMutator`]: one of the generators' mutations (or, now and then, a fresh
//! model), then the repair toward validity and new arrays where shapes changed; a share of
//! the results is made minimally invalid on purpose, to test TF's validation and error
//! messages. [`ValueMutator`]: new input and weight values only, so that the worker runs
//! them on the model it already holds.

use std::borrow::Cow;

use generators::generate::classes_for;
use generators::repair::{RepairOptions, repair};
use generators::values::{ValueOptions, realize};
use generators::{ClassBalance, GenOptions, generate};
use libafl::Error;
use libafl::corpus::{Corpus, CorpusId};
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::{HasCorpus, HasRand};
use libafl_bolts::Named;
use libafl_bolts::rands::Rand;
use oracle::{Case, DType};
use rand::Rng as _;

use super::input::CaseInput;

/// The share of mutations of a corpus entry that change its dtype (when the campaign runs
/// several): the rest change its structure, arguments or values in the dtype it has.
pub const DTYPE_CHANGE_SHARE: f64 = 0.2;

/// Whether a mutation of a case in `dtype` changes its dtype, `drawn` being the dtype drawn
/// for this mutation from `dtypes`.
fn flips_dtype(dtypes: &[DType], dtype: DType, drawn: DType, rng: &mut generators::Rng) -> bool {
    !dtypes.contains(&dtype) || (drawn != dtype && rng.random_bool(DTYPE_CHANGE_SHARE))
}

#[derive(Debug, Clone)]
pub struct MutateOptions {
    /// The dtypes cases run in: a fresh model draws one uniformly; a mutated case changes
    /// its own in [`DTYPE_CHANGE_SHARE`] of mutations (always when it is not listed).
    pub dtypes: Vec<DType>,
    /// Share of results made minimally invalid.
    pub invalid_share: f64,
    /// Share of mutations that replace the case by a freshly generated one.
    pub fresh_share: f64,
    /// Layers per fresh model.
    pub layers: usize,
    pub repair: RepairOptions,
    pub values: ValueOptions,
}

impl MutateOptions {
    /// A fresh random model in `dtype`, its classes drawn by `balance` (`None` when none came
    /// out valid).
    pub fn fresh(
        &self,
        dtype: DType,
        balance: &ClassBalance,
        rng: &mut generators::Rng,
    ) -> Option<Case> {
        let opts = GenOptions {
            layers: self.layers,
            dtype,
            classes: classes_for(dtype),
            balance: balance.clone(),
            repair: self.repair,
            values: self.values,
            ..GenOptions::default()
        };
        (0..4)
            .map(|_| generate(&opts, rng))
            .find(|g| g.repair.valid)
            .map(|g| g.case)
    }
}

pub struct CaseMutator {
    opts: MutateOptions,
    /// The models of each class this mutator has made: new classes, and the layers whose
    /// arguments change, are drawn from those it made least.
    balance: ClassBalance,
}

impl CaseMutator {
    pub fn new(opts: MutateOptions) -> Self {
        CaseMutator {
            opts,
            balance: ClassBalance::default(),
        }
    }
}

impl Named for CaseMutator {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("case");
        &NAME
    }
}

/// Another corpus entry to splice from.
fn donor<S: HasCorpus<CaseInput>>(state: &S, pick: usize) -> Option<Case> {
    let corpus = state.corpus();
    let n = corpus.count();
    if n < 2 {
        return None;
    }
    let id = corpus.nth(pick % n);
    corpus.cloned_input_for_id(id).ok()?.case().ok()
}

impl<S> Mutator<CaseInput, S> for CaseMutator
where
    S: HasRand + HasCorpus<CaseInput>,
{
    fn mutate(&mut self, state: &mut S, input: &mut CaseInput) -> Result<MutationResult, Error> {
        let mut rng = generators::rng(state.rand_mut().next());
        let o = &self.opts;
        let dtype = o.dtypes[rng.random_range(0..o.dtypes.len())];
        let mut case = if rng.random_bool(o.fresh_share) {
            match o.fresh(dtype, &self.balance, &mut rng) {
                Some(c) => c,
                None => return Ok(MutationResult::Skipped),
            }
        } else {
            let Ok(mut case) = input.case() else {
                return Ok(MutationResult::Skipped);
            };
            // A case keeps its dtype but for a share of mutations (or when it has one the
            // campaign does not run): a flip rebuilds the model and changes nothing else.
            let changed = if flips_dtype(&o.dtypes, case.dtype, dtype, &mut rng) {
                generators::mutate::change_dtype(&mut case, &mut rng)
            } else {
                let pick = rng.random_range(0..usize::MAX);
                let can_splice = state.corpus().count() >= 2;
                generators::mutate::mutate_with_donor(
                    &mut case,
                    &mut rng,
                    &self.balance,
                    can_splice,
                    || donor(state, pick),
                )
                .map(|_| ())
            };
            if changed.is_err() {
                return Ok(MutationResult::Skipped);
            }
            case
        };
        if !repair(&mut case, &o.repair, &mut rng).valid
            || realize(&mut case, o.repair.batch, &o.values, &mut rng).is_err()
        {
            return Ok(MutationResult::Skipped);
        }
        if rng.random_bool(o.invalid_share)
            && let Ok((mut invalid, _)) =
                generators::invalid::make_minimally_invalid(&case, &self.balance, &mut rng)
        {
            // No weights: they were made for the valid model, and a rejection of misfit
            // arrays would hide whether Keras checks the broken argument itself. The
            // reference needs none to judge validity, and Keras initialises its own.
            invalid.weights.clear();
            case = invalid;
        }
        self.balance.record(&case);
        *input = CaseInput::from_case(&case);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _new: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

/// Changes only a case's input and weight values (one to three perturbations): the model,
/// its dtype and its shapes stay, so the worker reuses the model it built for the entry.
pub struct ValueMutator {
    opts: MutateOptions,
}

impl ValueMutator {
    pub fn new(opts: MutateOptions) -> Self {
        ValueMutator { opts }
    }
}

impl Named for ValueMutator {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("values");
        &NAME
    }
}

impl<S> Mutator<CaseInput, S> for ValueMutator
where
    S: HasRand,
{
    fn mutate(&mut self, state: &mut S, input: &mut CaseInput) -> Result<MutationResult, Error> {
        let mut rng = generators::rng(state.rand_mut().next());
        let Ok(mut case) = input.case() else {
            return Ok(MutationResult::Skipped);
        };
        let mut changed = false;
        for _ in 0..rng.random_range(1..=3) {
            let perturb = if rng.random_bool(0.5) {
                generators::mutate::perturb_inputs
            } else {
                generators::mutate::perturb_weights
            };
            changed |= perturb(&mut case, &mut rng).is_ok();
        }
        // New values may break a precondition on values (an index past an embedding's
        // rows): the repair and the realisation mend them as after any mutation.
        if !changed
            || !repair(&mut case, &self.opts.repair, &mut rng).valid
            || realize(
                &mut case,
                self.opts.repair.batch,
                &self.opts.values,
                &mut rng,
            )
            .is_err()
        {
            return Ok(MutationResult::Skipped);
        }
        *input = CaseInput::from_case(&case);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _new: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libafl::state::HasRand;
    use libafl_bolts::rands::StdRand;
    use serde_json::Value;

    struct Rands(StdRand);

    impl HasRand for Rands {
        type Rand = StdRand;
        fn rand(&self) -> &StdRand {
            &self.0
        }
        fn rand_mut(&mut self) -> &mut StdRand {
            &mut self.0
        }
    }

    fn parts(input: &CaseInput) -> (Value, Value) {
        let mut v: Value = serde_json::from_str(input.json()).unwrap();
        let values = json_pair(&mut v);
        (v, values)
    }

    /// The case without its arrays, and its arrays.
    fn json_pair(v: &mut Value) -> Value {
        let map = v.as_object_mut().unwrap();
        let inputs = map.remove("inputs").unwrap_or(Value::Null);
        let weights = map.remove("weights").unwrap_or(Value::Null);
        serde_json::json!([inputs, weights])
    }

    /// A case keeps its dtype in most mutations; one the campaign does not run always changes.
    #[test]
    fn a_mutation_changes_the_dtype_in_a_share_of_mutations_only() {
        let mut rng = generators::rng(5);
        let both = [DType::Float32, DType::Float64];
        let flips = (0..2000)
            .filter(|i| {
                let drawn = both[i % 2];
                flips_dtype(&both, DType::Float32, drawn, &mut rng)
            })
            .count();
        // Half the draws differ, a fifth of those flip: about 200 of 2000.
        assert!((120..=280).contains(&flips), "{flips} flips of 2000");
        let one = [DType::Float32];
        assert!((0..50).all(|_| flips_dtype(&one, DType::Float64, DType::Float32, &mut rng)));
        assert!((0..50).all(|_| !flips_dtype(&one, DType::Float32, DType::Float32, &mut rng)));
    }

    /// Value mutations keep the model, its dtype and shapes (what lets the worker reuse the
    /// model it holds) and change some array.
    #[test]
    fn value_mutations_change_values_only() {
        let opts = MutateOptions {
            dtypes: vec![DType::Float32, DType::Float64],
            invalid_share: 0.0,
            fresh_share: 0.0,
            layers: 6,
            repair: RepairOptions::default(),
            values: generators::values::ValueOptions::default(),
        };
        let mut mutator = ValueMutator::new(opts.clone());
        let mut state = Rands(StdRand::with_seed(3));
        let mut rng = generators::rng(3);
        let mut mutated = 0;
        for dtype in [DType::Float32, DType::Float64]
            .into_iter()
            .cycle()
            .take(30)
        {
            let Some(case) = opts.fresh(dtype, &ClassBalance::default(), &mut rng) else {
                continue;
            };
            let before = CaseInput::from_case(&case);
            let mut input = before.clone();
            if mutator.mutate(&mut state, &mut input).unwrap() == MutationResult::Mutated {
                mutated += 1;
                let (model_before, values_before) = parts(&before);
                let (model_after, values_after) = parts(&input);
                assert_eq!(model_before, model_after);
                assert_ne!(values_before, values_after);
            }
        }
        assert!(mutated >= 20, "{mutated} of 30 mutated");
    }
}

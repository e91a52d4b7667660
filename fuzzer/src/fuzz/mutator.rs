//! The mutator: one of the generators' mutations (or, now and then, a fresh model), then the
//! repair toward validity and new arrays where shapes changed. A share of the results is
//! made minimally invalid on purpose, to test TF's validation and error messages.

use std::borrow::Cow;

use generators::generate::classes_for;
use generators::repair::{RepairOptions, repair};
use generators::values::{ValueOptions, realize};
use generators::{GenOptions, generate};
use libafl::Error;
use libafl::corpus::{Corpus, CorpusId};
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::{HasCorpus, HasRand};
use libafl_bolts::Named;
use libafl_bolts::rands::Rand;
use oracle::{Case, DType};
use rand::Rng as _;

use super::input::CaseInput;

#[derive(Debug, Clone)]
pub struct MutateOptions {
    /// The dtypes cases run in, drawn uniformly per mutation.
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
    /// A fresh random model in `dtype` (`None` when none came out valid).
    pub fn fresh(&self, dtype: DType, rng: &mut generators::Rng) -> Option<Case> {
        let opts = GenOptions {
            layers: self.layers,
            dtype,
            classes: classes_for(dtype),
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
}

impl CaseMutator {
    pub fn new(opts: MutateOptions) -> Self {
        CaseMutator { opts }
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
            match o.fresh(dtype, &mut rng) {
                Some(c) => c,
                None => return Ok(MutationResult::Skipped),
            }
        } else {
            let Ok(mut case) = input.case() else {
                return Ok(MutationResult::Skipped);
            };
            let changed = if case.dtype != dtype {
                generators::mutate::change_dtype(&mut case, &mut rng)
            } else {
                let pick = rng.random_range(0..usize::MAX);
                let can_splice = state.corpus().count() >= 2;
                generators::mutate::mutate_with_donor(&mut case, &mut rng, can_splice, || {
                    donor(state, pick)
                })
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
                generators::invalid::make_minimally_invalid(&case, &mut rng)
        {
            // No weights: they were made for the valid model, and a rejection of misfit
            // arrays would hide whether Keras checks the broken argument itself. The
            // reference needs none to judge validity, and Keras initialises its own.
            invalid.weights.clear();
            case = invalid;
        }
        *input = CaseInput::from_case(&case);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _new: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

//! Which corpus entry is fuzzed next: LibAFL's plain queue, or its minimizer over the
//! coverage map (entries that are the smallest and fastest to cover some feature are
//! favoured; the others are mostly passed over). `fuzz --scheduler` chooses.

use libafl::Error;
use libafl::corpus::{CorpusId, Testcase};
use libafl::schedulers::{
    IndexesLenTimeMinimizerScheduler, QueueScheduler, RemovableScheduler, Scheduler,
};
use libafl_bolts::tuples::MatchName;

use super::State;
use super::executor::FeatureMap;
use super::input::CaseInput;

/// The schedulers `fuzz --scheduler` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerKind {
    /// Every entry in turn.
    Queue,
    /// LibAFL's minimizer over the coverage map, on the queue.
    Minimizer,
}

type Minimizer = IndexesLenTimeMinimizerScheduler<QueueScheduler, CaseInput, FeatureMap>;

/// One of [`SchedulerKind`]'s schedulers.
pub enum CaseScheduler {
    Queue(QueueScheduler),
    Minimizer(Minimizer),
}

impl CaseScheduler {
    pub fn new(kind: SchedulerKind, map: &FeatureMap) -> Self {
        match kind {
            SchedulerKind::Queue => CaseScheduler::Queue(QueueScheduler::new()),
            SchedulerKind::Minimizer => {
                CaseScheduler::Minimizer(Minimizer::new(map, QueueScheduler::new()))
            }
        }
    }
}

impl RemovableScheduler<CaseInput, State> for CaseScheduler {
    fn on_remove(
        &mut self,
        state: &mut State,
        id: CorpusId,
        testcase: &Option<Testcase<CaseInput>>,
    ) -> Result<(), Error> {
        match self {
            CaseScheduler::Queue(s) => s.on_remove(state, id, testcase),
            CaseScheduler::Minimizer(s) => s.on_remove(state, id, testcase),
        }
    }

    fn on_replace(
        &mut self,
        state: &mut State,
        id: CorpusId,
        prev: &Testcase<CaseInput>,
    ) -> Result<(), Error> {
        match self {
            CaseScheduler::Queue(s) => s.on_replace(state, id, prev),
            CaseScheduler::Minimizer(s) => s.on_replace(state, id, prev),
        }
    }
}

impl Scheduler<CaseInput, State> for CaseScheduler {
    fn on_add(&mut self, state: &mut State, id: CorpusId) -> Result<(), Error> {
        match self {
            CaseScheduler::Queue(s) => s.on_add(state, id),
            CaseScheduler::Minimizer(s) => s.on_add(state, id),
        }
    }

    fn on_evaluation<OT>(
        &mut self,
        state: &mut State,
        input: &CaseInput,
        observers: &OT,
    ) -> Result<(), Error>
    where
        OT: MatchName,
    {
        match self {
            CaseScheduler::Queue(s) => s.on_evaluation(state, input, observers),
            CaseScheduler::Minimizer(s) => s.on_evaluation(state, input, observers),
        }
    }

    fn next(&mut self, state: &mut State) -> Result<CorpusId, Error> {
        match self {
            CaseScheduler::Queue(s) => s.next(state),
            CaseScheduler::Minimizer(s) => s.next(state),
        }
    }

    fn set_current_scheduled(
        &mut self,
        state: &mut State,
        next_id: Option<CorpusId>,
    ) -> Result<(), Error> {
        match self {
            CaseScheduler::Queue(s) => s.set_current_scheduled(state, next_id),
            CaseScheduler::Minimizer(s) => s.set_current_scheduled(state, next_id),
        }
    }
}

//! The executor: runs a case on one of the campaign's backends through the client's worker
//! for it (a share of cases on a second backend too, to compare the two), judges it against
//! the reference, fills the coverage map and hands the verdicts to the objective.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use harness_py::{
    Backend, Harness, Kind, Mode, PATIENCE, RunOptions, TfOutcome, TimeoutCheck, Verdict,
    WorkerError,
};
use libafl::Error;
use libafl::events::{Event, EventFirer, EventWithStats};
use libafl::executors::{Executor, ExitKind, HasObservers};
use libafl::monitors::stats::{AggregatorOps, UserStats, UserStatsValue};
use libafl::observers::{ExplicitTracking, Observer, OwnedMapObserver};
use libafl::state::{HasExecutions, HasRand};
use libafl_bolts::Named;
use libafl_bolts::rands::Rand;
use libafl_bolts::tuples::{RefIndexable, tuple_list_type};
use oracle::check::{CheckError, check_in};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::features::{Features, Observed, collect};
use super::findings::KnownCounts;
use super::input::CaseInput;

/// What the last execution found, for the objective: one entry per backend that ran the case
/// and had a finding. It is not sent to other clients with the observers (`serde(skip)`):
/// each finding is recorded once, by the client that ran it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VerdictObserver {
    #[serde(skip)]
    pub last: Vec<Execution>,
}

/// One execution's verdicts on one backend, and what the backend did.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The backend that ran it, and the versions its worker reported.
    pub backend: Backend,
    pub versions: Value,
    /// For a `backend-mismatch`, the other backend that ran the case.
    pub compared_with: Option<Backend>,
    pub verdicts: Vec<Verdict>,
    pub modes: Vec<Mode>,
    /// What TF did, as JSON for the finding's outcome.
    pub tensorflow: Value,
    /// What TF did, with every layer's outputs (for a one-layer repro).
    pub outcome: TfOutcome,
    /// The case as the target ran it, where it was adapted to the target (see
    /// `harness_py::target`): a finding saves this one, whose repro runs there.
    pub adapted: Option<oracle::Case>,
}

impl Named for VerdictObserver {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("verdicts");
        &NAME
    }
}

impl<I, S> Observer<I, S> for VerdictObserver {
    fn pre_exec(&mut self, _state: &mut S, _input: &I) -> Result<(), Error> {
        self.last.clear();
        Ok(())
    }
}

/// The coverage map, with the indices each run set tracked (for the minimizer scheduler).
pub type FeatureMap = ExplicitTracking<OwnedMapObserver<u8>, true, false>;

pub type Observers = tuple_list_type!(FeatureMap, VerdictObserver);

/// How often the counts of known bugs and limitations are written.
const KNOWN_FLUSH: Duration = Duration::from_secs(60);

/// How executions sample backends and modes.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Share of runs that add one more mode from the backend's, for mode-mismatch verdicts.
    pub second_mode_share: f64,
    /// With several backends, the share of runs that run the case on a second backend too,
    /// for backend-mismatch verdicts.
    pub second_backend_share: f64,
    pub run: RunOptions,
    /// Once set, no further case runs: the executor answers [`Error::ShuttingDown`]. (The
    /// case in flight is abandoned only through `run.limits.cancel`.)
    pub stop: Option<&'static AtomicBool>,
    /// The entries that explain verdicts (kept bugs, known limitations).
    pub suppressions: judge::Suppressions,
}

/// Counters a client reports to the monitor (as user stats, summed over clients).
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    pub execs: u64,
    /// Cases the reference called valid.
    pub valid: u64,
    /// Minimally-invalid cases sent to TF.
    pub invalid: u64,
    /// Microseconds the worker spent inside Keras/TF.
    pub tf_us: u64,
    /// Microseconds spent in executions (reference, TF, judging, features).
    pub exec_us: u64,
    /// Microseconds of the executions spent checking and evaluating the case in the
    /// reference, waiting for the worker (TF's time included), and judging (with features).
    pub oracle_us: u64,
    pub worker_us: u64,
    pub judge_us: u64,
    /// Microseconds the worker spent answering requests (inside TF and out).
    pub handle_us: u64,
    /// Workers started (1 + restarts after crashes, hangs and memory blow-ups).
    pub worker_starts: u64,
    /// Distinct lines of Keras's and TF's Python code run so far (with Python coverage).
    pub python_lines: u64,
    /// Cases past the timeout that finished when run again with a longer one.
    pub slow: u64,
    /// Executions whose worker died (a signal or an exit), known framework bugs included.
    pub crashes: u64,
    /// Executions with a verdict a known framework bug or limitation explains (counted,
    /// not saved as findings).
    pub known: u64,
    /// Workers replaced because they had grown past half the memory limit.
    pub recycled: u64,
    /// Memory blow-ups that did not happen again on a fresh worker (no finding).
    pub outgrown: u64,
    /// Executions that ran on the model the worker held (only values changed).
    pub held: u64,
    /// Executions of cases the target cannot express (a class or an argument value it
    /// lacks): neither run nor judged.
    pub unsupported: u64,
    /// Runs and microseconds (the worker's round trips) per backend, in [`Backend::ALL`]'s
    /// order; a case run on two backends counts on each.
    pub backend_runs: [u64; 3],
    pub backend_us: [u64; 3],
}

pub const STAT_NAMES: [&str; 23] = [
    "valid",
    "invalid",
    "tf_us",
    "exec_us",
    "oracle_us",
    "worker_us",
    "judge_us",
    "handle_us",
    "worker_starts",
    "python_lines",
    "slow",
    "crashes",
    "known",
    "recycled",
    "outgrown",
    "held",
    "unsupported",
    "tensorflow_runs",
    "jax_runs",
    "torch_runs",
    "tensorflow_us",
    "jax_us",
    "torch_us",
];

impl Counters {
    fn values(&self) -> [u64; 23] {
        [
            self.valid,
            self.invalid,
            self.tf_us,
            self.exec_us,
            self.oracle_us,
            self.worker_us,
            self.judge_us,
            self.handle_us,
            self.worker_starts,
            self.python_lines,
            self.slow,
            self.crashes,
            self.known,
            self.recycled,
            self.outgrown,
            self.held,
            self.unsupported,
            self.backend_runs[0],
            self.backend_runs[1],
            self.backend_runs[2],
            self.backend_us[0],
            self.backend_us[1],
            self.backend_us[2],
        ]
    }
}

/// One backend a client runs cases on: its worker, its judge (the suppressions scoped to its
/// target) and its modes.
pub struct Lane {
    pub harness: Harness,
    pub judge: judge::Judge,
    pub backend: Backend,
    /// The modes a run may use; the first is always run.
    pub modes: Vec<Mode>,
    /// What its worker reported (Python, Keras, the framework), for findings.
    pub versions: Value,
}

pub struct CaseExecutor {
    lanes: Vec<Lane>,
    observers: Observers,
    opts: ExecOptions,
    pub counters: Counters,
    last_report: Option<Instant>,
    python_lines: std::collections::HashSet<u32>,
    /// Where cases that made semfuzz itself fail (a panic of the reference) are kept.
    pub internal_errors: Option<std::path::PathBuf>,
    /// Executions per known framework bug or limitation, flushed to the campaign's
    /// `known.json` with the counters (at most every [`KNOWN_FLUSH`]) and at the end.
    pub known_counts: Option<KnownCounts>,
    last_known_flush: Option<Instant>,
    /// Where the case about to run is written first, so a crash of the whole process (or
    /// machine) loses nothing: overwritten in place, not fsynced (no rename or sync per
    /// execution; a case cut in half there only if semfuzz itself dies while writing it).
    pub journal: Option<std::path::PathBuf>,
}

impl CaseExecutor {
    /// `lanes`: the backends cases run on (at least one), the first one's reference is the
    /// one generation used.
    pub fn new(lanes: Vec<Lane>, observers: Observers, opts: ExecOptions) -> Self {
        assert!(
            !lanes.is_empty(),
            "a client runs cases on at least one backend"
        );
        CaseExecutor {
            lanes,
            observers,
            opts,
            counters: Counters::default(),
            last_report: None,
            python_lines: Default::default(),
            internal_errors: None,
            known_counts: None,
            last_known_flush: None,
            journal: None,
        }
    }

    /// Runs a step of semfuzz's own (the reference, the judge) so that a bug of ours costs
    /// one execution, not the campaign: the case is kept for us to fix, and fuzzing goes on.
    fn guarded<T>(&self, case: &oracle::Case, what: &str, f: impl FnOnce() -> T) -> Option<T> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(t) => Some(t),
            Err(_) => {
                let kept =
                    keep_internal(self.internal_errors.as_deref(), &CaseInput::from_case(case));
                tracing::error!(
                    "semfuzz failed while {what} a case (a bug of semfuzz, not of TF); kept in {}",
                    kept.map_or("(nowhere)".to_owned(), |p| p.display().to_string())
                );
                None
            }
        }
    }

    fn sample_modes(&self, lane: usize, rng: &mut impl rand::Rng) -> Vec<Mode> {
        let lane_modes = &self.lanes[lane].modes;
        let mut modes = vec![lane_modes[0]];
        let others = &lane_modes[1..];
        if !others.is_empty() && rng.random_bool(self.opts.second_mode_share.clamp(0.0, 1.0)) {
            modes.push(others[rng.random_range(0..others.len())]);
        }
        modes
    }

    /// The backend a run uses, and the second one where it is compared with another.
    fn sample_lanes(&self, rng: &mut impl rand::Rng) -> (usize, Option<usize>) {
        let n = self.lanes.len();
        if n == 1 {
            return (0, None);
        }
        let first = rng.random_range(0..n);
        let second = rng
            .random_bool(self.opts.second_backend_share.clamp(0.0, 1.0))
            .then(|| (first + rng.random_range(1..n)) % n);
        (first, second)
    }

    /// Sends the counters to the monitor, at most every two seconds (or when `force`).
    pub fn report<EM, S>(&mut self, mgr: &mut EM, state: &mut S, force: bool) -> Result<(), Error>
    where
        EM: EventFirer<CaseInput, S>,
        S: HasExecutions,
    {
        if !force
            && self
                .last_report
                .is_some_and(|t| t.elapsed() < Duration::from_secs(2))
        {
            return Ok(());
        }
        self.last_report = Some(Instant::now());
        if let Some(known) = &mut self.known_counts
            && (force
                || self
                    .last_known_flush
                    .is_none_or(|t| t.elapsed() >= KNOWN_FLUSH))
        {
            self.last_known_flush = Some(Instant::now());
            if let Err(e) = known.flush() {
                tracing::warn!("cannot update the counts of known bugs and limitations: {e}");
            }
        }
        let sum = |f: fn(&Harness) -> usize| self.lanes.iter().map(|l| f(&l.harness) as u64).sum();
        self.counters.worker_starts = sum(|h| h.starts);
        self.counters.recycled = sum(|h| h.recycled);
        self.counters.outgrown = sum(|h| h.outgrown);
        for (name, value) in STAT_NAMES.iter().zip(self.counters.values()) {
            mgr.fire(
                state,
                EventWithStats::with_current_time(
                    Event::UpdateUserStats {
                        name: Cow::Borrowed(name),
                        value: UserStats::new(UserStatsValue::Number(value), AggregatorOps::Sum),
                        phantom: PhantomData,
                    },
                    *state.executions(),
                ),
            )?;
        }
        Ok(())
    }
}

/// Keeps an input that made semfuzz itself fail in `dir`, under its content's name, as the
/// text it is (which need not be a readable case); the path, where it could be written.
fn keep_internal(dir: Option<&std::path::Path>, input: &CaseInput) -> Option<std::path::PathBuf> {
    let dir = dir?;
    std::fs::create_dir_all(dir).ok()?;
    let path = dir.join(libafl::inputs::Input::generate_name(input, None));
    std::fs::write(&path, input.json()).ok()?;
    Some(path)
}

/// The case an input holds; an input whose text is no readable case (one another client sent,
/// written by a mutation with a bug of ours) is kept in `internal_errors` and logged, and no
/// case runs: a bug of semfuzz costs one execution, not the client.
fn readable(input: &CaseInput, internal_errors: Option<&std::path::Path>) -> Option<oracle::Case> {
    match input.case() {
        Ok(case) => Some(case),
        Err(e) => {
            let kept = keep_internal(internal_errors, input);
            tracing::error!(
                "a test case does not read back (a bug of semfuzz, not of TF): {e}; kept in {}",
                kept.map_or("(nowhere)".to_owned(), |p| p.display().to_string())
            );
            None
        }
    }
}

impl HasObservers for CaseExecutor {
    type Observers = Observers;
    fn observers(&self) -> RefIndexable<&Self::Observers, Self::Observers> {
        RefIndexable::from(&self.observers)
    }
    fn observers_mut(&mut self) -> RefIndexable<&mut Self::Observers, Self::Observers> {
        RefIndexable::from(&mut self.observers)
    }
}

/// What one backend did with a case.
struct LaneRun {
    tf: TfOutcome,
    verdicts: Vec<Verdict>,
    modes: Vec<Mode>,
    /// The case as the target ran it, where it was adapted.
    adapted: Option<oracle::Case>,
}

impl CaseExecutor {
    /// Runs `case` on lane `lane` in `modes` and judges it; `None` where the target cannot
    /// express the case (neither run nor judged).
    fn run_on(
        &mut self,
        lane: usize,
        case: &oracle::Case,
        oracle: &Result<oracle::check::ModelAnalysis, CheckError>,
        modes: Vec<Mode>,
    ) -> Result<Option<LaneRun>, Error> {
        let opts = RunOptions {
            modes: modes.clone(),
            ..self.opts.run.clone()
        };
        let started = Instant::now();
        let l = &mut self.lanes[lane];
        let framework = judge::verdict::Framework::of(l.backend);
        // A case written for another Keras release runs as the target can express it.
        let adapted = match l.harness.adapt(case) {
            Ok(Ok(c)) => c,
            Ok(Err(why)) => {
                tracing::debug!("unsupported on this target: {why}");
                return Ok(None);
            }
            Err(WorkerError::Cancelled) => return Err(Error::ShuttingDown),
            Err(e) => {
                return Err(Error::unknown(format!(
                    "cannot ask the {framework} worker about its target: {e}"
                )));
            }
        };
        let (tf, timeout) = match l.harness.run_confirming_timeouts(&adapted, &opts) {
            Ok(tf) => tf,
            // Abandoned by a signal: no verdict, and no further case.
            Err(WorkerError::Cancelled) => return Err(Error::ShuttingDown),
            Err(e) => {
                // The worker could not be started, the protocol broke, or the worker was
                // stopped from outside (a service stopping its group, which then stops this
                // client too): once is noise (the machine was short of memory), twice in a
                // row is a failure of semfuzz. Never a finding.
                tracing::warn!("the {framework} worker failed ({e}); starting a new one");
                l.harness
                    .run_confirming_timeouts(&adapted, &opts)
                    .map_err(|e| match e {
                        WorkerError::Cancelled => Error::ShuttingDown,
                        e => Error::unknown(format!("the {framework} worker failed twice: {e}")),
                    })?
            }
        };
        let adapted = match adapted {
            Cow::Owned(c) => Some(c),
            Cow::Borrowed(_) => None,
        };
        let round_trip = started.elapsed().as_micros() as u64;
        let b = l.backend as usize;
        self.counters.backend_runs[b] += 1;
        self.counters.backend_us[b] += round_trip;
        // Until a limit, the worker was inside Keras on this case: the framework alone would
        // have spent at least as long on it.
        let limit = opts.time_limit().as_micros() as u64;
        let timed_out = match timeout {
            TimeoutCheck::None => 0,
            TimeoutCheck::Slow => {
                self.counters.slow += 1;
                limit
            }
            TimeoutCheck::Confirmed => limit * (1 + u64::from(PATIENCE)),
        };
        self.counters.tf_us += timed_out;
        self.counters.handle_us += timed_out;
        match &tf {
            TfOutcome::Ran {
                tf_seconds,
                worker_seconds,
                reused,
                ..
            } => {
                self.counters.held += u64::from(*reused);
                self.counters.tf_us += (tf_seconds * 1e6) as u64;
                self.counters.handle_us += (worker_seconds * 1e6) as u64;
            }
            // Until the framework refused the case, died or was killed for its memory, the
            // worker was inside it (a worker is started on the next request, not here): it
            // alone would have spent that long too. These answers carry no timing, so the
            // round trip counts, the pipe's fraction of a millisecond included.
            TfOutcome::Rejected(_) | TfOutcome::Crash { .. } | TfOutcome::OutOfMemory { .. } => {
                self.counters.tf_us += round_trip;
                self.counters.handle_us += round_trip;
            }
            _ => {}
        }
        let verdicts = self
            .guarded(case, "judging", || {
                self.lanes[lane].judge.judge(case, case.dtype, oracle, &tf)
            })
            .unwrap_or_default();
        Ok(Some(LaneRun {
            tf,
            verdicts,
            modes,
            adapted,
        }))
    }
}

impl<EM, S, Z> Executor<EM, CaseInput, S, Z> for CaseExecutor
where
    EM: EventFirer<CaseInput, S>,
    S: HasExecutions + HasRand,
{
    fn run_target(
        &mut self,
        _fuzzer: &mut Z,
        state: &mut S,
        mgr: &mut EM,
        input: &CaseInput,
    ) -> Result<ExitKind, Error> {
        if self.opts.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return Err(Error::ShuttingDown);
        }
        *state.executions_mut() += 1;
        let started = Instant::now();
        let Some(case) = readable(input, self.internal_errors.as_deref()) else {
            return Ok(ExitKind::Ok);
        };
        let mut rng = generators::rng(state.rand_mut().next());
        let (first, second) = self.sample_lanes(&mut rng);
        let modes = self.sample_modes(first, &mut rng);
        // The reference checks the case for the backend that runs it (TF's CPU kernels refuse
        // what the other backends run).
        let first_backend = self.lanes[first].backend;
        let checked = self.guarded(&case, "checking", || {
            oracle::backend::with(first_backend, || Box::new(check_in(&case, case.dtype)))
        });
        let Some(checked) = checked else {
            return Ok(ExitKind::Ok);
        };
        let oracle = *checked;
        let checked_at = Instant::now();
        if let Some(j) = &self.journal
            && let Err(e) = std::fs::write(j, input.json())
        {
            tracing::warn!(
                "cannot journal the case about to run in {}: {e}",
                j.display()
            );
        }
        let Some(LaneRun {
            tf,
            mut verdicts,
            modes,
            adapted,
        }) = self.run_on(first, &case, &oracle, modes.clone())?
        else {
            super::drawn::record(&case, &modes, &oracle, None, &[]);
            self.counters.execs += 1;
            self.counters.unsupported += 1;
            self.report(mgr, state, false)?;
            return Ok(ExitKind::Ok);
        };
        // The same case on a second backend, in its first mode, compared with the first.
        let mut other = None;
        if let Some(second) = second {
            let modes = vec![self.lanes[second].modes[0]];
            let second_backend = self.lanes[second].backend;
            let oracle2 = self.guarded(&case, "checking", || {
                oracle::backend::with(second_backend, || Box::new(check_in(&case, case.dtype)))
            });
            if let Some(oracle2) = oracle2
                && let Some(LaneRun {
                    tf: tf2,
                    verdicts: verdicts2,
                    modes: modes2,
                    adapted: adapted2,
                }) = self.run_on(second, &case, &oracle2, modes)?
            {
                let (a, b) = (self.lanes[first].backend, self.lanes[second].backend);
                let (ja, jb) = (&self.lanes[first].judge, &self.lanes[second].judge);
                let mismatch = self
                    .guarded(&case, "comparing backends on", || {
                        let (x, y) = ((ja, &tf, &verdicts[..]), (jb, &tf2, &verdicts2[..]));
                        // Named in the backends' fixed order, whichever ran first.
                        let (x, y) = if a <= b { (x, y) } else { (y, x) };
                        judge::Judge::compare_backends(&case, case.dtype, &oracle, x, y)
                    })
                    .flatten();
                other = Some((second, tf2, verdicts2, modes2, adapted2, mismatch, oracle2));
            }
        }
        let ran_at = Instant::now();
        super::drawn::record(&case, &modes, &oracle, Some(&tf), &verdicts);
        let backend = self.lanes[first].backend;
        let mut features = Features::for_backend(self.observers.0.as_mut(), backend);
        // The Python lines of the backends that ran this case (another backend's are those
        // of the last case it ran).
        let ran = std::iter::once(first).chain(other.as_ref().map(|o| o.0));
        for lane in ran {
            for &line in &self.lanes[lane].harness.python_lines {
                features.add_hash(u64::from(line));
                self.python_lines.insert(line);
            }
        }
        self.counters.python_lines = self.python_lines.len() as u64;
        let modes_name: Vec<&str> = modes.iter().map(|m| m.name()).collect();
        collect(
            &mut features,
            &Observed {
                case: &case,
                oracle: &oracle,
                tf: &tf,
                verdicts: &verdicts,
                modes: &modes_name.join(","),
            },
        );
        let mut mismatch_of = None;
        if let Some((second, tf2, verdicts2, modes2, _, mismatch, oracle2)) = &other {
            let mut features =
                Features::for_backend(self.observers.0.as_mut(), self.lanes[*second].backend);
            let names: Vec<&str> = modes2.iter().map(|m| m.name()).collect();
            collect(
                &mut features,
                &Observed {
                    case: &case,
                    oracle: oracle2,
                    tf: tf2,
                    verdicts: verdicts2,
                    modes: &names.join(","),
                },
            );
            if let Some(v) = mismatch {
                features.add(&v.signature);
                mismatch_of = Some(v.clone());
            }
        }
        self.counters.execs += 1;
        let all = || verdicts.iter().chain(other.iter().flat_map(|o| o.2.iter()));
        self.counters.crashes += u64::from(
            matches!(tf, TfOutcome::Crash { .. })
                || other
                    .as_ref()
                    .is_some_and(|o| matches!(o.1, TfOutcome::Crash { .. })),
        );
        self.counters.known +=
            u64::from(all().chain(mismatch_of.as_ref()).any(|v| v.known.is_some()));
        if let Some(known) = &mut self.known_counts {
            known.record(&verdicts);
            if let Some(o) = &other {
                known.record(&o.2);
            }
            known.record(mismatch_of.as_slice());
        }
        match &oracle {
            Ok(_) => self.counters.valid += 1,
            Err(CheckError::Invalid(_)) => self.counters.invalid += 1,
            Err(CheckError::Unsupported(_)) => {}
        }
        let exit = if all().any(|v| v.kind == Kind::Crash) {
            ExitKind::Crash
        } else if all().any(|v| v.kind == Kind::Timeout) {
            ExitKind::Timeout
        } else if all().any(|v| v.kind == Kind::Oom) {
            ExitKind::Oom
        } else {
            ExitKind::Ok
        };
        let mut executions = Vec::new();
        // A backend-mismatch is saved with the first backend's run, naming the other.
        let compared_with = mismatch_of
            .as_ref()
            .and(other.as_ref())
            .map(|o| self.lanes[o.0].backend);
        verdicts.extend(mismatch_of);
        for (lane, tf, verdicts, modes, adapted) in [(first, tf, verdicts, modes, adapted)]
            .into_iter()
            .chain(other.map(|(l, tf, v, m, a, _, _)| (l, tf, v, m, a)))
        {
            if verdicts.iter().any(Verdict::is_finding) {
                let l = &self.lanes[lane];
                executions.push(Execution {
                    backend: l.backend,
                    versions: l.versions.clone(),
                    compared_with: if lane == first { compared_with } else { None },
                    tensorflow: crate::commands::run::tf_report(&case, &tf, &modes),
                    outcome: tf,
                    verdicts,
                    modes,
                    adapted,
                });
            }
        }
        self.observers.1.0.last = executions;
        let micros = |d: Duration| d.as_micros() as u64;
        self.counters.exec_us += micros(started.elapsed());
        self.counters.oracle_us += micros(checked_at - started);
        self.counters.worker_us += micros(ran_at - checked_at);
        self.counters.judge_us += micros(ran_at.elapsed());
        self.report(mgr, state, false)?;
        Ok(exit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An input as another client sends it (its text only), that names an output layer the
    /// model does not have: no case runs, and the text is kept for us to fix.
    #[test]
    fn an_unreadable_input_is_kept_and_skipped() {
        let case = generators::generate::generate(
            &generators::generate::GenOptions::default(),
            &mut generators::rng(3),
        )
        .case;
        let good = CaseInput::from_case(&case);
        let mut text: Value = serde_json::from_str(good.json()).unwrap();
        text["model"]["output_layers"] = serde_json::json!([["no_such_layer", 0, 0]]);
        let sent = |json: String| -> CaseInput {
            serde_json::from_value(serde_json::json!({ "json": json })).unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("internal-errors");

        assert!(readable(&sent(good.json().to_owned()), Some(&kept)).is_some());
        assert!(!kept.exists(), "a readable input is not kept");

        let bad = sent(text.to_string());
        assert!(readable(&bad, Some(&kept)).is_none());
        let files: Vec<_> = std::fs::read_dir(&kept).unwrap().collect();
        assert_eq!(files.len(), 1);
        let path = files[0].as_ref().unwrap().path();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), bad.json());
        assert!(readable(&sent("not JSON".into()), None).is_none());
    }
}

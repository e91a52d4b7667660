//! The executor: runs a case in TensorFlow through the client's worker, judges it against the
//! reference, fills the coverage map and hands the verdicts to the objective.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use harness_py::{
    Harness, Kind, Mode, PATIENCE, RunOptions, TfOutcome, TimeoutCheck, Verdict, WorkerError,
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
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::features::{Features, Observed, collect};
use super::findings::KnownCounts;
use super::input::CaseInput;

/// What the last execution found, for the objective. It is not sent to other clients with
/// the observers (`serde(skip)`): each finding is recorded once, by the client that ran it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VerdictObserver {
    #[serde(skip)]
    pub last: Option<Execution>,
}

/// One execution's verdicts and what TF did.
#[derive(Debug, Clone)]
pub struct Execution {
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
        self.last = None;
        Ok(())
    }
}

/// The coverage map, with the indices each run set tracked (for the minimizer scheduler).
pub type FeatureMap = ExplicitTracking<OwnedMapObserver<u8>, true, false>;

pub type Observers = tuple_list_type!(FeatureMap, VerdictObserver);

/// How often the counts of known bugs and limitations are written.
const KNOWN_FLUSH: Duration = Duration::from_secs(60);

/// How executions sample modes.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// The modes a run may use; the first is always run.
    pub modes: Vec<Mode>,
    /// Share of runs that add one more mode from `modes`, for mode-mismatch verdicts.
    pub second_mode_share: f64,
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
}

pub const STAT_NAMES: [&str; 17] = [
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
];

impl Counters {
    fn values(&self) -> [u64; 17] {
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
        ]
    }
}

pub struct CaseExecutor {
    harness: Harness,
    judge: judge::Judge,
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
    /// `target`: what the harness's worker runs (its releases scope the suppressions).
    pub fn new(
        harness: Harness,
        observers: Observers,
        opts: ExecOptions,
        target: judge::Target,
    ) -> Self {
        CaseExecutor {
            judge: judge::Judge::new(opts.suppressions.clone(), target),
            harness,
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

    fn sample_modes<S: HasRand>(&self, state: &mut S) -> Vec<Mode> {
        let mut modes = vec![self.opts.modes[0]];
        let others = &self.opts.modes[1..];
        if !others.is_empty() {
            let mut rng = generators::rng(state.rand_mut().next());
            if rng.random_bool(self.opts.second_mode_share.clamp(0.0, 1.0)) {
                modes.push(others[rng.random_range(0..others.len())]);
            }
        }
        modes
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
        self.counters.worker_starts = self.harness.starts as u64;
        self.counters.recycled = self.harness.recycled as u64;
        self.counters.outgrown = self.harness.outgrown as u64;
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
        let modes = self.sample_modes(state);
        let opts = RunOptions {
            modes: modes.clone(),
            ..self.opts.run.clone()
        };
        let checked = self.guarded(&case, "checking", || Box::new(check_in(&case, case.dtype)));
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
        // A case written for another Keras release runs as the target can express it.
        let adapted = match self.harness.adapt(&case) {
            Ok(Ok(c)) => c,
            Ok(Err(why)) => {
                tracing::debug!("unsupported on this target: {why}");
                super::drawn::record(&case, &modes, &oracle, None, &[]);
                self.counters.execs += 1;
                self.counters.unsupported += 1;
                self.report(mgr, state, false)?;
                return Ok(ExitKind::Ok);
            }
            Err(WorkerError::Cancelled) => return Err(Error::ShuttingDown),
            Err(e) => {
                return Err(Error::unknown(format!(
                    "cannot ask the worker about its target: {e}"
                )));
            }
        };
        let (tf, timeout) = match self.harness.run_confirming_timeouts(&adapted, &opts) {
            Ok(tf) => tf,
            // Abandoned by a signal: no verdict, and no further case.
            Err(WorkerError::Cancelled) => return Err(Error::ShuttingDown),
            Err(e) => {
                // The worker could not be started or the protocol broke: once is noise (the
                // machine was short of memory), twice in a row is a failure of semfuzz.
                tracing::warn!("the TensorFlow worker failed ({e}); starting a new one");
                self.harness
                    .run_confirming_timeouts(&adapted, &opts)
                    .map_err(|e| match e {
                        WorkerError::Cancelled => Error::ShuttingDown,
                        e => Error::unknown(format!("the TensorFlow worker failed twice: {e}")),
                    })?
            }
        };
        let ran_at = Instant::now();
        // Until a limit, the worker was inside Keras/TF on this case: TF alone would have
        // spent at least as long on it.
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
        let verdicts = self
            .guarded(&case, "judging", || {
                self.judge.judge(&case, case.dtype, &oracle, &tf)
            })
            .unwrap_or_default();
        super::drawn::record(&case, &modes, &oracle, Some(&tf), &verdicts);
        let modes_name: Vec<&str> = modes.iter().map(|m| m.name()).collect();
        let mut features = Features::new(self.observers.0.as_mut());
        for &line in &self.harness.python_lines {
            features.add_hash(u64::from(line));
            self.python_lines.insert(line);
        }
        self.counters.python_lines = self.python_lines.len() as u64;
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
        self.counters.execs += 1;
        self.counters.crashes += u64::from(matches!(tf, TfOutcome::Crash { .. }));
        self.counters.known += u64::from(verdicts.iter().any(|v| v.known.is_some()));
        if let Some(known) = &mut self.known_counts {
            known.record(&verdicts);
        }
        match &oracle {
            Ok(_) => self.counters.valid += 1,
            Err(CheckError::Invalid(_)) => self.counters.invalid += 1,
            Err(CheckError::Unsupported(_)) => {}
        }
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
            // Until TF refused the case, died or was killed for its memory, the worker was
            // inside Keras/TF on it (a worker is started on the next request, not here): TF
            // alone would have spent that long too. These answers carry no timing, so the
            // round trip counts, the pipe's fraction of a millisecond included.
            TfOutcome::Rejected(_) | TfOutcome::Crash { .. } | TfOutcome::OutOfMemory { .. } => {
                let died = (ran_at - checked_at).as_micros() as u64;
                self.counters.tf_us += died;
                self.counters.handle_us += died;
            }
            _ => {}
        }
        let exit = if verdicts.iter().any(|v| v.kind == Kind::Crash) {
            ExitKind::Crash
        } else if verdicts.iter().any(|v| v.kind == Kind::Timeout) {
            ExitKind::Timeout
        } else if verdicts.iter().any(|v| v.kind == Kind::Oom) {
            ExitKind::Oom
        } else {
            ExitKind::Ok
        };
        if verdicts.iter().any(Verdict::is_finding) {
            self.observers.1.0.last = Some(Execution {
                tensorflow: crate::commands::run::tf_report(&case, &tf, &modes),
                outcome: tf,
                verdicts,
                modes,
                adapted: match adapted {
                    Cow::Owned(c) => Some(c),
                    Cow::Borrowed(_) => None,
                },
            });
        }
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

//! `semfuzz fuzz`: the LibAFL loop. Random models are mutated and repaired, run in TensorFlow
//! by one worker per client, judged against the reference, and kept in the corpus when they
//! show new behaviour; findings go to `<out>/findings/`, deduplicated by signature.
//!
//! LibAFL types stay inside this module.

pub mod drawn;
pub mod executor;
pub mod features;
pub mod findings;
pub mod input;
pub mod monitor;
pub mod mutator;
pub mod objective;
pub mod schedule;
pub mod sync;

use std::net::TcpListener;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use generators::RepairOptions;
use generators::values::ValueOptions;
use harness_py::{Harness, PythonEnv, RunOptions, TargetId, TargetInfo, WorkerCommand};
use libafl::corpus::{CachedOnDiskCorpus, Corpus, InMemoryCorpus};
use libafl::events::{
    ClientDescription, EventConfig, EventFirer, EventReceiver, Launcher, ProgressReporter,
    SendExiting, SimpleEventManager,
};
use libafl::feedbacks::MaxMapFeedback;
use libafl::inputs::Input;
use libafl::observers::{CanTrack, OwnedMapObserver};
use libafl::stages::{OptionalStage, StdMutationalStage};
use libafl::state::{HasCorpus, HasExecutions, StdState};
use libafl::{Error, Fuzzer, HasObjective, StdFuzzer};
use libafl_bolts::core_affinity::Cores;
use libafl_bolts::rands::StdRand;
use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
use libafl_bolts::{nonzero, tuples::tuple_list};
use oracle::DType;
use oracle::triggers::TriggerSet;
use serde_json::json;

use crate::cli::FuzzArgs;
use crate::exit::{Failure, Outcome};
use executor::{CaseExecutor, ExecOptions, Lane, VerdictObserver};
use features::MAP_SIZE;
use findings::FindingsStore;
use input::CaseInput;
use monitor::{StatusMonitor, Totals};
use mutator::{CaseMutator, MutateOptions, ValueMutator};
use objective::FindingFeedback;
use schedule::{CaseScheduler, SchedulerKind};

type State = StdState<CachedOnDiskCorpus<CaseInput>, CaseInput, StdRand, InMemoryCorpus<CaseInput>>;

/// Corpus entries kept in memory (the rest is read from disk when scheduled), so the
/// fuzzer's memory stays flat however large the corpus grows.
const CORPUS_CACHE: usize = 64;

/// Fresh models each client starts with (besides the seed corpus).
const INITIAL_MODELS: usize = 8;

/// Set by SIGINT/SIGTERM: every client finishes the case in flight and stops.
static STOP: AtomicBool = AtomicBool::new(false);

/// Set by a second SIGINT/SIGTERM: the case in flight is abandoned (its worker killed, no
/// verdict), and the client stops at once. A signal within [`SAME_SIGNAL`] of the first
/// counts as the same one: a Ctrl-C reaches every process of the terminal's group, and the
/// launcher then passes it on once more.
static FORCE: AtomicBool = AtomicBool::new(false);

/// When the first signal came, in milliseconds of the monotonic clock (0: none yet).
static FIRST_SIGNAL_MS: AtomicU64 = AtomicU64::new(0);

const SAME_SIGNAL: u64 = 500;

/// The monotonic clock in milliseconds (async-signal-safe).
fn monotonic_ms() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec; it is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1000 + t.tv_nsec as u64 / 1_000_000
}

/// Set in the launcher's process: a signal that reaches only it (a service manager's
/// SIGTERM to the main process) is passed on to the clients, as a Ctrl-C at the terminal.
static FORWARD: AtomicBool = AtomicBool::new(false);

/// The process that tells the user, on stderr, what a signal does: the campaign's with one
/// job, else the first client's (the launcher's own process ignores Ctrl-C).
static ANNOUNCER: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(_sig: libc::c_int) {
    // SAFETY: getpid, write and kill are async-signal-safe; the rest are atomics.
    let announce = |text: &str| unsafe {
        if libc::getpid() == ANNOUNCER.load(Ordering::SeqCst) {
            libc::write(2, text.as_ptr().cast(), text.len());
        }
    };
    let now = monotonic_ms().max(1);
    if let Err(first) = FIRST_SIGNAL_MS.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst)
    {
        if now.saturating_sub(first) >= SAME_SIGNAL && !FORCE.swap(true, Ordering::SeqCst) {
            announce("\n[semfuzz] stopping now; the case in flight is dropped\n");
        }
        return;
    }
    STOP.store(true, Ordering::SeqCst);
    announce("\n[semfuzz] stopping after the case in flight (again to stop now)\n");
    if FORWARD.load(Ordering::SeqCst) {
        // SAFETY: the group is this campaign's (workers have their own groups and die with
        // their clients).
        unsafe { libc::kill(0, libc::SIGINT) };
    }
}

/// Installs [`on_signal`] for SIGINT and SIGTERM; `announce`: this process tells the user
/// what a signal does.
fn install_stop_handler(forward: bool, announce: bool) {
    FORWARD.store(forward, Ordering::SeqCst);
    let pid = if announce {
        std::process::id() as i32
    } else {
        0
    };
    ANNOUNCER.store(pid, Ordering::SeqCst);
    let handler = on_signal as extern "C" fn(libc::c_int);
    // SAFETY: the handler only uses atomics and async-signal-safe calls.
    unsafe {
        libc::signal(libc::SIGINT, handler as libc::sighandler_t);
        libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
    }
}

/// Everything a client needs; the same in every client.
#[derive(Clone)]
struct Campaign {
    out: PathBuf,
    seed: u64,
    deadline: Option<Instant>,
    runs: Option<u64>,
    exec: ExecOptions,
    mutate: MutateOptions,
    seeds: Vec<PathBuf>,
    sync_from: Vec<PathBuf>,
    sync_every: Duration,
    /// Value-only runs per corpus entry (see [`ValueMutator`]); 0 for none.
    value_burst: usize,
    scheduler: SchedulerKind,
    /// Per backend, how to start its worker and the modes it runs.
    lanes: Vec<(WorkerCommand, Vec<harness_py::Mode>)>,
    env: PythonEnv,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The repository's seed corpus, when semfuzz runs from its checkout.
fn default_seeds() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../seeds");
    if dir.is_dir() { vec![dir] } else { vec![] }
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).map_or(true, |mut it| it.next().is_none())
}

pub fn run(args: &FuzzArgs) -> Result<Outcome, Failure> {
    let share = |name: &str, v: f64| {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(Failure::usage(format!(
                "--{name} {v}: expected a share between 0 and 1"
            )))
        }
    };
    share("invalid-share", args.invalid_share)?;
    share("fresh-share", args.fresh_share)?;
    share("second-mode-share", args.second_mode_share)?;
    if args.jobs == 0 {
        return Err(Failure::usage("--jobs 0: expected at least one client"));
    }
    share("second-backend-share", args.second_backend_share)?;
    let backends = args.backends();
    if backends.is_empty() {
        return Err(Failure::usage("--backends needs at least one backend"));
    }
    if args.backends.is_none() {
        crate::commands::check_modes(args.python.backend, &args.modes())?;
    }
    if let Some(b) = backends.iter().find(|b| args.modes_of(**b).is_empty()) {
        return Err(Failure::usage(format!(
            "--modes names none of the {b} backend's modes ({})",
            harness_py::Mode::of(*b)
                .iter()
                .map(|m| m.name())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if args.dtype.is_empty() {
        return Err(Failure::usage("--dtype needs at least one value"));
    }
    if let Some(d) = args
        .dtype
        .iter()
        .find(|d| !matches!(d, DType::Float32 | DType::Float64))
    {
        return Err(Failure::usage(format!(
            "--dtype {}: expected float32 or float64",
            d.name()
        )));
    }
    let out = &args.out;
    if out.exists() && !is_empty_dir(out) && !args.resume {
        return Err(Failure::usage(format!(
            "{} already holds a campaign: pass --resume to continue it, or choose another --out",
            out.display()
        )));
    }
    if args.resume && !out.join("corpus").is_dir() {
        return Err(Failure::usage(format!(
            "--resume: {} holds no campaign to continue (no corpus/ folder)",
            out.display()
        )));
    }
    let mut sync_from = Vec::new();
    for d in &args.sync_from {
        let corpus = d.join("corpus");
        let dir = if corpus.is_dir() { corpus } else { d.clone() };
        if !dir.is_dir() {
            return Err(Failure::usage(format!(
                "--sync-from {}: no such folder",
                d.display()
            )));
        }
        sync_from.push(dir);
    }
    let seeds = if args.seeds.is_empty() {
        default_seeds()
    } else {
        args.seeds.clone()
    };
    if let Some(d) = seeds.iter().find(|d| !d.is_dir()) {
        return Err(Failure::usage(format!(
            "--seeds {}: no such folder",
            d.display()
        )));
    }
    for dir in ["corpus", "findings", ".running"] {
        std::fs::create_dir_all(out.join(dir)).map_err(|e| {
            Failure::failed(format!("cannot create {}: {e}", out.join(dir).display()))
        })?;
    }

    let env = crate::commands::python_env(&args.python)?;
    let suppressions = crate::commands::suppressions(&args.suppressions)?;
    // The first backend's reference is the one generation and repair use.
    let command = crate::commands::worker_command(&crate::cli::PythonArgs {
        backend: backends[0],
        ..args.python.clone()
    })?;
    let target = crate::commands::target_info(&command, &env)?;
    let lanes: Vec<(WorkerCommand, Vec<harness_py::Mode>)> = backends
        .iter()
        .map(|&b| {
            let mut c = command.clone();
            c.backend = b;
            (c, args.modes_of(b))
        })
        .collect();
    // Each backend other than the first must be installed: asked now, not in a client.
    let mut lane_record =
        vec![json!({"backend": backends[0], "modes": lanes[0].1, "target": target.id()})];
    let mut lane_targets = vec![crate::commands::target(&target.versions)];
    for (c, modes) in &lanes[1..] {
        let t = crate::commands::target_info(c, &env)?;
        lane_record.push(json!({"backend": c.backend, "modes": modes, "target": t.id()}));
        lane_targets.push(crate::commands::target(&t.versions));
    }
    if args.resume {
        check_same_target(out, &target.id())?;
    }
    crate::commands::restrict_generation(&target);
    if !args.keep_known_bugs {
        crate::commands::avoid_refusals(suppressions.clone(), lane_targets.clone());
    }
    write_target(out, &target).map_err(|e| {
        Failure::failed(format!(
            "cannot write {}: {e}",
            out.join("target.json").display()
        ))
    })?;

    let seed = args.seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    let limit = match (args.hours, args.minutes) {
        (Some(h), _) => Some(Duration::from_secs_f64(h.max(0.0) * 3600.0)),
        (None, Some(m)) => Some(Duration::from_secs_f64(m.max(0.0) * 60.0)),
        (None, None) => None,
    };
    let mut run = RunOptions::default();
    run.limits.cancel = Some(&FORCE);
    run.limits.timeout = Duration::from_secs_f64(args.timeout);
    run.limits.memory_mib = args.memory_mib;
    run.python_coverage = args.python_coverage;
    let campaign = Campaign {
        out: out.clone(),
        seed,
        deadline: limit.map(|l| Instant::now() + l),
        runs: args.runs,
        exec: ExecOptions {
            second_mode_share: args.second_mode_share,
            second_backend_share: args.second_backend_share,
            run,
            stop: Some(&STOP),
            suppressions: suppressions.clone(),
        },
        mutate: MutateOptions {
            dtypes: args.dtype.clone(),
            invalid_share: args.invalid_share,
            fresh_share: args.fresh_share,
            layers: args.layers,
            repair: RepairOptions {
                avoid: if args.keep_known_bugs {
                    TriggerSet::none()
                } else {
                    suppressions.triggers_for(&lane_targets)
                },
                ..RepairOptions::default()
            },
            values: ValueOptions::default(),
        },
        seeds,
        sync_from,
        sync_every: Duration::from_secs_f64(args.sync_every.max(0.0)),
        value_burst: args.value_burst,
        scheduler: args.scheduler,
        lanes,
        env,
    };
    let installed = installed(&campaign.env);
    record_run(out, args, seed, &target.id(), &installed, &lane_record).map_err(|e| {
        Failure::failed(format!(
            "cannot write {}: {e}",
            out.join("campaign.json").display()
        ))
    })?;

    let base = if args.resume {
        Totals::read(out)
    } else {
        Totals::default()
    };
    println!(
        "[semfuzz] fuzzing {} into {} (seed {seed}, {} job{}, {}){}",
        campaign.env.python.display(),
        out.display(),
        args.jobs,
        if args.jobs == 1 { "" } else { "s" },
        match (limit, args.runs) {
            (Some(l), _) => format!("for {:.0} s", l.as_secs_f64()),
            (None, Some(r)) => format!("{r} executions per client"),
            (None, None) => "until stopped".to_owned(),
        },
        if args.resume {
            format!(", resuming after {} executions", base.execs)
        } else {
            String::new()
        }
    );
    let monitor = StatusMonitor::new(out, base, limit, !args.no_status);
    let main_pid = std::process::id();
    install_stop_handler(args.jobs > 1, args.jobs == 1);
    let result = if args.jobs == 1 {
        run_client(&campaign, 0, None, SimpleEventManager::new(monitor))
    } else {
        launch(&campaign, args, monitor)
    };
    if std::process::id() != main_pid {
        // A forked client, respawner or broker of the launcher: its work is done.
        std::process::exit(0);
    }
    match result {
        Ok(()) | Err(Error::ShuttingDown) => {}
        Err(e) => return Err(Failure::failed(format!("the fuzzer failed: {e}"))),
    }
    // Under the launcher, LibAFL's own signal handling stops the clients, so without a limit
    // only a signal ends a campaign.
    let why = if STOP.load(Ordering::SeqCst) || (limit.is_none() && args.runs.is_none()) {
        "interrupted"
    } else if campaign.deadline.is_some_and(|d| Instant::now() >= d) {
        "time is up"
    } else if args.runs.is_some() {
        "runs done"
    } else {
        "interrupted"
    };
    let entries: Vec<&str> = campaign
        .exec
        .suppressions
        .entries()
        .iter()
        .map(|e| &*e.id)
        .collect();
    print!("{}", monitor::summary(out, why, &entries));
    Ok(Outcome::Clean)
}

/// The target of the campaign's last run in `<out>/campaign.json` (none before targets were
/// recorded).
fn recorded_target(out: &Path) -> Option<TargetId> {
    let campaign: serde_json::Value = findings::read_record(&out.join("campaign.json"))
        .and_then(|t| serde_json::from_str(&t).ok())?;
    let last = campaign["runs"].as_array()?.last()?;
    serde_json::from_value(last["target"].clone()).ok()
}

/// A campaign continues on the target it ran on: its corpus, findings and counters are
/// about that target.
fn check_same_target(out: &Path, now: &TargetId) -> Result<(), Failure> {
    match recorded_target(out) {
        Some(was) if was != *now => Err(Failure::usage(format!(
            "--resume: {} is a campaign on {was}; this environment is {now}. Continue it with \
             its own environment, or start a campaign with another --out",
            out.display()
        ))),
        _ => Ok(()),
    }
}

/// `<out>/target.json`: what the target offers (its classes and their arguments).
fn write_target(out: &Path, target: &TargetInfo) -> std::io::Result<()> {
    std::fs::write(
        out.join("target.json"),
        serde_json::to_string_pretty(target).expect("JSON values serialize"),
    )
}

/// What an environment set up by `make setup KERAS=.../TARGET=...` installed (its
/// `semfuzz-freeze.txt`, beside its `bin/`): the pinned environment's is the lock.
fn installed(env: &PythonEnv) -> Vec<String> {
    let Some(prefix) = env.python.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    findings::read_record(&prefix.join("semfuzz-freeze.txt"))
        .map(|t| t.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Appends this run's settings to `<out>/campaign.json`.
fn record_run(
    out: &Path,
    args: &FuzzArgs,
    seed: u64,
    target: &TargetId,
    installed: &[String],
    backends: &[serde_json::Value],
) -> std::io::Result<()> {
    let path = out.join("campaign.json");
    let mut campaign: serde_json::Value = findings::read_record(&path)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| json!({"runs": []}));
    if let Some(runs) = campaign["runs"].as_array_mut() {
        runs.push(json!({
            "started": now_secs(), "seed": seed, "jobs": args.jobs, "resume": args.resume,
            "modes": args.modes().iter().map(|m| m.name()).collect::<Vec<_>>(),
            "dtypes": args.dtype.iter().map(|d| d.name()).collect::<Vec<_>>(),
            "invalid_share": args.invalid_share, "fresh_share": args.fresh_share, "second_mode_share": args.second_mode_share,
            "layers": args.layers, "keep_known_bugs": args.keep_known_bugs,
            "value_burst": args.value_burst, "scheduler": args.scheduler,
            "semfuzz": env!("CARGO_PKG_VERSION"), "target": target, "installed": installed,
            "backends": backends, "second_backend_share": args.second_backend_share,
        }));
    }
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&campaign).expect("JSON values serialize"),
    )
}

/// One client per job through LibAFL's launcher: it forks the clients and runs the broker
/// in this process.
fn launch(campaign: &Campaign, args: &FuzzArgs, monitor: StatusMonitor) -> Result<(), Error> {
    let port = match args.broker_port {
        Some(p) => p,
        None => TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| Error::os_error(e, "cannot find a free port for the broker"))?,
    };
    // The CPUs this process may run on (its affinity mask: a container's cpuset, `taskset`),
    // not the first `jobs` CPU numbers: a client bound to a CPU outside the mask never starts.
    let allowed: Vec<usize> = libafl_bolts::core_affinity::get_core_ids()
        .map(|ids| ids.iter().map(|c| c.0).collect())
        .unwrap_or_default();
    let allowed = if allowed.is_empty() { vec![0] } else { allowed };
    let ncpu = allowed.len();
    let cores = Cores::from(allowed[..args.jobs.min(ncpu)].to_vec());
    let overcommit = args.jobs.div_ceil(ncpu).max(1);
    if args.jobs > ncpu && !args.jobs.is_multiple_of(ncpu) {
        tracing::warn!(
            "--jobs {} on {ncpu} cores: running {} clients ({overcommit} per core)",
            args.jobs,
            ncpu * overcommit
        );
    }
    let shmem = StdShMemProvider::new()?;
    Launcher::builder()
        .shmem_provider(shmem)
        .configuration(EventConfig::from_name("semfuzz"))
        .monitor(monitor)
        .run_client(|restored: Option<State>, mgr, desc: ClientDescription| {
            // The launcher numbers its clients from 1.
            install_stop_handler(false, desc.id() == 1);
            run_client(campaign, desc.id().saturating_sub(1), restored, mgr)
        })
        .cores(&cores)
        .overcommit(overcommit)
        .broker_port(port)
        .build()
        .launch()
}

/// Logs and records in `internal-errors` each case file of a resumed corpus that does not
/// read back (LibAFL then skips it): a damaged file costs its entry, not the campaign.
fn record_unreadable(corpus: &Path, internal_errors: &Path) {
    for path in case_files(corpus) {
        sync::read_or_record(&path, internal_errors, "a resumed corpus entry");
    }
}

/// The case files in a folder, sorted (so a campaign is reproducible).
fn case_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| it.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.to_string_lossy().ends_with(".case.json"));
    files.sort();
    files
}

/// What one client does, under either event manager.
fn run_client<EM>(
    c: &Campaign,
    client: usize,
    restored: Option<State>,
    mut mgr: EM,
) -> Result<(), Error>
where
    EM: EventFirer<CaseInput, State>
        + EventReceiver<CaseInput, State>
        + ProgressReporter<State>
        + SendExiting,
{
    let corpus_dir = c.out.join("corpus");
    let mut lanes = Vec::new();
    for (command, modes) in &c.lanes {
        let mut harness = Harness::new(command.clone(), c.env.clone());
        harness.keep_spare = true;
        let framework = judge::verdict::Framework::of(command.backend);
        let v = harness
            .versions()
            .map_err(|e| Error::unknown(format!("cannot start the {framework} worker: {e}")))?;
        crate::commands::evaluate_for_release(&v);
        let versions = json!({"python": v.python, "tensorflow": v.tensorflow, "keras": v.keras,
                              "numpy": v.numpy, "backend": v.backend, "onednn": v.onednn,
                              "jax": v.jax, "torch": v.torch});
        lanes.push(Lane {
            judge: judge::Judge::new(c.exec.suppressions.clone(), crate::commands::target(&v)),
            harness,
            backend: command.backend,
            modes: modes.clone(),
            versions,
        });
    }

    let map_observer = OwnedMapObserver::new("features", vec![0u8; MAP_SIZE]).track_indices();
    let verdict_observer = VerdictObserver::default();
    let mut feedback = MaxMapFeedback::new(&map_observer);
    let store = FindingsStore::new(&c.out)
        .map_err(|e| Error::os_error(e, "cannot create the findings folder"))?;
    let mut objective = FindingFeedback::new(&verdict_observer, store, true);
    let resumed = restored.is_some();
    let mut state = match restored {
        Some(s) => s,
        None => StdState::new(
            StdRand::with_seed(c.seed ^ (client as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            CachedOnDiskCorpus::no_meta(&corpus_dir, CORPUS_CACHE)?,
            InMemoryCorpus::new(),
            &mut feedback,
            &mut objective,
        )?,
    };
    let scheduler = CaseScheduler::new(c.scheduler, &map_observer);
    let mut fuzzer = StdFuzzer::new(scheduler, feedback, objective);
    let mut executor = CaseExecutor::new(
        lanes,
        tuple_list!(map_observer, verdict_observer),
        c.exec.clone(),
    );
    executor.internal_errors = Some(c.out.join("internal-errors"));
    executor.known_counts = Some(findings::KnownCounts::new(&c.out));
    executor.journal = Some(
        c.out
            .join(".running")
            .join(format!("client-{client}.case.json")),
    );
    let sync_dirs = if client == 0 {
        c.sync_from.clone()
    } else {
        Vec::new()
    };
    let burst = NonZeroUsize::new(c.value_burst).map(|n| {
        tuple_list!(StdMutationalStage::with_max_iterations(
            ValueMutator::new(c.mutate.clone()),
            n
        ))
    });
    let mut stages = tuple_list!(
        StdMutationalStage::with_max_iterations(CaseMutator::new(c.mutate.clone()), nonzero!(8)),
        OptionalStage::new(burst),
        sync::SyncStage::new(sync_dirs, c.sync_every, c.out.join("internal-errors")),
    );

    if !resumed && state.corpus().count() == 0 {
        if client == 0 {
            record_unreadable(&corpus_dir, &c.out.join("internal-errors"));
        }
        let initial = if case_files(&corpus_dir).is_empty() {
            add_initial(c, client, &mut state, &mut fuzzer, &mut executor, &mut mgr)
        } else {
            state
                .load_initial_inputs_forced(
                    &mut fuzzer,
                    &mut executor,
                    &mut mgr,
                    std::slice::from_ref(&corpus_dir),
                )
                .inspect(|()| {
                    tracing::info!(
                        client,
                        "loaded {} test cases from {}",
                        state.corpus().count(),
                        corpus_dir.display()
                    );
                })
        };
        match initial {
            // Stopped on the way: the loop below stops at once, after the usual bookkeeping.
            Ok(()) | Err(Error::ShuttingDown) => {}
            Err(e) => return Err(e),
        }
    }

    let stop_reason = loop {
        if STOP.load(Ordering::SeqCst) {
            break "interrupted";
        }
        if c.deadline.is_some_and(|d| Instant::now() >= d) {
            break "time is up";
        }
        if c.runs.is_some_and(|r| *state.executions() >= r) {
            break "runs done";
        }
        mgr.maybe_report_progress(&mut state, Duration::from_secs(1))?;
        match fuzzer.fuzz_one(&mut stages, &mut executor, &mut state, &mut mgr) {
            Ok(_) => {}
            // A signal stopped the executor, or the broker went away (it got the Ctrl-C
            // first): stop like everyone else.
            Err(Error::ShuttingDown) if STOP.load(Ordering::SeqCst) => break "interrupted",
            Err(Error::ShuttingDown) => break "the broker stopped",
            Err(e) => return Err(e),
        }
    };
    tracing::info!(client, "stopping: {stop_reason}");
    executor.report(&mut mgr, &mut state, true)?;
    fuzzer
        .objective_mut()
        .store
        .flush()
        .map_err(|e| Error::os_error(e, "cannot update the findings' counts"))?;
    mgr.report_progress(&mut state)?;
    mgr.send_exiting()?;
    Ok(())
}

/// The seed corpus (first client only) and a few fresh models.
fn add_initial<EM, Z>(
    c: &Campaign,
    client: usize,
    state: &mut State,
    fuzzer: &mut Z,
    executor: &mut CaseExecutor,
    mgr: &mut EM,
) -> Result<(), Error>
where
    Z: libafl::Evaluator<CaseExecutor, EM, CaseInput, State>,
{
    let mut inputs = Vec::new();
    if client == 0 {
        for dir in &c.seeds {
            for path in case_files(dir) {
                match CaseInput::from_file(&path) {
                    Ok(i) => inputs.push(i),
                    Err(e) => tracing::warn!("seed {} skipped: {e}", path.display()),
                }
            }
        }
    }
    let mut rng = generators::rng(c.seed ^ (client as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    // Each model's classes drawn from those the models before it hold least.
    let mut balance = generators::ClassBalance::default();
    for i in 0..INITIAL_MODELS {
        let dtype = c.mutate.dtypes[i % c.mutate.dtypes.len()];
        if let Some(case) = c.mutate.fresh(dtype, &balance, &mut rng) {
            balance.record(&case);
            inputs.push(CaseInput::from_case(&case));
        }
    }
    for input in inputs {
        fuzzer.add_input(state, executor, mgr, input)?;
    }
    Ok(())
}

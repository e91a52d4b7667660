//! `semfuzz fuzz-self`: semfuzz's own readers fuzzed in-process (LibAFL's mutations), one
//! child process per reader under an address-space limit. A panic is saved with its input
//! and the child goes on; a child that dies (an abort, memory past the limit) or hangs has
//! the input it was running saved from its journal, and a new child takes over. Findings go
//! to `<out>/<target>/findings/` as `<kind>-<hash>.bin` (the input) and `.txt` (what
//! happened); `--inputs DIR` runs the files of a folder once each (regression inputs).

mod engine;
pub mod targets;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli::FuzzSelfArgs;
use crate::commands::MemoryLimit as _;
use crate::exit::{Failure, Outcome};
use crate::fuzz::features::fnv1a64;
use targets::Target;

/// The exit code of a child whose watchdog saw an execution run past the hang limit.
const HANG_EXIT: i32 = 86;

/// The most times one target's child is started again in one run.
const MAX_RESTARTS: u32 = 64;

/// What one target's run came to.
struct TargetRun {
    target: Target,
    executions: u64,
    behaviours: usize,
    restarts: u32,
    findings: Vec<PathBuf>,
}

pub fn run(args: &FuzzSelfArgs) -> Result<Outcome, Failure> {
    if args.child {
        return child(args);
    }
    let targets: Vec<Target> = if args.target.is_empty() {
        Target::ALL.to_vec()
    } else {
        args.target.clone()
    };
    let share = Duration::from_secs_f64(args.minutes.max(0.0) * 60.0 / targets.len() as f64);
    let mut runs = Vec::new();
    for &t in &targets {
        runs.push(run_target(args, t, share)?);
    }
    let total: u64 = runs.iter().map(|r| r.executions).sum();
    let mut found = 0;
    println!(
        "{:<14} {:>11} {:>11} {:>9} {:>9}",
        "target", "executions", "behaviours", "restarts", "findings"
    );
    for r in &runs {
        println!(
            "{:<14} {:>11} {:>11} {:>9} {:>9}",
            r.target.name(),
            r.executions,
            r.behaviours,
            r.restarts,
            r.findings.len()
        );
        found += r.findings.len();
    }
    println!("{total} executions; findings in {}", args.out.display());
    for r in &runs {
        for f in &r.findings {
            println!("  {}", f.display());
        }
    }
    let summary = json!({
        "targets": runs.iter().map(|r| json!({
            "target": r.target.name(), "executions": r.executions, "behaviours": r.behaviours,
            "restarts": r.restarts,
            "findings": r.findings.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    let _ = std::fs::write(
        args.out.join("summary.json"),
        serde_json::to_string_pretty(&summary).expect("JSON values serialize") + "\n",
    );
    Ok(if found > 0 {
        Outcome::Found
    } else {
        Outcome::Clean
    })
}

fn findings_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| it.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "bin"));
    v.sort();
    v
}

/// Runs one target's children until its budget (runs or time) is spent.
fn run_target(args: &FuzzSelfArgs, target: Target, share: Duration) -> Result<TargetRun, Failure> {
    let dir = args.out.join(target.name());
    let findings = engine::findings_of(&dir);
    std::fs::create_dir_all(&findings)
        .map_err(|e| Failure::failed(format!("{}: {e}", findings.display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find the semfuzz executable: {e}")))?;
    let journal = engine::journal_of(&dir);
    let counts = dir.join(".counts.json");
    let deadline = Instant::now() + share;
    let mut run = TargetRun {
        target,
        executions: 0,
        behaviours: 0,
        restarts: 0,
        findings: Vec::new(),
    };
    loop {
        let _ = std::fs::remove_file(&counts);
        let _ = std::fs::remove_file(&journal);
        let mut cmd = Command::new(&exe);
        cmd.args(["fuzz-self", "--child", "--target", target.name()])
            .arg("--seed")
            .arg((args.seed + u64::from(run.restarts) * 7919).to_string())
            .arg("--out")
            .arg(&args.out)
            .arg("--hang-secs")
            .arg(args.hang_secs.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .memory_limit(args.memory_mib << 20);
        if let Some(inputs) = &args.inputs {
            cmd.arg("--inputs").arg(inputs);
        }
        let left_runs = args.runs.map(|r| r.saturating_sub(run.executions));
        match left_runs {
            Some(r) => {
                cmd.arg("--runs").arg(r.to_string());
            }
            None => {
                let left = deadline.saturating_duration_since(Instant::now());
                cmd.arg("--minutes")
                    .arg((left.as_secs_f64() / 60.0).to_string());
            }
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| Failure::failed(format!("cannot start a fuzz-self child: {e}")))?;
        let stderr = child.stderr.take();
        let tail = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut e) = stderr {
                let _ = e.read_to_string(&mut s);
            }
            s
        });
        let status = child
            .wait()
            .map_err(|e| Failure::failed(format!("a fuzz-self child: {e}")))?;
        let err = tail.join().unwrap_or_default();
        let c: Value = std::fs::read(&counts)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        run.executions += c["executions"].as_u64().unwrap_or(0);
        run.behaviours = run
            .behaviours
            .max(c["behaviours"].as_u64().unwrap_or(0) as usize);
        use std::os::unix::process::ExitStatusExt as _;
        let ended = match (status.code(), status.signal()) {
            (Some(0), _) => true,
            (Some(HANG_EXIT), _) => false,
            (Some(2), _) => {
                return Err(Failure::usage(format!(
                    "fuzz-self {}: {}",
                    target.name(),
                    err.trim()
                )));
            }
            (code, signal) => {
                let bytes = std::fs::read(&journal).unwrap_or_default();
                let how = match signal {
                    Some(s) => format!("the process died of {}", judge::outcome::signal_name(s)),
                    None => format!("the process exited with {}", code.unwrap_or(-1)),
                };
                let last = err.trim().lines().last().unwrap_or("").to_owned();
                save_finding(
                    &findings,
                    "crash",
                    &bytes,
                    &format!(
                        "{how} (address space limited to {} MiB)\n{last}",
                        args.memory_mib
                    ),
                );
                false
            }
        };
        let spent = match args.runs {
            Some(r) => run.executions >= r,
            None => Instant::now() >= deadline,
        };
        if ended || spent || args.inputs.is_some() || run.restarts >= MAX_RESTARTS {
            break;
        }
        run.restarts += 1;
    }
    run.findings = findings_in(&findings);
    Ok(run)
}

/// Saves an input and what it did as `<kind>-<hash>.bin` and `.txt` in `dir`.
fn save_finding(dir: &Path, kind: &str, bytes: &[u8], what: &str) {
    let stem = format!("{kind}-{:016x}", fnv1a64(bytes));
    let _ = std::fs::create_dir_all(dir);
    let _ = std::fs::write(dir.join(format!("{stem}.bin")), bytes);
    let _ = std::fs::write(dir.join(format!("{stem}.txt")), format!("{what}\n"));
}

/// The repository's root, where the seed fixtures are.
fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// One child: runs one target and writes its counts.
fn child(args: &FuzzSelfArgs) -> Result<Outcome, Failure> {
    let &[target] = args.target.as_slice() else {
        return Err(Failure::usage("a fuzz-self child runs one --target"));
    };
    let dir = args.out.join(target.name());
    let findings = engine::findings_of(&dir);
    let journal = engine::journal_of(&dir);
    let seeds = match &args.inputs {
        Some(d) => {
            let files = findings_in(d).into_iter().chain(
                std::fs::read_dir(d)
                    .map_err(|e| Failure::usage(format!("--inputs {}: {e}", d.display())))?
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_none_or(|e| e != "bin" && e != "txt")),
            );
            files.filter_map(|p| std::fs::read(p).ok()).collect()
        }
        None => targets::seeds(target, &repository_root(), &dir.join(".seeds")),
    };
    let progress = Arc::new(AtomicU64::new(0));
    engine::quiet_panics();
    engine::watchdog(
        progress.clone(),
        Duration::from_secs_f64(args.hang_secs.max(0.1)),
        journal.clone(),
        findings.clone(),
        dir.join(".counts.json"),
    );
    let runs = if args.inputs.is_some() {
        Some(0)
    } else {
        args.runs
    };
    let deadline = (runs.is_none())
        .then(|| Instant::now() + Duration::from_secs_f64(args.minutes.max(0.0) * 60.0));
    let stop = engine::Stop { runs, deadline };
    let done = engine::run_child(target, args.seed, stop, seeds, &dir, &progress)
        .map_err(|e| Failure::failed(format!("fuzz-self {}: {e}", target.name())))?;
    let counts = json!({"executions": done.executions, "behaviours": done.behaviours, "panics": done.panics});
    std::fs::write(dir.join(".counts.json"), counts.to_string())
        .map_err(|e| Failure::failed(format!("{}: {e}", dir.display())))?;
    Ok(Outcome::Clean)
}

//! Benchmarks of the fuzz loop. Not a test: run with `make bench` (or
//! `cargo bench -p fuzzer --bench fuzz`). Results are appended, as each campaign ends, to
//! `target/bench-results/fuzz.txt`.
//!
//! - Executions per second on one core (eager, float64, ~10-layer models, no invalid cases,
//!   no second mode), side by side with what TensorFlow alone sustains on the same case
//!   stream with the same model reuse: the worker reports the seconds each case spent inside
//!   Keras/TF, so that ceiling is executions / TF seconds, measured in the same run, and the
//!   ratio of the two is the share of wall time spent inside TF.
//! - Scaling from 1 to 2 jobs: the same campaign with `--jobs 2`, in executions per second
//!   and in TF's work per wall second (the two campaigns' streams differ in how much work an
//!   execution is), next to the machine's own
//!   ceiling for this work: one `semfuzz run` of a fixed stream of generated models alone,
//!   against two of them at once (TensorFlow alone, no fuzzer). Where the cores share a
//!   physical core or memory bandwidth, no fuzzer can scale past that.
//! - Both over the whole campaign and in its steady state: from the first `plot_data` line
//!   with an execution to the last one, so the start (importing TensorFlow, the first
//!   corpus) is left out, as it is from a night-long campaign.
//!
//! Each campaign lasts SEMFUZZ_BENCH_FUZZ_MINUTES (default 3) minutes.

mod common;
use common::stat;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Campaign {
    execs: f64,
    seconds: f64,
    tf_seconds: f64,
    worker_starts: f64,
    steady: Steady,
    /// Where the wall time went, from `fuzzer_stats`.
    parts: Parts,
}

/// The campaign's wall time split: inside TF, the worker outside TF, the pipe and the
/// client's request and answer, the reference's check, the judge, and outside executions
/// (start, mutation, repair, LibAFL).
struct Parts {
    seconds: f64,
    tf: f64,
    handle: f64,
    worker: f64,
    oracle: f64,
    judge: f64,
    exec: f64,
}

impl Parts {
    fn of(out: &Path) -> Parts {
        Parts {
            seconds: stat(out, "run_time"),
            tf: stat(out, "tf_seconds"),
            handle: stat(out, "worker_handle_seconds"),
            worker: stat(out, "worker_seconds"),
            oracle: stat(out, "oracle_seconds"),
            judge: stat(out, "judge_seconds"),
            exec: stat(out, "exec_seconds"),
        }
    }

    fn describe(&self, jobs: f64) -> String {
        let wall = (self.seconds * jobs).max(1e-9);
        let share = |s: f64| 100.0 * s / wall;
        format!(
            "wall time per client: inside TF {:.1}%, worker outside TF {:.1}%, pipe and client {:.1}%, reference check {:.1}%, judge {:.1}%, outside executions (start, mutation, repair) {:.1}%",
            share(self.tf),
            share(self.handle - self.tf),
            share(self.worker - self.handle),
            share(self.oracle),
            share(self.judge),
            share(wall - self.exec)
        )
    }
}

/// The campaign from its first `plot_data` line with an execution to its last line.
#[derive(Default)]
struct Steady {
    execs: f64,
    seconds: f64,
    tf_seconds: f64,
}

impl Steady {
    fn of(out: &Path) -> Steady {
        let rows: Vec<Vec<f64>> = std::fs::read_to_string(out.join("plot_data"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(',').filter_map(|v| v.trim().parse().ok()).collect())
            .filter(|r: &Vec<f64>| r.len() >= 10 && r[2] > 0.0)
            .collect();
        match (rows.first(), rows.last()) {
            (Some(a), Some(b)) => Steady {
                execs: b[2] - a[2],
                seconds: b[1] - a[1],
                tf_seconds: b[8] - a[8],
            },
            _ => Steady::default(),
        }
    }

    fn describe(&self, jobs: f64) -> String {
        format!(
            "steady state ({:.0} s from the first execution): {:.2} exec/s, share of wall time inside TF per client {:.1}%",
            self.seconds,
            self.execs / self.seconds.max(1e-9),
            100.0 * self.tf_seconds / (jobs * self.seconds).max(1e-9)
        )
    }
}

fn campaign(jobs: usize, minutes: f64, work: &Path) -> Campaign {
    let out = work.join(format!("jobs{jobs}"));
    let no_seeds = work.join("no-seeds");
    std::fs::create_dir_all(&no_seeds).expect("temp dir");
    let status = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(["fuzz", "--no-status", "--seed", "2026", "--modes", "eager"])
        .args([
            "--dtype",
            "float64",
            "--invalid-share",
            "0",
            "--layers",
            "10",
        ])
        .args([
            "--jobs",
            &jobs.to_string(),
            "--minutes",
            &minutes.to_string(),
        ])
        .arg("--out")
        .arg(&out)
        .arg("--seeds")
        .arg(&no_seeds)
        .env_remove("SEMFUZZ_WORKER_PLANT")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("semfuzz runs");
    assert!(status.success(), "the campaign failed");
    Campaign {
        execs: stat(&out, "execs_done"),
        seconds: stat(&out, "run_time"),
        tf_seconds: stat(&out, "tf_seconds"),
        worker_starts: stat(&out, "worker_starts"),
        steady: Steady::of(&out),
        parts: Parts::of(&out),
    }
}

/// Seconds `semfuzz run` takes on the cases in `dir`, for `copies` processes started at
/// once (the slowest of them).
fn run_stream(dir: &Path, copies: usize) -> f64 {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("generated cases")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    cases.sort();
    let start = std::time::Instant::now();
    let children: Vec<_> = (0..copies)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_semfuzz"))
                .args(["run", "--json", "--modes", "eager", "--dtype", "float64"])
                .args(&cases)
                .env_remove("SEMFUZZ_WORKER_PLANT")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("semfuzz runs")
        })
        .collect();
    for mut child in children {
        child.wait().expect("semfuzz runs");
    }
    start.elapsed().as_secs_f64()
}

/// The machine's scaling ceiling for TensorFlow's work: `count` generated ~10-layer models
/// run by one process, then by two at once; (one, two, ceiling).
fn machine_ceiling(work: &Path, count: usize) -> (f64, f64, f64) {
    let dir = work.join("ceiling");
    let status = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(["gen", "--seed", "2026", "--layers", "10", "--count"])
        .arg(count.to_string())
        .arg("--out")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("semfuzz gen runs");
    assert!(status.success(), "semfuzz gen failed");
    // Once first, unmeasured: the first import of TensorFlow reads its libraries from disk.
    run_stream(&dir, 1);
    let one = run_stream(&dir, 1);
    let two = run_stream(&dir, 2);
    (one, two, 2.0 * one / two)
}

fn main() {
    let minutes: f64 = std::env::var("SEMFUZZ_BENCH_FUZZ_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(3.0);
    let results = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    std::fs::create_dir_all(&results).expect("results dir");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(results.join("fuzz.txt"))
        .expect("results file");
    let mut say = |line: String| {
        println!("{line}");
        writeln!(f, "{line}").expect("write");
    };
    let work = tempfile::tempdir().expect("temp dir");
    say(format!(
        "# fuzz bench ({minutes} min per campaign; eager, float64, 10 layers, no invalid cases)"
    ));
    let count: usize = std::env::var("SEMFUZZ_BENCH_CEILING_CASES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(400);
    let (alone, together, ceiling_scaling) = machine_ceiling(work.path(), count);
    say(format!(
        "machine ceiling: {count} generated models in `semfuzz run`, one process {alone:.1} s, two at once {together:.1} s: TF alone scales {ceiling_scaling:.2}x from 1 to 2 processes"
    ));
    let one = campaign(1, minutes, work.path());
    let rate1 = one.execs / one.seconds;
    let ceiling = one.execs / one.tf_seconds.max(1e-9);
    say(format!(
        "1 job: {:.0} executions in {:.0} s = {rate1:.2} exec/s; TF alone on the same stream: {ceiling:.2} cases/s; fuzzer / TF-alone = {:.1}% (share of wall time inside TF); worker starts {:.0}",
        one.execs,
        one.seconds,
        100.0 * rate1 / ceiling,
        one.worker_starts
    ));
    say(format!("1 job, {}", one.steady.describe(1.0)));
    say(format!("1 job, {}", one.parts.describe(1.0)));
    let two = campaign(2, minutes, work.path());
    let rate2 = two.execs / two.seconds;
    say(format!(
        "2 jobs: {:.0} executions in {:.0} s = {rate2:.2} exec/s; scaling 1 -> 2 jobs: {:.2}x; share of wall time inside TF per client {:.1}%",
        two.execs,
        two.seconds,
        rate2 / rate1,
        100.0 * two.tf_seconds / (2.0 * two.seconds)
    ));
    let steady1 = one.steady.execs / one.steady.seconds.max(1e-9);
    let steady2 = two.steady.execs / two.steady.seconds.max(1e-9);
    say(format!(
        "2 jobs, {}; scaling 1 -> 2 jobs in the steady state: {:.2}x ({:.0}% of the machine's ceiling of {ceiling_scaling:.2}x)",
        two.steady.describe(2.0),
        steady2 / steady1.max(1e-9),
        100.0 * steady2 / steady1.max(1e-9) / ceiling_scaling
    ));
    say(format!("2 jobs, {}", two.parts.describe(2.0)));
    // The two campaigns run different case streams (the clients explore apart), whose
    // executions need different amounts of TF's work: exec/s mixes the fuzzer's scaling with
    // that. TF seconds per wall second does not.
    let per_exec = |c: &Campaign| c.tf_seconds / c.execs.max(1.0);
    say(format!(
        "TF seconds per execution: 1 job {:.4}, 2 jobs {:.4} ({:+.0}%); TF work per wall second, 2 jobs vs 1 job: {:.2}x",
        per_exec(&one),
        per_exec(&two),
        100.0 * (per_exec(&two) / per_exec(&one).max(1e-12) - 1.0),
        (two.tf_seconds / two.seconds.max(1e-9))
            / (one.tf_seconds / one.seconds.max(1e-9)).max(1e-9)
    ));
}

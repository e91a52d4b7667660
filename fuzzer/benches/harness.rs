//! Benchmarks of the TensorFlow harness and of the reference oracle, measured side by side in
//! one run (the machines are shared and noisy, so ratios are what count). Not a test: run with
//! `make bench` (or `cargo bench -p fuzzer --bench harness`). Results are appended, as they are
//! measured, to `target/bench-results/harness.txt`.
//!
//! - harness overhead: the client's wall time per case minus the time the worker spent in
//!   Keras/TF, as a share of the latter (target <= 5%), on a stream of ~10-layer cases;
//! - cases per second on one core, eager and graph, with and without model reuse (with reuse:
//!   a stream where every value changes, and one where one array changes per case);
//! - the same overhead on a stream of the fuzzer's own ~10-layer models (`semfuzz gen`), each
//!   followed by 19 value changes of one array, eager and graph;
//! - reference (check + evaluation) time against TF eager time for the same cases, at 10 and
//!   50 layers with ~4 KB inputs;
//! - the cost of the optional Python coverage (`--python-coverage`), in time per case;
//! - worker resident memory after 100 cases and after SEMFUZZ_BENCH_CASES (default 10,000),
//!   eager; and under XLA (SEMFUZZ_BENCH_XLA_CASES, default 2,000), whose compiled programs
//!   stay until the worker is replaced.
//!
//! For a profiler, SEMFUZZ_BENCH_PROFILE=N runs only the graph stream in which one array
//! changes per case (with SEMFUZZ_BENCH_PROFILE_EVERY set: every value; with
//! SEMFUZZ_BENCH_PROFILE_GENERATED set: the generated models' stream), N times over, and
//! nothing else; attach `perf` to the bench and its worker once the cases are made.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use harness_py::{Harness, Mode, PythonEnv, RunOptions, TfOutcome, WorkerCommand};
use oracle::Case;
use serde_json::{Value, json};

/// A chain of `depth` layers on a [8, 64] float64 input (4 KB): Dense, activations, a
/// residual Add every fourth layer. `variant` changes the config (a new model); `seed`
/// changes only values (the same model).
fn chain(depth: usize, variant: usize, seed: u64) -> Case {
    let mut layers = vec![
        json!({"module": "keras.layers", "class_name": "InputLayer", "name": "x", "registered_name": null,
        "config": {"batch_shape": [null, 64], "dtype": "float64", "name": "x"}, "inbound_nodes": []}),
    ];
    let tensor = |name: &str| json!({"class_name": "__keras_tensor__", "config": {"keras_history": [name, 0, 0]}});
    let mut previous = "x".to_owned();
    let mut weights = serde_json::Map::new();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.25
    };
    let activations = ["relu", "tanh", "sigmoid", "elu"];
    for i in 0..depth {
        let name = format!("l{i}");
        let (class, config, args) = match i % 4 {
            0 | 2 => (
                "Dense",
                json!({"name": name, "units": 64, "activation": activations[(i / 4 + variant) % 4]}),
                vec![tensor(&previous)],
            ),
            1 => (
                "Activation",
                json!({"name": name, "activation": activations[(i + variant) % 4]}),
                vec![tensor(&previous)],
            ),
            _ => (
                "Add",
                json!({"name": name}),
                vec![json!([tensor(&previous), tensor(&format!("l{}", i - 2))])],
            ),
        };
        if class == "Dense" {
            let kernel: Vec<f64> = (0..64 * 64).map(|_| next()).collect();
            let bias: Vec<f64> = (0..64).map(|_| next()).collect();
            weights.insert(
                name.clone(),
                json!([{"shape": [64, 64], "data": kernel}, {"shape": [64], "data": bias}]),
            );
        }
        let args = if class == "Add" {
            args
        } else {
            args.into_iter().collect()
        };
        layers.push(json!({"module": "keras.layers", "class_name": class, "name": name, "registered_name": null, "config": config,
            "inbound_nodes": [{"args": args, "kwargs": {}}]}));
        previous = name;
    }
    let input: Vec<f64> = (0..8 * 64).map(|_| next() * 8.0).collect();
    let case = json!({"format": "semfuzz-case/1", "dtype": "float64",
        "model": {"name": "bench", "trainable": true, "layers": layers, "input_layers": [["x", 0, 0]], "output_layers": [[previous, 0, 0]]},
        "weights": Value::Object(weights), "inputs": [{"shape": [8, 64], "data": input}]});
    Case::from_json_str(&case.to_string(), "bench.case.json").expect("bench cases are valid")
}

/// `models` generated ~10-layer models (`semfuzz gen`, a fixed seed), those TF runs in eager
/// mode; each gets a case for every value change that follows it in a stream.
fn generated(harness: &mut Harness, models: usize) -> Vec<Case> {
    let dir = tempfile::tempdir().expect("temp dir");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args([
            "gen",
            "--count",
            &models.to_string(),
            "--seed",
            "2026",
            "--quiet",
            "--out",
        ])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("semfuzz gen");
    assert!(status.success(), "semfuzz gen failed");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .expect("cases")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    paths.sort();
    let eager = RunOptions::default();
    paths
        .iter()
        .map(|p| Case::read(p).expect("generated cases read back"))
        .filter(|case| {
            matches!(
                harness.run(case, &eager).expect("the worker runs"),
                TfOutcome::Ran { .. }
            )
        })
        .collect()
}

/// `case`, then `changes` cases that each differ from the one before in one array: the inputs
/// or a layer's weights in turn, rotated by one element (the values stay those the generator
/// drew, so integer indices stay indices and ranges stay ranges).
fn value_changes(case: &Case, changes: usize) -> Vec<Case> {
    let rotate = |t: &mut oracle::case::Tensor| {
        let mut flat: Vec<f64> = t.data.iter().copied().collect();
        flat.rotate_left(1);
        t.data = ndarray::ArrayD::from_shape_vec(t.data.raw_dim(), flat).expect("same shape");
    };
    let mut out = vec![case.clone()];
    let slots = case.inputs.len() + case.weights.len();
    for i in 0..changes {
        let mut next = out.last().expect("one case").clone();
        let slot = i % slots.max(1);
        if slot < next.inputs.len() {
            rotate(&mut next.inputs[slot]);
        } else if let Some((_, ts)) = next.weights.get_index_mut(slot - next.inputs.len()) {
            ts.iter_mut().for_each(rotate);
        }
        out.push(next);
    }
    out
}

/// Harness overhead on streams of generated models with value changes, eager and graph: over
/// the cases of a held model (value changes only), and over the whole stream (each model's
/// first case builds it).
fn generated_streams(harness: &mut Harness, report: &Report, n: usize) {
    let models = generated(harness, (n / 10).max(4));
    let stream: Vec<Case> = models.iter().flat_map(|c| value_changes(c, 19)).collect();
    report.line(format!(
        "generated models: {} of {} run in eager mode; {} cases in the stream",
        models.len(),
        (n / 10).max(4),
        stream.len()
    ));
    for (mode, label) in [(Mode::Eager, "eager"), (Mode::Graph, "graph")] {
        let opts = RunOptions {
            modes: vec![mode],
            ..RunOptions::default()
        };
        // [wall, TF] over all cases that ran, and over the reused ones.
        let (mut all, mut reused) = ([0.0f64; 2], [0.0f64; 2]);
        let (mut ran, mut held) = (0usize, 0usize);
        for case in &stream {
            let t = Instant::now();
            let outcome = harness.run(case, &opts).expect("the worker runs");
            let wall = t.elapsed().as_secs_f64();
            if let TfOutcome::Ran {
                tf_seconds,
                reused: r,
                ..
            } = outcome
            {
                ran += 1;
                all[0] += wall;
                all[1] += tf_seconds;
                if r {
                    held += 1;
                    reused[0] += wall;
                    reused[1] += tf_seconds;
                }
            }
        }
        let share = |[wall, tf]: [f64; 2]| 100.0 * (wall - tf) / tf.max(1e-12);
        report.line(format!(
            "{label} generated 10-layer models with value changes: {ran} of {} cases ran ({held} on a held model); held model: TF {:.3} ms/case, harness overhead {:.1}% of TF time; whole stream: {:.1} cases/s, harness overhead {:.1}% of TF time",
            stream.len(),
            1e3 * reused[1] / held.max(1) as f64,
            share(reused),
            ran as f64 / all[0].max(1e-12),
            share(all)
        ));
    }
}

/// The stream a run of value mutations gives: case `i` is case `i - 1` with one array taken
/// from `cases[i]`, the input every third case, else one layer's weights in turn.
fn one_array_changed(cases: &[Case]) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let Some(previous) = out.last() else {
            out.push(case.clone());
            continue;
        };
        let mut next = previous.clone();
        if i % 3 == 0 {
            next.inputs.clone_from(&case.inputs);
        } else {
            let layer = i % next.weights.len();
            next.weights[layer].clone_from(&case.weights[layer]);
        }
        out.push(next);
    }
    out
}

struct Report {
    path: PathBuf,
}

impl Report {
    fn line(&self, text: String) {
        println!("{text}");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .expect("results file");
        writeln!(f, "{text}").expect("results file");
    }
}

/// Runs `cases` through `harness`; returns (wall seconds, seconds inside TF), and records the
/// seconds the worker spent on the requests in all in `WORKER`.
fn stream(harness: &mut Harness, cases: &[Case], opts: &RunOptions) -> (f64, f64) {
    let start = Instant::now();
    let mut tf = 0.0;
    let mut worker = 0.0;
    let mut split = [0.0f64; 6];
    for case in cases {
        let t = Instant::now();
        let outcome = harness.run(case, opts).expect("the worker runs");
        let total = t.elapsed().as_secs_f64();
        match outcome {
            TfOutcome::Ran {
                tf_seconds,
                worker_seconds,
                ..
            } => {
                tf += tf_seconds;
                worker += worker_seconds;
                if let Some(timing) = harness.last_timing() {
                    split[0] += timing.write;
                    split[1] += timing.wait - worker_seconds;
                    split[2] += timing.read;
                    split[3] += total - timing.write - timing.wait - timing.read;
                    split[4] += timing.build;
                    split[5] += timing.parse;
                }
            }
            other => panic!("bench case did not run: {other:?}"),
        }
    }
    WORKER.with(|w| w.set(worker));
    SPLIT.with(|s| s.set(split.map(|x| 1e3 * x / cases.len().max(1) as f64)));
    (start.elapsed().as_secs_f64(), tf)
}

thread_local! {
    static WORKER: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
    /// ms per case: writing the request, waiting beyond the worker's own time, reading the
    /// answer, and the client's own work (building the request, parsing the answer).
    static SPLIT: std::cell::Cell<[f64; 6]> = const { std::cell::Cell::new([0.0; 6]) };
}

fn main() {
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results");
    std::fs::create_dir_all(&out_dir).expect("results dir");
    let report = Report {
        path: out_dir.join("harness.txt"),
    };
    let mut header = String::new();
    let _ = write!(
        header,
        "# harness bench, {}",
        std::process::Command::new("date")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    );
    report.line(header);

    let python = PythonEnv::select(None).expect("an environment");
    let env = PythonEnv::probe(&python).expect("a usable environment");
    let cmd = WorkerCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_semfuzz")),
        args: vec!["__worker".into()],
        env: Vec::new(),
        shared_bytes: harness_py::client::SHARED_BYTES,
        backend: harness_py::Backend::Tensorflow,
    };
    let mut harness = Harness::new(cmd, env);
    let n: usize = std::env::var("SEMFUZZ_BENCH_STREAM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);

    // Warm up: import TF, trace once.
    let eager = RunOptions::default();
    stream(&mut harness, &[chain(10, 0, 0)], &eager);

    // For a profiler: only the graph stream in which one array changes per case, on a loop.
    if let Ok(rounds) = std::env::var("SEMFUZZ_BENCH_PROFILE") {
        let opts = RunOptions {
            modes: vec![Mode::Graph],
            ..RunOptions::default()
        };
        let same: Vec<Case> = (0..n).map(|s| chain(10, 0, s as u64)).collect();
        let every = std::env::var_os("SEMFUZZ_BENCH_PROFILE_EVERY").is_some();
        let generated_models = std::env::var_os("SEMFUZZ_BENCH_PROFILE_GENERATED").is_some();
        let (cases, what) = if generated_models {
            let models = generated(&mut harness, (n / 10).max(4));
            let stream = models.iter().flat_map(|c| value_changes(c, 19)).collect();
            (stream, "generated models with value changes")
        } else if every {
            (same, "every value changes")
        } else {
            (one_array_changed(&same), "one array changed per case")
        };
        for _ in 0..rounds.parse().unwrap_or(1) {
            let (wall, tf) = stream(&mut harness, &cases, &opts);
            report.line(format!(
                "profile, graph reuse, {what}: harness overhead {:.1}% of TF time",
                100.0 * (wall - tf) / tf
            ));
        }
        return;
    }

    // 1. Overhead and throughput, eager and graph, with and without reuse (10 layers).
    for (mode, label) in [(Mode::Eager, "eager"), (Mode::Graph, "graph")] {
        let opts = RunOptions {
            modes: vec![mode],
            ..RunOptions::default()
        };
        // Every value changes from one case to the next; then, as the fuzz loop's value
        // mutations do, one array (a layer's weights or the input) changes.
        let same: Vec<Case> = (0..n).map(|s| chain(10, 0, s as u64)).collect();
        let one = one_array_changed(&same);
        for (cases, what) in [
            (&same, "reuse"),
            (&one, "reuse, one array changed per case"),
        ] {
            let (wall, tf) = stream(&mut harness, cases, &opts);
            let worker = WORKER.with(|w| w.get());
            report.line(format!(
                "{label} {what}: {:.1} cases/s, TF {:.3} ms/case, harness overhead {:.1}% of TF time (worker outside TF {:.1}%, client and pipe {:.1}%)",
                n as f64 / wall,
                1e3 * tf / n as f64,
                100.0 * (wall - tf) / tf,
                100.0 * (worker - tf) / tf,
                100.0 * (wall - worker) / tf
            ));
            let [write, wait, read, own, build, parse] = SPLIT.with(|s| s.get());
            report.line(format!("{label} {what}, client side per case: write {write:.3} ms, wait beyond the worker {wait:.3} ms, read {read:.3} ms, own work {own:.3} ms (request {build:.3}, answer {parse:.3})"));
        }
        let fresh: Vec<Case> = (0..n / 4).map(|s| chain(10, s + 1, s as u64)).collect();
        let (wall, tf) = stream(&mut harness, &fresh, &opts);
        report.line(format!(
            "{label} no reuse: {:.1} cases/s, harness overhead {:.1}% of TF time",
            (n / 4) as f64 / wall,
            100.0 * (wall - tf) / tf
        ));
    }

    // 1b. The fuzzer's own ~10-layer models (`semfuzz gen`), each followed by value changes
    // as the fuzz loop's value mutations make them, one array at a time.
    generated_streams(&mut harness, &report, n);

    // The optional Python coverage (`--python-coverage`): the same cases with and without it,
    // back to back, with reuse and without.
    let opts = RunOptions::default();
    let traced = RunOptions {
        python_coverage: true,
        ..RunOptions::default()
    };
    let same: Vec<Case> = (0..n / 2).map(|s| chain(10, 0, s as u64)).collect();
    let fresh: Vec<Case> = (0..n / 8).map(|s| chain(10, s + 1, s as u64)).collect();
    for (cases, what) in [(&same, "reuse"), (&fresh, "no reuse")] {
        let (plain, _) = stream(&mut harness, cases, &opts);
        let mut lines = std::collections::HashSet::new();
        let start = Instant::now();
        for case in cases {
            harness.run(case, &traced).expect("the worker runs");
            lines.extend(harness.python_lines.iter().copied());
        }
        let with = start.elapsed().as_secs_f64();
        report.line(format!(
            "eager {what}, Python coverage: {:.1} cases/s against {:.1} without ({:.2}x the time), {} distinct lines of Keras/TF",
            cases.len() as f64 / with,
            cases.len() as f64 / plain,
            with / plain,
            lines.len()
        ));
    }

    // Where the overhead goes: building the request frames alone (client side).
    let same: Vec<Case> = (0..n).map(|s| chain(10, 0, s as u64)).collect();
    let start = Instant::now();
    for case in &same {
        std::hint::black_box(harness_py::run::request(case, &eager));
    }
    report.line(format!(
        "request building: {:.3} ms/case",
        1e3 * start.elapsed().as_secs_f64() / n as f64
    ));

    // The floor: a round trip with an empty request (hello), no TF work.
    let start = Instant::now();
    for _ in 0..200 {
        std::hint::black_box(harness.versions().expect("hello"));
    }
    report.line(format!(
        "empty round trip (hello): {:.3} ms",
        1e3 * start.elapsed().as_secs_f64() / 200.0
    ));

    // 2. Reference against TF eager on the same cases, 10 and 50 layers.
    for depth in [10, 50] {
        let cases: Vec<Case> = (0..50).map(|s| chain(depth, 0, s as u64)).collect();
        let (_, tf) = stream(&mut harness, &cases, &eager);
        let start = Instant::now();
        for case in &cases {
            let analysis = oracle::check::check(case).expect("valid");
            std::hint::black_box(oracle::check::eval(case, &analysis).expect("evaluates"));
        }
        let reference = start.elapsed().as_secs_f64();
        report.line(format!(
            "{depth} layers: reference {:.3} ms/case, TF eager {:.3} ms/case: reference/TF = {:.3}; vs ExAIS Prolog ({} s): {:.0}x faster",
            1e3 * reference / 50.0,
            1e3 * tf / 50.0,
            reference / tf,
            if depth == 10 { "0.6" } else { "3" },
            (if depth == 10 { 0.6 } else { 3.0 }) / (reference / 50.0)
        ));
    }

    // 3. Worker memory: after 100 cases and after many, one new model in ten.
    let total: usize = std::env::var("SEMFUZZ_BENCH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let mut rss_100 = 0;
    let start = Instant::now();
    for i in 0..total {
        let case = chain(10, i / 10 % 7, i as u64);
        stream(&mut harness, std::slice::from_ref(&case), &eager);
        if i + 1 == 100 {
            rss_100 = harness.worker_rss_mib().unwrap_or(0);
            report.line(format!("worker RSS after 100 cases: {rss_100} MiB"));
        }
        if (i + 1) % 1000 == 0 {
            let rss = harness.worker_rss_mib().unwrap_or(0);
            report.line(format!(
                "worker RSS after {} cases: {rss} MiB ({:+.1}% vs 100; {:.0} s)",
                i + 1,
                100.0 * (rss as f64 - rss_100 as f64) / rss_100.max(1) as f64,
                start.elapsed().as_secs_f64()
            ));
        }
    }
    report.line(format!(
        "worker restarts during the bench: {}",
        harness.starts - 1
    ));

    // 4. The same under XLA, which keeps every program it compiles: the worker grows with
    // each new model, and is replaced once past half the memory limit (4096 MiB by default).
    let total: usize = std::env::var("SEMFUZZ_BENCH_XLA_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    let xla = RunOptions {
        modes: vec![Mode::Xla],
        ..RunOptions::default()
    };
    harness.restart();
    let (starts, recycled) = (harness.starts, harness.recycled);
    let mut rss_100 = 0;
    let start = Instant::now();
    for i in 0..total {
        let case = chain(10, 100 + i / 10, i as u64);
        stream(&mut harness, std::slice::from_ref(&case), &xla);
        // None right after the worker was replaced: the next one has not started yet.
        let Some(rss) = harness.worker_rss_mib() else {
            continue;
        };
        if i + 1 == 100 {
            rss_100 = rss;
        }
        if i + 1 == 100 || (i + 1) % 500 == 0 {
            report.line(format!(
                "xla, a new model every 10 cases: worker RSS after {} cases: {rss} MiB ({:+.1}% vs 100; {} workers replaced for their memory; {:.0} s)",
                i + 1,
                100.0 * (rss as f64 - rss_100 as f64) / rss_100.max(1) as f64,
                harness.recycled - recycled,
                start.elapsed().as_secs_f64()
            ));
        }
    }
    report.line(format!(
        "xla: workers started {} (replaced for their memory {})",
        harness.starts - starts,
        harness.recycled - recycled
    ));
}

//! The fuzz loop end to end with real TensorFlow: campaigns with faults planted in the worker
//! find them, survive crashes, stop and resume, run several clients and exchange test cases
//! with other campaigns. Deterministic: fixed seeds and run counts, never wall-clock.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use common::{data, repro_status};

/// `semfuzz fuzz` with the planted faults and no seed corpus (fresh models only).
fn fuzz_command(out: &Path, extra: &[&str], crash_marker: Option<&Path>) -> Command {
    let no_seeds = out.with_extension("no-seeds");
    std::fs::create_dir_all(&no_seeds).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semfuzz"));
    cmd.args(["fuzz", "--no-status", "--modes", "eager", "--out"])
        .arg(out)
        .arg("--seeds")
        .arg(&no_seeds)
        .args(extra)
        .env("SEMFUZZ_WORKER_PLANT", data("plant_fuzz.py"))
        .env_remove("SEMFUZZ_PYTHON")
        .stdin(Stdio::null());
    match crash_marker {
        Some(m) => cmd.env("SEMFUZZ_PLANT_CRASH_ONCE", m),
        None => cmd.env_remove("SEMFUZZ_PLANT_CRASH_ONCE"),
    };
    cmd
}

fn fuzz(out: &Path, extra: &[&str], crash_marker: Option<&Path>) -> Output {
    let output = fuzz_command(out, extra, crash_marker).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    output
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn stat(out: &Path, key: &str) -> u64 {
    seconds(out, key) as u64
}

fn seconds(out: &Path, key: &str) -> f64 {
    let stats = std::fs::read_to_string(out.join("fuzzer_stats")).unwrap();
    stats
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .and_then(|(_, v)| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no {key} in fuzzer_stats:\n{stats}"))
}

/// The execution time's parts nest: TF inside the worker's handling, that inside the
/// client's round trip, that and the reference's check and the judge inside the executions.
fn time_parts_nest(out: &Path) {
    let s = |k: &str| seconds(out, k);
    let (tf, handle, worker) = (
        s("tf_seconds"),
        s("worker_handle_seconds"),
        s("worker_seconds"),
    );
    let (oracle, judge, exec) = (s("oracle_seconds"), s("judge_seconds"), s("exec_seconds"));
    assert!(
        0.0 < tf && tf <= handle && handle <= worker,
        "{tf} {handle} {worker}"
    );
    assert!(oracle > 0.0 && judge > 0.0, "{oracle} {judge}");
    // Each part is rounded to the microsecond per execution.
    assert!(
        worker + oracle + judge <= exec + 1e-3 * s("execs_done"),
        "{exec}"
    );
}

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect()
}

fn findings(out: &Path) -> BTreeSet<String> {
    let root = out.join("findings");
    names(&root)
        .into_iter()
        .flat_map(|v| {
            names(&root.join(&v))
                .into_iter()
                .map(move |s| format!("{v}/{s}"))
        })
        .collect()
}

#[test]
fn a_campaign_finds_the_planted_bug_and_survives_the_planted_crash() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let marker = dir.path().join("crashed-once");
    let slow = dir.path().join("slow-once");
    // Float32 only: in float64 a ReLU's `max_value` may also meet the kept rounding bug
    // (`crashes/mismatch-ReLU-float64-max-value`), which the repro would show without the
    // planted fault too. The seed is one whose 80 runs draw a plain ReLU first (seeds 4 to 7
    // of 1-7 with the current generator; with masked chains and new inputs in generated
    // models, seed 1's first ReLU runs inside a `TimeDistributed`, where the planted crash is
    // recorded, and seed 2's runs find no ReLU mismatch).
    let output = fuzz_command(
        &out,
        &[
            "--runs",
            "80",
            "--seed",
            "4",
            "--timeout",
            "4",
            "--dtype",
            "float32",
        ],
        Some(&marker),
    )
    .env("SEMFUZZ_PLANT_SLOW_ONCE", &slow)
    .output()
    .unwrap();
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&output.stderr)
    );

    // The planted semantic bug: a mismatch at a ReLU layer, with a repro that shows it.
    let finding = out.join("findings/mismatch/ReLU");
    let outcome: Value =
        serde_json::from_str(&std::fs::read_to_string(finding.join("outcome.json")).unwrap())
            .unwrap();
    assert_eq!(outcome["verdict"], "mismatch");
    assert_eq!(outcome["class"], "ReLU");
    assert!(outcome["count"].as_u64().unwrap() >= 1);
    assert!(stdout.contains("new finding mismatch/ReLU"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "Reproduce with: semfuzz run {}",
            finding.join("case.case.json").display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "Minimize with: semfuzz triage --minimize {}",
            finding.display()
        )),
        "{stdout}"
    );
    // The repro is the ReLU alone, fed TF's arrays: it fails with the fault, passes without.
    let layer: Value =
        serde_json::from_str(&std::fs::read_to_string(finding.join("layer.case.json")).unwrap())
            .unwrap();
    let classes: Vec<&str> = layer["model"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["class_name"].as_str().unwrap())
        .filter(|c| *c != "InputLayer")
        .collect();
    assert_eq!(classes, ["ReLU"]);
    assert_eq!(repro_status(&finding.join("repro.py"), true), Some(1));
    assert_eq!(repro_status(&finding.join("repro.py"), false), Some(0));

    // The planted crash: recorded at the ReLU, and the campaign went on to its last run.
    assert!(marker.exists());
    assert!(
        findings(&out).contains("crash/ReLU-SIGABRT"),
        "{:?}",
        findings(&out)
    );
    // The case that was slow once ran again with a longer timeout: no hang is reported.
    assert!(slow.exists());
    assert!(stat(&out, "slow_cases") >= 1);
    assert!(
        !findings(&out).iter().any(|f| f.starts_with("timeout/")),
        "{:?}",
        findings(&out)
    );
    assert!(stat(&out, "execs_done") >= 80);
    assert!(stat(&out, "worker_starts") >= 2);
    // Each death of a worker is counted, and cost a start; the known-bug count is kept
    // beside it (`stat` fails on a missing key).
    let crashes = stat(&out, "crash_execs");
    assert!(
        crashes >= 1 && crashes < stat(&out, "worker_starts"),
        "{crashes}"
    );
    assert!(stat(&out, "known_execs") <= stat(&out, "execs_done"));
    assert!(stdout.contains("stopped (runs done)"), "{stdout}");
    // Every corpus entry is a case file that `semfuzz run` reads.
    assert!(
        names(&out.join("corpus"))
            .iter()
            .all(|n| n.ends_with(".case.json"))
    );
}

#[test]
fn a_stopped_campaign_resumes_with_its_corpus_findings_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Stopped by SIGTERM once it has a corpus, as a service manager stops it.
    let mut child = fuzz_command(&out, &["--seed", "7"], None)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let ready = |out: &Path| {
        out.join("fuzzer_stats").exists()
            && names(&out.join("corpus")).len() >= 12
            && !findings(out).is_empty()
    };
    while !ready(&out) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the campaign ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // SAFETY: a plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let first = child.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0));
    assert!(text(&first.stdout).contains("stopped (interrupted)"));
    let corpus = names(&out.join("corpus"));
    let found = findings(&out);
    let execs = stat(&out, "execs_done");
    assert!(execs > 0 && !found.is_empty());
    time_parts_nest(&out);
    let worker = seconds(&out, "worker_seconds");

    // A damaged corpus entry costs that entry, recorded, not the campaign.
    std::fs::write(
        out.join("corpus/damaged.case.json"),
        "{\"format\": \"semfuzz-case/1\"",
    )
    .unwrap();
    let second = fuzz(&out, &["--resume", "--runs", "40", "--seed", "8"], None);
    assert!(text(&second.stdout).contains("resuming after"));
    let records: Vec<String> = std::fs::read_dir(out.join("internal-errors"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        records.iter().any(|r| r.contains("damaged.case.json")),
        "{records:?}"
    );
    assert!(corpus.is_subset(&names(&out.join("corpus"))));
    assert!(found.is_subset(&findings(&out)));
    assert!(stat(&out, "execs_done") >= execs + 40);
    // Executions on a held model are counted across runs like the others.
    let stats = std::fs::read_to_string(out.join("fuzzer_stats")).unwrap();
    assert!(stats.contains("held_model_percent"), "{stats}");
    assert!(stat(&out, "held_model_execs") <= stat(&out, "execs_done"));
    time_parts_nest(&out);
    assert!(seconds(&out, "worker_seconds") > worker);
    let campaign: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(campaign["runs"].as_array().unwrap().len(), 2);

    // Each run records its target, and target.json what the target offers.
    let target = &campaign["runs"][1]["target"];
    assert_eq!(target["backend"], "tensorflow", "{target}");
    assert!(
        target["keras"].as_str().unwrap().starts_with("3."),
        "{target}"
    );
    let offers: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("target.json")).unwrap()).unwrap();
    assert_eq!(
        offers["layers"]["ELU"]["args"]["alpha"],
        serde_json::json!({"default": 1.0}),
        "{}",
        offers["layers"]["ELU"]
    );
    assert_eq!(offers["layers"]["Dense"]["args"]["units"], "required");
    assert!(offers["objects"]["initializers"]["GlorotUniform"]["args"].is_object());

    // A campaign continues only on the target it ran on.
    let mut campaign = campaign;
    let execs = stat(&out, "execs_done");
    campaign["runs"][1]["target"]["keras"] = "3.3.3".into();
    std::fs::write(out.join("campaign.json"), campaign.to_string()).unwrap();
    let refused = fuzz_command(&out, &["--resume", "--runs", "5"], None)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let said = text(&refused.stderr);
    assert!(
        said.contains("Keras 3.3.3") && said.contains("--resume"),
        "{said}"
    );
    assert_eq!(stat(&out, "execs_done"), execs, "the refused run ran");
}

/// A verdict a kept framework bug explains is no finding: the campaign counts it under the
/// bug's name in `known.json`, and its summary says so.
#[test]
fn verdicts_of_known_bugs_are_counted_by_bug_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seeds = dir.path().join("seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    let bug = "mismatch-Activation-gelu-float64";
    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crashes")
        .join(bug);
    std::fs::copy(kept.join("case.case.json"), seeds.join("gelu.case.json")).unwrap();
    let seeds = seeds.to_str().unwrap();
    let output = fuzz(
        &out,
        &["--runs", "6", "--seed", "13", "--seeds", seeds],
        None,
    );
    let stdout = text(&output.stdout);

    let known: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("known.json")).unwrap()).unwrap();
    let gelu = &known[bug];
    assert!(gelu["count"].as_u64().unwrap() >= 1, "{known}");
    assert!(
        gelu["example"]
            .as_str()
            .unwrap()
            .starts_with("mismatch/Activation"),
        "{known}"
    );
    assert!(gelu["first_seen"].as_u64().unwrap() <= gelu["last_seen"].as_u64().unwrap());
    // Each execution counts once per bug it shows: the sum is at least the executions
    // counted as known.
    let sum: u64 = known
        .as_object()
        .unwrap()
        .values()
        .map(|k| k["count"].as_u64().unwrap())
        .sum();
    let execs = stat(&out, "known_execs");
    assert!(execs >= 1 && sum >= execs, "{sum} vs {execs}: {known}");
    assert!(
        !findings(&out)
            .iter()
            .any(|f| f.starts_with("mismatch/Activation")),
        "{:?}",
        findings(&out)
    );
    assert!(
        stdout.contains("known framework bug") && stdout.contains(&format!("{bug} (")),
        "{stdout}"
    );
}

/// Ctrl-C (or SIGTERM) stops after the case in flight; a second one, later, stops at once:
/// the case in flight (here one that sleeps for a minute) is dropped, its worker killed, and
/// the campaign ends as cleanly as after the first.
#[test]
fn a_second_signal_stops_without_waiting_for_the_case_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let slow = dir.path().join("slow-once");
    let done = dir.path().join("slow-done");
    let mut child = fuzz_command(&out, &["--seed", "11", "--timeout", "600"], None)
        .env("SEMFUZZ_PLANT_SLOW_ONCE", &slow)
        .env("SEMFUZZ_PLANT_SLOW_DONE", &done)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The worker is asleep in a case.
    while !slow.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the campaign ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Two signals, further apart than one Ctrl-C reaching several processes.
    for _ in 0..2 {
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!done.exists(), "the slow case ran to its end");
    assert!(stdout.contains("stopped (interrupted)"), "{stdout}");
    assert!(
        stderr.contains("stopping after the case in flight")
            && stderr.contains("stopping now; the case in flight is dropped"),
        "{stderr}"
    );
    // The dropped case is no finding (the worker was killed by semfuzz, not by TF).
    assert!(
        !findings(&out)
            .iter()
            .any(|f| f.starts_with("crash/") || f.starts_with("timeout/")),
        "{:?}",
        findings(&out)
    );
    assert!(out.join("fuzzer_stats").exists());
}

#[test]
fn two_jobs_both_execute_with_python_coverage() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    fuzz(
        &out,
        &[
            "--jobs",
            "2",
            "--runs",
            "12",
            "--seed",
            "3",
            "--python-coverage",
        ],
        None,
    );
    // Lines of Keras's and TF's Python code fed the coverage map.
    assert!(stat(&out, "python_lines") > 1000);
    // Each client journals the case it runs under its own name.
    let running = names(&out.join(".running"));
    assert!(running.contains("client-0.case.json"), "{running:?}");
    assert!(running.contains("client-1.case.json"), "{running:?}");
    for client in ["client-0.case.json", "client-1.case.json"] {
        oracle::Case::read(out.join(".running").join(client)).expect("a journal is a case file");
    }
    assert!(stat(&out, "execs_done") >= 24);
    assert_eq!(stat(&out, "clients"), 2);
}

/// A campaign may only use the CPUs of its affinity mask (a container's cpuset, `taskset`):
/// its clients are bound to those, not to the first CPU numbers, which a client outside the
/// mask could not bind to, so that it never started and the campaign waited for it forever.
/// Here the mask is the last CPU allowed, which is not CPU 0 on a machine with two or more.
#[test]
fn two_jobs_start_within_a_one_cpu_affinity_mask() {
    use std::os::unix::process::CommandExt as _;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // SAFETY: a zeroed cpu_set_t is a valid empty set, which sched_getaffinity fills.
    let last = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|&c| libc::CPU_ISSET(c, &set))
            .expect("an allowed CPU")
    };
    let mut cmd = fuzz_command(&out, &["--jobs", "2", "--runs", "4", "--seed", "5"], None);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(last, &mut set);
            if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The failure was a hang: give up (and fail) long after a healthy run would have ended.
    let mut waited = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            waited < 3000,
            "the campaign did not end: its clients never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        waited += 1;
    };
    let output = child.wait_with_output().unwrap();
    assert!(
        status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert_eq!(stat(&out, "clients"), 2);
    assert!(stat(&out, "execs_done") >= 8);
}

#[test]
fn independent_campaigns_exchange_test_cases_through_their_corpora() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    fuzz(&a, &["--runs", "24", "--seed", "11"], None);
    // Someone else's folder: hostile files beside the cases (B reads A's corpus/), each
    // recorded and passed over.
    let valid = names(&a.join("corpus")).into_iter().next().unwrap();
    let theirs = a.join("corpus");
    std::fs::write(theirs.join("truncated.case.json"), "{\"format\": ").unwrap();
    std::fs::write(
        theirs.join("huge.case.json"),
        r#"{"format": "semfuzz-case/1", "dtype": "float32", "model": {"layers": []}, "inputs": [{"shape": [1048576, 1048576], "npz": "x"}], "npz": "x.npz"}"#,
    )
    .unwrap();
    let fifo = theirs.join("fifo.case.json");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink(&a, theirs.join("loop")).unwrap();
    let old = theirs.join("old.case.json");
    std::fs::copy(a.join("corpus").join(&valid), &old).unwrap();
    assert!(
        Command::new("touch")
            .args(["-d", "1960-01-01"])
            .arg(&old)
            .status()
            .unwrap()
            .success()
    );
    let synced = fuzz(
        &b,
        &[
            "--runs",
            "60",
            "--seed",
            "12",
            "--sync-from",
            a.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(synced.status.code(), Some(0), "{}", text(&synced.stderr));
    let records: Vec<String> = std::fs::read_dir(b.join("internal-errors"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    for bad in ["truncated.case.json", "huge.case.json", "fifo.case.json"] {
        assert!(
            records.iter().any(|r| r.contains(bad)),
            "{bad}: {records:?}"
        );
    }
    assert_eq!(records.len(), 3, "{records:?}");
    // Case files are named by content: B kept some of A's cases under the same names.
    let shared: Vec<String> = names(&a.join("corpus"))
        .intersection(&names(&b.join("corpus")))
        .cloned()
        .collect();
    assert!(!shared.is_empty(), "B imported nothing from A");
}

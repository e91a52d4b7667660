//! The `semfuzz` binary as users run it: exit codes, messages, and the worker handshake with
//! the real embedded TensorFlow from the project's environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn semfuzz(args: &[&str]) -> Output {
    semfuzz_with(args, &[])
}

fn semfuzz_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semfuzz"));
    cmd.args(args)
        .env_remove("SEMFUZZ_PYTHON")
        .env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("semfuzz runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../oracle/tests/fixtures/keras")
        .join(name)
}

#[test]
fn version_reports_the_pinned_tensorflow_through_the_worker() {
    let out = semfuzz(&["version"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!("semfuzz {}\n", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("\npython 3.11."), "{stdout}");
    assert!(stdout.contains("\ntensorflow 2.21.0\n"), "{stdout}");
    assert!(stdout.contains("\nkeras 3.15.1\n"), "{stdout}");
    assert!(stdout.contains("\nnumpy 2.4.6\n"), "{stdout}");
    assert!(stdout.contains("\nbackend tensorflow\n"), "{stdout}");
    assert!(stdout.contains("\nlayer classes "), "{stdout}");
}

/// `layers --python` lists what the target's Keras offers, class by class, with the
/// constructor's defaults and whether the reference supports the class.
#[test]
fn layers_lists_the_targets_classes_with_their_defaults() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let out = semfuzz(&["layers", "--json", "--python", python.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["target"]["keras"], "3.15.1");
    let class = |name: &str| {
        listed["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    let conv = class("Conv2D");
    assert_eq!(conv["supported"], true);
    assert_eq!(conv["args"]["filters"], "required");
    assert_eq!(
        conv["args"]["strides"],
        serde_json::json!({"default": [1, 1]})
    );
    assert_eq!(class("RandomFlip")["supported"], false);
    // The table semfuzz adapts cases with is the pinned release's own.
    let bundled: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness-py/data/keras-3.15.1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(listed["offers"]["activations"], bundled["activations"]);
    for key in ["layers", "base_layer", "objects", "aliases"] {
        let (now, kept) = (&listed["offers"][key], &bundled[key]);
        let differ: Vec<&String> = now
            .as_object()
            .unwrap()
            .iter()
            .filter(|(class, v)| kept.get(class.as_str()) != Some(*v))
            .map(|(class, _)| class)
            .collect();
        assert!(
            now == kept,
            "{key} differs ({differ:?}): run .venv/bin/python scripts/make_offers.py"
        );
    }
}

#[test]
fn another_environment_is_selected_by_flag_or_variable() {
    let out = semfuzz(&["version", "--python", "/nonexistent/bin/python"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("Python `/nonexistent/bin/python` cannot be run"),
        "{}",
        text(&out.stderr)
    );

    let out = semfuzz_with(&["version"], &[("SEMFUZZ_PYTHON", "/nonexistent/py")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`/nonexistent/py`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_python_of_another_minor_version_is_refused_with_how_to_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("python3.12");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho '{\"version\": \"3.12\", \"sys_path\": [], \"base_prefix\": \"/x\"}'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = semfuzz(&["version", "--python", fake.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is Python 3.12, but this semfuzz was built for Python 3.11"),
        "{err}"
    );
    assert!(err.contains("cargo build --release"), "{err}");
}

#[test]
fn an_environment_without_tensorflow_is_a_clear_error() {
    // A bare venv of the same Python: runs, but has no TensorFlow to import.
    let dir = tempfile::tempdir().unwrap();
    let base = text(
        &Command::new(harness_python())
            .args(["-c", "import sys; print(sys._base_executable)"])
            .output()
            .unwrap()
            .stdout,
    );
    let venv = dir.path().join("bare");
    let ok = Command::new(base.trim())
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(ok.success());
    let out = semfuzz(&[
        "version",
        "--python",
        venv.join("bin/python").to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("EnvironmentError") && err.contains("No module named"),
        "{err}"
    );
}

fn harness_python() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.join(".venv/bin/python").to_string_lossy().into_owned()
}

#[test]
fn every_subcommand_explains_itself() {
    for cmd in [
        "fuzz", "run", "check", "gen", "triage", "layers", "export", "version",
    ] {
        let out = semfuzz(&[cmd, "--help"]);
        assert!(out.status.success(), "{cmd}");
        assert!(
            text(&out.stdout)
                .lines()
                .next()
                .is_some_and(|l| l.len() > 20),
            "{cmd}: {}",
            text(&out.stdout)
        );
    }
    let out = semfuzz(&["--help"]);
    assert!(text(&out.stdout).contains("Exit codes: 0 done, nothing found"));
    assert!(!text(&out.stdout).contains("__worker"));
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(semfuzz(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(semfuzz(&["run"]).status.code(), Some(2));
    assert_eq!(semfuzz(&["fuzz", "--hours", "many"]).status.code(), Some(2));
    assert_eq!(semfuzz(&["gen", "--format", "onnx"]).status.code(), Some(2));
    assert_eq!(semfuzz(&["gen", "--layers", "0"]).status.code(), Some(2));
    assert_eq!(semfuzz(&["fuzz", "--jobs", "0"]).status.code(), Some(2));
    assert_eq!(
        semfuzz(&["fuzz", "--invalid-share", "1.5"]).status.code(),
        Some(2)
    );
}

#[test]
fn fuzz_refuses_a_used_output_folder_without_resume_and_an_empty_one_with_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("something"), "x").unwrap();
    let out = semfuzz(&["fuzz", "--runs", "1", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("already holds a campaign: pass --resume"),
        "{}",
        text(&out.stderr)
    );
    let empty = tempfile::tempdir().unwrap();
    let out = semfuzz(&["fuzz", "--resume", "--out", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("holds no campaign to continue"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn gen_refuses_invalid_models_as_keras_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = semfuzz(&[
        "gen",
        "--format",
        "keras",
        "--invalid",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("--invalid --format keras: Keras refuses to build most invalid models"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn triage_of_a_missing_folder_is_bad_usage() {
    let out = semfuzz(&["triage", "/nonexistent/findings"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("/nonexistent/findings: no such directory"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn unreadable_cases_exit_2_naming_file_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.case.json");
    std::fs::write(
        &bad,
        r#"{"format": "semfuzz-case/9", "dtype": "float32", "model": {}}"#,
    )
    .unwrap();
    let out = semfuzz(&["run", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        format!(
            "semfuzz: {}: format: unknown format `semfuzz-case/9` (this semfuzz reads `semfuzz-case/1`)",
            bad.display()
        )
    );
    let out = semfuzz(&["check", "/nonexistent.case.json"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_never_starts_python() {
    // With a broken PYTHONHOME, any Python initialisation in this process would abort it.
    let case = fixture("dense_chain.case.json");
    let out = semfuzz_with(
        &["check", case.to_str().unwrap()],
        &[("PYTHONHOME", "/nonexistent")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        format!("{}: valid (4 layers)", case.display())
    );
}

#[test]
fn check_lists_every_violation_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.case.json");
    let mut case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("dense_chain.case.json")).unwrap())
            .unwrap();
    case["model"]["layers"][1]["config"]["units"] = serde_json::json!(0);
    case["model"]["layers"][2]["config"]["activation"] = serde_json::json!("tanh");
    std::fs::write(&bad, case.to_string()).unwrap();
    let out = semfuzz(&["check", bad.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "invalid");
    assert_eq!(report["violations"][0]["layer"], "dense");
    assert_eq!(report["violations"][0]["category"], "illegal-argument");
    assert_eq!(
        report["violations"][0]["message"],
        "Dense 'dense': units=0 is not positive (expected a positive integer)"
    );
}

#[test]
fn verbosity_flags_control_logging() {
    let case = fixture("dense_chain.case.json");
    let out = semfuzz(&["-q", "check", case.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let out = semfuzz(&["-q", "-v", "check", case.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "-q and -v conflict");
}

#[test]
fn layers_lists_the_supported_classes() {
    let out = semfuzz(&["layers", "--json"]);
    assert!(out.status.success());
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let classes: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    for c in ["Dense", "ReLU", "Activation", "Add", "TrueDivide"] {
        assert!(classes.contains(&c), "{c} missing from {classes:?}");
    }
    let dense = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "Dense")
        .unwrap();
    assert_eq!(dense["params"][0]["name"], "units");
    let table = semfuzz(&["layers"]);
    assert!(
        text(&table.stdout).contains("Dense  units=1..16"),
        "{}",
        text(&table.stdout)
    );
}

#[test]
fn exported_scripts_run_standalone_and_report_agreement() {
    let dir = tempfile::tempdir().unwrap();
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    // Wrappers and recurrent layers take their inner layer or cells as Keras objects.
    let data = |name: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(format!("{name}.case.json"))
    };
    for (name, case) in [
        "dense_chain",
        "shared_layer",
        "nested_sequential",
        "multi_io",
    ]
    .map(|n| (n, fixture(&format!("{n}.case.json"))))
    .into_iter()
    .chain(
        // An operation whose automatic name would be a layer's.
        [
            "rnn_stacked_cells",
            "graph_recomputed_layer_norm",
            "op_named_after_a_layer",
        ]
        .map(|n| (n, data(n))),
    ) {
        let script = dir.path().join(format!("{name}.py"));
        let out = semfuzz(&[
            "export",
            case.to_str().unwrap(),
            "--format",
            "py",
            "-o",
            script.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let run = Command::new(&python)
            .arg("-I")
            .arg(&script)
            .output()
            .unwrap();
        assert_eq!(
            run.status.code(),
            Some(0),
            "{name}: {}\n{}",
            text(&run.stdout),
            text(&run.stderr)
        );
        assert!(
            text(&run.stdout).contains("output 0 (eager): reference"),
            "{name}: {}",
            text(&run.stdout)
        );
    }
    // Weights that overflow make the tolerance infinite: the script still runs.
    let huge = dir.path().join("huge.case.json");
    let mut case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("dense_chain.case.json")).unwrap())
            .unwrap();
    case["weights"]["dense"][0]["data"] = serde_json::json!(vec![1.5e308; 12]);
    std::fs::write(&huge, case.to_string()).unwrap();
    let script = dir.path().join("huge.py");
    let out = semfuzz(&[
        "export",
        huge.to_str().unwrap(),
        "-o",
        script.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .contains("ATOL, RTOL = np.inf")
    );
    let run = Command::new(&python)
        .arg("-I")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        !text(&run.stderr).contains("Traceback"),
        "{}",
        text(&run.stderr)
    );
    assert!(
        text(&run.stdout).contains("output 0 (eager): reference"),
        "{}",
        text(&run.stdout)
    );
    // A model the reference calls invalid and Keras refuses: the script says so and exits 0.
    let bad = dir.path().join("bad.case.json");
    let mut case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("dense_chain.case.json")).unwrap())
            .unwrap();
    case["inputs"][0] = serde_json::json!({"shape": [1, 5], "data": [1, 2, 3, 4, 5]});
    std::fs::write(&bad, case.to_string()).unwrap();
    let script = dir.path().join("bad.py");
    assert!(
        semfuzz(&[
            "export",
            bad.to_str().unwrap(),
            "-o",
            script.to_str().unwrap()
        ])
        .status
        .success()
    );
    let run = Command::new(&python)
        .arg("-I")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stdout));
    assert!(
        text(&run.stdout).contains("TensorFlow refuses it"),
        "{}",
        text(&run.stdout)
    );
}

/// For a model the reference calls invalid, the script's exit status follows the finding's
/// verdict (`--verdict`, else the `outcome.json` beside the case): 1 while TensorFlow still
/// does what the verdict says, 0 once Keras refuses the model itself.
/// A finding's script runs the model in the modes the finding showed in: a kept
/// `mode-mismatch` (XLA's `maximum` drops NaN, eager keeps it) runs eager and XLA and exits 1
/// on XLA's outputs; the same case exported for eager alone agrees and exits 0. A mode the
/// backend lacks is refused (exit 2), naming it.
#[test]
fn exported_scripts_run_the_findings_modes() {
    let dir = tempfile::tempdir().unwrap();
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crashes/mode-mismatch-Maximum-xla-nan/case.case.json");
    let export = |extra: &[&str]| {
        let script = dir.path().join("max.py");
        let mut args = vec![
            "export",
            case.to_str().unwrap(),
            "-o",
            script.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = semfuzz(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        Command::new(&python)
            .arg("-I")
            .arg(&script)
            .output()
            .unwrap()
    };
    let run = export(&[]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    let said = text(&run.stdout);
    assert!(said.contains("output 0 (xla) DISAGREES"), "{said}");
    assert!(!said.contains("(eager) DISAGREES"), "{said}");
    let run = export(&["--modes", "eager"]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stdout));
    let refused = semfuzz(&[
        "export",
        case.to_str().unwrap(),
        "-o",
        dir.path().join("jit.py").to_str().unwrap(),
        "--modes",
        "jit",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains(
            "--modes jit: not a mode of the tensorflow backend (it has eager, graph, xla)"
        ),
        "{}",
        text(&refused.stderr)
    );
}

#[test]
fn exported_scripts_of_invalid_models_exit_by_the_findings_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join(".venv/bin/python");
    let status = |case: &Path, verdict: Option<&str>, name: &str| {
        let script = dir.path().join(format!("{name}.py"));
        let mut args = vec![
            "export",
            case.to_str().unwrap(),
            "-o",
            script.to_str().unwrap(),
        ];
        args.extend(verdict.map(|v| ["--verdict", v]).into_iter().flatten());
        let out = semfuzz(&args);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let run = Command::new(&python)
            .arg("-I")
            .arg(&script)
            .output()
            .unwrap();
        assert!(
            text(&run.stdout).contains("TensorFlow refuses it"),
            "{name}: {}\n{}",
            text(&run.stdout),
            text(&run.stderr)
        );
        run.status.code()
    };
    // A kept late error (its verdict from the outcome.json beside it): a repeated axis
    // refused only by TF's reduction kernel.
    let late = root.join("crashes/late-error-UnitNormalization-duplicate-axes/case.case.json");
    assert_eq!(status(&late, None, "late"), Some(1));
    // Fixed: an axis out of range, which Keras refuses with a ValueError naming the layer's
    // class and its axis, is neither a late error, an unclear one nor a missing validation.
    let mut case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&late).unwrap()).unwrap();
    case["model"]["layers"][1]["config"]["axis"] = serde_json::json!([5]);
    let fixed = dir.path().join("fixed.case.json");
    std::fs::write(&fixed, case.to_string()).unwrap();
    for verdict in ["late-error", "unclear-error", "missing-validation"] {
        assert_eq!(status(&fixed, Some(verdict), verdict), Some(0), "{verdict}");
    }
    // A missing validation refused downstream: Keras builds the EinsumDense on an input of
    // the wrong rank, and only the GroupNormalization after it refuses, while it is built.
    let downstream = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/einsum_dense_rank_then_unnamed_build_error.case.json");
    assert_eq!(
        status(&downstream, Some("missing-validation"), "downstream"),
        Some(1)
    );
    // An unknown verdict is bad usage.
    let out = semfuzz(&[
        "export",
        late.to_str().unwrap(),
        "--verdict",
        "late",
        "-o",
        dir.path().join("x.py").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn check_reads_keras_files_and_model_json_without_python() {
    let dir = tempfile::tempdir().unwrap();
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let script = format!(
        "import os; os.environ['TF_CPP_MIN_LOG_LEVEL']='3'\nimport keras, json\nx = keras.Input((8, 8, 3))\ny = keras.layers.Conv2D(4, 3)(x)\ny = keras.layers.Flatten()(y)\nm = keras.Model(x, keras.layers.Dense(2)(y))\nm.save({dir:?} + '/m.keras')\nc = json.loads(m.to_json())\nc['config']['layers'][1]['config']['kernel_size'] = [9, 9]\nopen({dir:?} + '/bad.json', 'w').write(json.dumps(c))\n",
        dir = dir.path().to_str().unwrap()
    );
    let made = Command::new(&python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let keras_file = dir.path().join("m.keras");
    let out = semfuzz_with(
        &["check", keras_file.to_str().unwrap()],
        &[("PYTHONHOME", "/nonexistent")],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("valid (4 layers)"),
        "{}",
        text(&out.stdout)
    );
    let bad = dir.path().join("bad.json");
    let out = semfuzz(&["check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("Conv2D 'conv2d': kernel_size"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn gen_steers_away_from_kept_bugs_unless_asked_to_keep_them() {
    // RMSNormalization alone: many of its sampled axes trigger the kept scale bug.
    let run = |keep: bool| {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "gen",
            "--count",
            "30",
            "--seed",
            "3",
            "--layers",
            "3",
            "--classes",
            "RMSNormalization",
            "--out",
            dir.path().to_str().unwrap(),
        ];
        if keep {
            args.push("--keep-known-bugs");
        }
        let out = semfuzz(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("summary.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["keep_known_bugs"], keep);
        let mut with_trigger = 0;
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".case.json") {
                continue;
            }
            let case = oracle::Case::read(&path).unwrap();
            let analysis = oracle::check(&case).unwrap();
            with_trigger +=
                usize::from(!oracle::triggers::in_model(&case.model, Some(&analysis)).is_empty());
        }
        (summary, with_trigger)
    };
    let (avoided, none) = run(false);
    assert_eq!(none, 0);
    assert!(
        avoided["models_with_known_bug_trigger_avoided"].as_u64() >= Some(3),
        "{avoided}"
    );
    let (kept, some) = run(true);
    assert!(some >= 3, "{some} of 30 models hold a trigger");
    assert_eq!(kept["known_bug_triggers_avoided"], 0);
}

/// Users' own suppression lists: a malformed entry is bad usage naming the file and the
/// field; a well-formed one explains what it says; `--no-builtin-suppressions` reports a
/// kept bug's verdict as a finding.
#[test]
fn users_suppression_lists_are_checked_and_applied() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(bad.join("my-relu")).unwrap();
    std::fs::write(
        bad.join("my-relu/kept.json"),
        r#"{"summary": "s", "when": [{"verdicts": ["mismatch"], "clases": ["ReLU"]}]}"#,
    )
    .unwrap();
    let out = semfuzz(&["known", "list", "--suppressions", bad.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("my-relu/kept.json") && stderr.contains("clases"),
        "{stderr}"
    );

    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crashes/mismatch-ReLU-float64-max-value/case.case.json");
    let kept = kept.to_str().unwrap();
    let verdict = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["run", "--json", "--dtype", "float64"];
        args.extend(extra);
        args.push(kept);
        let out = semfuzz(&args);
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
        report["verdicts"][0].clone()
    };
    // Built in: the kept rounding bug.
    assert_eq!(verdict(&[])["known"], "mismatch-ReLU-float64-max-value");
    // Without the built-in entries it is a finding (ranked ieee: float32 rounding).
    let all = verdict(&["--no-builtin-suppressions"]);
    assert!(all["known"].is_null(), "{all}");
    assert_eq!(all["tier"], "ieee");
    // A user's list in place of them explains it under the user's id.
    let mine = dir.path().join("mine.json");
    std::fs::write(
        &mine,
        r#"{"entries": {"our-relu-rounding": {"summary": "ours", "when": [
            {"verdicts": ["mismatch"], "classes": ["ReLU"], "dtypes": ["float64"],
             "evidence": {"float32_constants": true}}]}}}"#,
    )
    .unwrap();
    let v = verdict(&[
        "--no-builtin-suppressions",
        "--suppressions",
        mine.to_str().unwrap(),
    ]);
    assert_eq!(v["known"], "our-relu-rounding", "{v}");
}

/// A reader that closes standard output early (`semfuzz known list | head -c 1`) ends
/// semfuzz quietly: exit 0, no panic.
#[test]
fn a_closed_standard_output_ends_quietly() {
    for args in [&["known", "list"][..], &["layers"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// A case without the weights of a layer that has some would run on weights the framework
/// drew itself, which nothing could judge: it is bad input, named by file and layer.
#[test]
fn a_case_without_a_layers_weights_is_refused_naming_the_layer() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../crashes/unexpected-nan-LayerNormalization-torch-float32-square-overflow/case.case.json",
    );
    let mut case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    case["weights"] = serde_json::json!({});
    let bad = dir.path().join("unweighted.case.json");
    std::fs::write(&bad, case.to_string()).unwrap();
    let out = semfuzz(&["run", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "semfuzz: {}: layer 'layer_normalization' has no weights in the case",
            bad.display()
        )),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
}

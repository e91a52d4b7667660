//! Keras 3's other backends, run by the project's own environment: JAX in its `eager` and
//! `jit` modes, on the cases the TensorFlow tests run, judged against the same reference.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;

/// `semfuzz ARGS` in the project's environment, with `env` set; (exit code, JSON lines, stderr).
fn semfuzz(args: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(args)
        .env_remove("SEMFUZZ_PYTHON")
        .env_remove("RUST_LOG")
        .env_remove("SEMFUZZ_WORKER_PLANT")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("semfuzz runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (
        out.status.code(),
        lines,
        format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    )
}

fn fixtures(names: &[&str]) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oracle/tests/fixtures/keras");
    names
        .iter()
        .map(|n| dir.join(format!("{n}.case.json")))
        .collect()
}

fn paths(cases: &[PathBuf]) -> Vec<&str> {
    cases
        .iter()
        .map(|p| p.to_str().expect("UTF-8 path"))
        .collect()
}

#[test]
fn version_names_the_backend_and_its_release() {
    for (backend, release) in [("jax", "jax 0.10.2"), ("torch", "torch 2.15.0")] {
        let out = common::semfuzz(&["version", "--backend", backend]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(
            text.lines().any(|l| l == format!("backend {backend}")),
            "{text}"
        );
        assert!(text.lines().any(|l| l == release), "{text}");
    }
}

/// `layers --backend` asks that backend's worker what Keras offers there.
#[test]
fn layers_lists_what_keras_offers_on_a_backend() {
    for backend in ["jax", "torch"] {
        let (code, lines, text) = semfuzz(&["layers", "--backend", backend, "--json"], &[]);
        assert_eq!(code, Some(0), "{text}");
        let [listing] = lines.as_slice() else {
            panic!("one JSON object: {text}");
        };
        assert_eq!(listing["target"]["backend"], backend, "{text}");
        let classes = listing["classes"].as_array().unwrap();
        assert!(
            classes
                .iter()
                .any(|c| c["class"] == "Dense" && c["supported"] == true),
            "{text}"
        );
    }
}

/// A script exported for JAX in `eager` and `jit` runs the model both ways (jit through the
/// stateless call, as the worker does) and agrees with the reference in each.
#[test]
fn exported_scripts_run_jit_on_jax() {
    let dir = tempfile::tempdir().unwrap();
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    for case in fixtures(&["dense_chain", "multi_io"]) {
        let script = dir.path().join("jit.py");
        let out = common::semfuzz(&[
            "export",
            case.to_str().unwrap(),
            "--backend",
            "jax",
            "--modes",
            "eager,jit",
            "-o",
            script.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let run = Command::new(&python)
            .arg("-I")
            .arg(&script)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&run.stdout);
        assert_eq!(
            run.status.code(),
            Some(0),
            "{said}\n{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(said.contains("output 0 (jit): reference"), "{said}");
        assert!(said.contains("output 0 (eager): reference"), "{said}");
    }
}

/// Under `jax.jit`, XLA recomputes a float64 `GroupNormalization` (which JAX computes in
/// float32, a kept limitation) inside the fusion of the `ELU` after it, with float32 roundings
/// of its own: the `ELU` consumed a value one float32 rounding away from the output the probe
/// recorded. The `ELU` is judged with its producer's float32 tolerance carried over (as for any
/// compiled consumer), so the run shows the kept limitation and nothing else.
#[test]
fn a_jit_consumer_of_a_layer_computed_in_float32_is_judged_with_its_rounding() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/jax_jit_float32_group_normalization_before_elu.case.json");
    let (code, reports, out) = semfuzz(
        &[
            "run",
            "--json",
            "--backend",
            "jax",
            "--modes",
            "jit",
            case.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{out}");
    let verdicts = reports[0]["verdicts"].as_array().unwrap();
    assert!(
        verdicts.iter().any(|v| v["layer"] == "group_normalization"
            && v["known"] == "mismatch-Activation-jax-float64-computed-in-float32"),
        "{out}"
    );
    assert!(
        verdicts
            .iter()
            .all(|v| v["kind"] == "agree" || !v["known"].is_null()),
        "{out}"
    );
}

#[test]
fn a_mode_of_another_backend_is_refused() {
    let case = fixtures(&["dense_chain"]);
    let mut args = vec!["run", "--backend", "jax", "--modes", "eager,xla"];
    args.extend(paths(&case));
    let (code, _, out) = semfuzz(&args, &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--modes xla: not a mode of the jax backend (it has eager, jit)"),
        "{out}"
    );
}

/// The case-format fixtures and the masked goldens run on JAX, eagerly and under `jax.jit`,
/// in float32 and float64, and agree with the reference layer by layer; what does not is
/// explained by an entry scoped to JAX (float64 computed in float32 by some of Keras's JAX
/// ops), and a TensorFlow CPU kernel's refusal is no precondition there.
#[test]
fn fixtures_and_masked_goldens_agree_on_jax_in_eager_and_jit() {
    let mut cases = fixtures(&common::MODE_FIXTURES);
    let masks = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oracle/tests/golden/masks");
    let mut masked: Vec<PathBuf> = std::fs::read_dir(&masks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    masked.sort();
    assert!(masked.len() >= 20, "{}", masked.len());
    cases.extend(masked);
    for dtype in ["float32", "float64"] {
        let mut args = vec![
            "run",
            "--json",
            "--backend",
            "jax",
            "--modes",
            "eager,jit",
            "--dtype",
            dtype,
        ];
        args.extend(paths(&cases));
        let (code, reports, out) = semfuzz(&args, &[]);
        assert_eq!(reports.len(), cases.len(), "{dtype}: {out}");
        let mut known = 0;
        for r in &reports {
            if r["case"]
                .as_str()
                .unwrap()
                .ends_with("sequential_top.case.json")
            {
                assert_eq!(r["status"], "valid", "{dtype}: {r:#}");
            }
            // The invalid goldens are refused clearly, as on TensorFlow. sequential_top's
            // float64 channels_first Conv2D, which TF's CPU kernels refuse, is valid on JAX,
            // and agrees.
            for v in r["verdicts"].as_array().unwrap() {
                if v["known"].is_string() {
                    known += 1;
                    assert_eq!(dtype, "float64", "{r:#}");
                    continue;
                }
                assert_eq!(v["kind"], "agree", "{dtype}: {v:#}");
            }
        }
        assert_eq!(code, Some(0), "{dtype}: {out}");
        if dtype == "float64" {
            // The tanh of dense_chain and fan_out, the BatchNormalization of the MobileNets.
            assert!(known >= 4, "{known}");
        }
    }
}

/// A fault planted in Keras's JAX backend alone (its `relu` adds 0.25 above 1) is found as a
/// mismatch at the Dense layer applying it on JAX, in both modes; TensorFlow's path has no
/// fault, and agrees.
#[test]
fn a_fault_in_the_jax_backend_is_found_there_alone() {
    let plant = common::data("plant_jax_relu.py");
    let case = fixtures(&["fan_out"]);
    let mut args = vec![
        "run",
        "--json",
        "--dtype",
        "float32",
        "--backend",
        "jax",
        "--modes",
        "eager,jit",
    ];
    args.extend(paths(&case));
    let (code, reports, out) = semfuzz(&args, &[("SEMFUZZ_WORKER_PLANT", &plant)]);
    assert_eq!(code, Some(1), "{out}");
    let found: Vec<(&str, &str)> = reports[0]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["signature"].as_str().unwrap(),
                v["mode"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        found.contains(&("mismatch/Dense/on-jax", "eager")),
        "{found:?}"
    );
    assert!(
        found.contains(&("mismatch/Dense/on-jax", "jit")),
        "{found:?}"
    );
    let mut args = vec![
        "run",
        "--json",
        "--dtype",
        "float32",
        "--modes",
        "eager,graph",
    ];
    args.extend(paths(&case));
    let (code, reports, out) = semfuzz(&args, &[("SEMFUZZ_WORKER_PLANT", &plant)]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(reports[0]["verdicts"][0]["kind"], "agree", "{out}");
}

/// A JAX finding's standalone script sets the backend (and JAX's 64-bit mode) before Keras
/// is imported: the kept float64 `tanh` case, exported for JAX, fails there (float32 output);
/// exported for TensorFlow, the same case agrees.
#[test]
fn an_exported_script_runs_on_its_backend() {
    let dir = tempfile::tempdir().unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crashes/mismatch-Activation-jax-float64-computed-in-float32/case.case.json");
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    for (backend, want) in [("jax", 1), ("tensorflow", 0)] {
        let script = dir.path().join(format!("repro_{backend}.py"));
        let (code, _, out) = semfuzz(
            &[
                "export",
                "--format",
                "py",
                "--backend",
                backend,
                "--output",
                script.to_str().unwrap(),
                case.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(code, Some(0), "{out}");
        let text = std::fs::read_to_string(&script).unwrap();
        assert_eq!(
            text.contains("os.environ[\"KERAS_BACKEND\"] = \"jax\""),
            backend == "jax",
            "{text}"
        );
        let run = Command::new(&python).arg(&script).output().unwrap();
        assert_eq!(
            run.status.code(),
            Some(want),
            "{backend}: {}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
    }
}

/// A float32 campaign of seed 4 with no seeds, `args` added, and the fault planted in Keras's
/// JAX relu (`plant_jax_relu.py`); its output folder, once it has ended well.
fn planted_campaign(args: &[&str]) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let no_seeds = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(["fuzz", "--no-status", "--seed", "4", "--dtype", "float32"])
        .args(args)
        .arg("--out")
        .arg(out.path())
        .arg("--seeds")
        .arg(no_seeds.path())
        .env("SEMFUZZ_WORKER_PLANT", common::data("plant_jax_relu.py"))
        .env_remove("SEMFUZZ_PYTHON")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    out
}

/// A campaign on JAX: it records its backend and JAX's default modes (jit first), and finds
/// the fault planted in Keras's JAX relu as a mismatch, whose reproduce command and repro
/// name the backend.
#[test]
fn a_jax_campaign_finds_a_fault_planted_in_the_jax_backend() {
    let out = planted_campaign(&["--backend", "jax", "--runs", "40"]);
    let campaign: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("campaign.json")).unwrap())
            .unwrap();
    let run = &campaign["runs"][0];
    assert_eq!(run["modes"], serde_json::json!(["jit", "eager"]), "{run:#}");
    assert_eq!(run["target"]["backend"], "jax", "{run:#}");
    let found: Vec<PathBuf> = std::fs::read_dir(out.path().join("findings/mismatch"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    let outcomes: Vec<Value> = found
        .iter()
        .map(|d| serde_json::from_str(&std::fs::read_to_string(d.join("outcome.json")).unwrap()))
        .collect::<Result<_, _>>()
        .unwrap();
    let relu = outcomes
        .iter()
        .find(|o| o["evidence"]["max_abs_error"].as_f64() >= Some(0.2));
    let relu = relu.unwrap_or_else(|| panic!("no planted mismatch in {outcomes:#?}"));
    assert_eq!(relu["backend"], "jax", "{relu:#}");
    assert!(
        relu["reproduce"]
            .as_str()
            .unwrap()
            .starts_with("semfuzz run --backend jax "),
        "{relu:#}"
    );
}

/// One campaign on three backends, with the fault planted in Keras's JAX relu: every backend
/// runs cases (half of them on a second backend too), `fuzzer_stats` says how many and for
/// how long, `campaign.json` records each backend with its modes, and the planted fault is
/// found on JAX alone, in folders that name the backend. A `backend-mismatch` the campaign
/// saves pairs JAX with another backend on the planted error.
#[test]
fn a_campaign_on_three_backends_finds_the_fault_of_one() {
    let out = planted_campaign(&[
        "--backends",
        "tensorflow,jax,torch",
        "--second-backend-share",
        "0.5",
        "--runs",
        "60",
    ]);
    let stats = std::fs::read_to_string(out.path().join("fuzzer_stats")).unwrap();
    let stat = |key: &str| -> f64 {
        stats
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim() == key)
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {stats}"))
    };
    let runs: f64 = ["tensorflow", "jax", "torch"]
        .iter()
        .map(|b| {
            assert!(stat(&format!("{b}_runs")) > 0.0, "{stats}");
            assert!(stat(&format!("{b}_seconds")) > 0.0, "{stats}");
            stat(&format!("{b}_runs"))
        })
        .sum();
    // A share of the executions ran on two backends.
    assert!(runs > stat("execs_done"), "{stats}");
    let campaign: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("campaign.json")).unwrap())
            .unwrap();
    let backends = &campaign["runs"][0]["backends"];
    assert_eq!(backends[1]["backend"], "jax", "{campaign:#}");
    assert_eq!(backends[1]["modes"], serde_json::json!(["jit", "eager"]));
    assert_eq!(backends[2]["modes"], serde_json::json!(["eager"]));
    let mut outcomes = Vec::new();
    for kind in std::fs::read_dir(out.path().join("findings")).unwrap() {
        for dir in std::fs::read_dir(kind.unwrap().path()).unwrap() {
            let dir = dir.unwrap().path();
            let o: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("outcome.json")).unwrap())
                    .unwrap();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            if o["backend"] != "tensorflow" && o["verdict"] != "backend-mismatch" {
                assert!(
                    name.ends_with(&format!("-on-{}", o["backend"].as_str().unwrap())),
                    "{name}"
                );
            }
            outcomes.push((name, o));
        }
    }
    let planted = |o: &Value| {
        o["evidence"]["max_abs_error"]
            .as_f64()
            .is_some_and(|e| (e - 0.25).abs() < 0.01)
    };
    let found: Vec<&(String, Value)> = outcomes
        .iter()
        .filter(|(_, o)| o["verdict"] == "mismatch" && planted(o))
        .collect();
    assert!(!found.is_empty(), "{outcomes:#?}");
    assert!(
        found.iter().all(|(_, o)| o["backend"] == "jax"),
        "{found:#?}"
    );
    for (name, o) in outcomes
        .iter()
        .filter(|(_, o)| o["verdict"] == "backend-mismatch")
    {
        let pair = [
            o["backend"].as_str().unwrap(),
            o["compared_with"].as_str().unwrap(),
        ];
        assert!(pair.contains(&"jax") && planted(o), "{name}: {o:#}");
        assert!(
            out.path()
                .join("findings/backend-mismatch")
                .join(name)
                .join("repro-jax.py")
                .is_file()
        );
    }
}

/// `triage` replays findings on the backend they were found on (their `outcome.json`): the
/// kept JAX float64 `tanh` finding reproduces there, under its JAX signature; with a
/// TensorFlow finding beside it, the backend must be said.
#[test]
fn triage_replays_a_finding_on_its_backend() {
    let dir = tempfile::tempdir().unwrap();
    let crashes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crashes");
    let copy = |name: &str| {
        let to = dir.path().join(name);
        std::fs::create_dir(&to).unwrap();
        for f in ["case.case.json", "outcome.json"] {
            std::fs::copy(crashes.join(name).join(f), to.join(f)).unwrap();
        }
    };
    copy("mismatch-Activation-jax-float64-computed-in-float32");
    let folder = dir.path().to_str().unwrap();
    let (code, _, out) = semfuzz(&["triage", "--no-builtin-suppressions", folder], &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("mismatch/Activation/on-jax: reproduces"),
        "{out}"
    );
    copy("mismatch-RMSNormalization-axis-scale");
    let (code, _, out) = semfuzz(&["triage", "--no-builtin-suppressions", folder], &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("pass --backend"), "{out}");
}

/// The case-format fixtures and the masked goldens run eagerly on PyTorch and agree with the
/// reference in float32; in float64, what differs is within float32 rounding and explained by
/// the entry scoped to PyTorch (Keras computes float64 in float32 there). Two fixtures also
/// run under `torch.compile`, whose first call costs seconds per model.
#[test]
fn fixtures_and_masked_goldens_agree_on_torch() {
    let mut cases = fixtures(&common::MODE_FIXTURES);
    let masks = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oracle/tests/golden/masks");
    let mut masked: Vec<PathBuf> = std::fs::read_dir(&masks)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .collect();
    masked.sort();
    cases.extend(masked);
    let compiled = fixtures(&["dense_chain", "fan_out"]);
    for (dtype, modes, cases) in [
        ("float32", "eager", &cases),
        ("float64", "eager", &cases),
        ("float32", "eager,compile", &compiled),
        ("float64", "eager,compile", &compiled),
    ] {
        let mut args = vec![
            "run",
            "--json",
            "--backend",
            "torch",
            "--modes",
            modes,
            "--dtype",
            dtype,
        ];
        args.extend(paths(cases));
        let (code, reports, out) = semfuzz(&args, &[]);
        assert_eq!(reports.len(), cases.len(), "{dtype}: {out}");
        let mut known = 0;
        for r in &reports {
            for v in r["verdicts"].as_array().unwrap() {
                if v["known"].is_string() {
                    known += 1;
                    assert_eq!(dtype, "float64", "{r:#}");
                    assert_eq!(
                        v["known"],
                        "mismatch-Dense-torch-float64-computed-in-float32"
                    );
                    continue;
                }
                assert_eq!(v["kind"], "agree", "{dtype} {modes}: {v:#}");
            }
        }
        assert_eq!(code, Some(0), "{dtype}: {out}");
        if dtype == "float64" {
            assert!(known >= 2, "{known}");
        }
    }
}

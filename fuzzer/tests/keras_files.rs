//! `.keras` files end to end, with the real worker and real TensorFlow: cases exported with
//! `export --format keras` load in plain Keras and compute what the case computes; `run` on a
//! `.keras` file (inputs from an `.npz` or a seed) is judged as any case; files that would run
//! code, files without weights and bad inputs are clear errors, never panics.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::semfuzz;
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../oracle/tests/fixtures/keras")
        .join(format!("{name}.case.json"))
}

/// Runs a script in the project's environment (plain Python, TensorFlow's logs quiet).
fn python(script: &str) -> Output {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    Command::new(python)
        .args(["-I", "-c", script])
        .env("TF_CPP_MIN_LOG_LEVEL", "3")
        .output()
        .expect("python runs")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The one JSON report of `semfuzz run --json ARGS`, with the exit code.
fn run_json(args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["run", "--json"];
    all.extend_from_slice(args);
    let out = semfuzz(&all);
    let stdout = text(&out.stdout);
    let report = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", text(&out.stderr)));
    (out.status.code(), report)
}

fn kinds(report: &Value) -> Vec<&str> {
    report["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["kind"].as_str().unwrap())
        .collect()
}

/// The values of every model output in a report's `tensorflow.eager` or `reference`.
fn outputs(v: &Value) -> Vec<Vec<f64>> {
    v["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            o["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

fn assert_close(a: &[Vec<f64>], b: &[Vec<f64>], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: output count");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len(), "{what}: output size");
        for (u, v) in x.iter().zip(y) {
            assert!((u - v).abs() <= tol * (1.0 + v.abs()), "{what}: {u} vs {v}");
        }
    }
}

fn export_keras(case: &Path, out: &Path) {
    let o = semfuzz(&["export", p(case), "--format", "keras", "-o", p(out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains(&format!("run it with `semfuzz run {}", out.display())),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn exported_keras_files_load_in_plain_keras_and_compute_the_case() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "dense_chain",
        "multi_io",
        "shared_layer",
        "nested_sequential",
    ] {
        let case = fixture(name);
        let keras = dir.path().join(format!("{name}.keras"));
        export_keras(&case, &keras);
        let npz = dir.path().join(format!("{name}.npz"));
        assert!(npz.exists(), "{name}: no inputs beside the .keras file");
        // Plain Keras, safe mode: the model's outputs on the case's inputs, in model.inputs
        // order (the .npz keeps them in that order, named by input layer).
        let script = format!(
            "import json, numpy as np, keras\n\
             m = keras.saving.load_model({keras:?}, compile=False, safe_mode=True)\n\
             d = np.load({npz:?})\n\
             ys = m([d[k] for k in d.files] if len(d.files) > 1 else d[d.files[0]], training=False)\n\
             ys = ys if isinstance(ys, (list, tuple)) else [ys]\n\
             print(json.dumps([np.asarray(y, dtype='float64').ravel().tolist() for y in ys]))\n",
            keras = p(&keras),
            npz = p(&npz),
        );
        let out = python(&script);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let keras_outputs: Vec<Vec<f64>> =
            serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        let (code, report) = run_json(&[p(&case)]);
        assert_eq!(code, Some(0), "{name}: {report:#}");
        // The same weights and inputs in the same TensorFlow: the loaded model computes what
        // the case computes in semfuzz's worker, and the reference agrees with both.
        assert_close(
            &keras_outputs,
            &outputs(&report["tensorflow"]["eager"]),
            1e-6,
            name,
        );
        assert_close(&keras_outputs, &outputs(&report["reference"]), 1e-4, name);
    }
}

#[test]
fn run_on_a_keras_file_is_judged_as_the_case_with_inputs_or_a_seed() {
    let dir = tempfile::tempdir().unwrap();
    let case = fixture("multi_io");
    let keras = dir.path().join("multi_io.keras");
    export_keras(&case, &keras);
    let npz = dir.path().join("multi_io.npz");

    let (code, from_case) = run_json(&[p(&case)]);
    assert_eq!(code, Some(0));
    let (code, from_file) = run_json(&[p(&keras), "--inputs", p(&npz)]);
    assert_eq!(code, Some(0), "{from_file:#}");
    assert_eq!(kinds(&from_file), ["agree"], "{from_file:#}");
    assert_eq!(from_file["case"], p(&keras));
    // The file holds the case's weights exactly: the same outputs, in TF and the reference.
    assert_eq!(
        outputs(&from_file["tensorflow"]["eager"]),
        outputs(&from_case["tensorflow"]["eager"])
    );
    assert_eq!(
        outputs(&from_file["reference"]),
        outputs(&from_case["reference"])
    );

    // Inputs drawn from a seed: judged the same way, deterministic, and another seed draws
    // other inputs. Without --seed, seed 0.
    let (code, seeded) = run_json(&[p(&keras), "--seed", "3"]);
    assert_eq!(code, Some(0), "{seeded:#}");
    assert_eq!(kinds(&seeded), ["agree"], "{seeded:#}");
    let (_, again) = run_json(&[p(&keras), "--seed", "3"]);
    assert_eq!(seeded["reference"], again["reference"]);
    assert_eq!(seeded["tensorflow"], again["tensorflow"]);
    let (code, default) = run_json(&[p(&keras)]);
    assert_eq!(code, Some(0));
    assert_eq!(kinds(&default), ["agree"], "{default:#}");
    assert_ne!(default["reference"], seeded["reference"]);
    let (_, zero) = run_json(&[p(&keras), "--seed", "0"]);
    assert_eq!(default["reference"], zero["reference"]);
}

#[test]
fn keras_files_that_would_run_code_are_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("lambda-ran");
    // The Lambda records every call in `marker`; Keras calls it while building the model,
    // so the marker is removed after saving. A load that ran it would leave it again.
    let script = format!(
        "import os, keras\n\
         def mark(t):\n    open({marker:?}, 'w').close()\n    return t * 2\n\
         x = keras.Input((4,))\n\
         y = keras.layers.Lambda(lambda t: mark(t), name='lam')(keras.layers.Dense(3, name='d')(x))\n\
         keras.Model(x, y).save({lam:?})\n\
         @keras.saving.register_keras_serializable(package='mine')\n\
         class Twice(keras.layers.Layer):\n    def call(self, t):\n        open({marker:?}, 'w').close()\n        return t * 2\n\
         keras.Model(x, Twice(name='twice')(x)).save({custom:?})\n\
         os.remove({marker:?})\n",
        marker = p(&marker),
        lam = p(&dir.path().join("lam.keras")),
        custom = p(&dir.path().join("custom.keras")),
    );
    let made = python(&script);
    assert!(made.status.success(), "{}", text(&made.stderr));

    let lam = dir.path().join("lam.keras");
    let out = semfuzz(&["run", p(&lam), "--seed", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        format!(
            "semfuzz: {}: model.layers[2](lam): refused: `Lambda` layers carry Python code; semfuzz never loads anything that would execute code",
            lam.display()
        )
    );
    let custom = dir.path().join("custom.keras");
    let out = semfuzz(&["run", p(&custom)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("refused: `mine>Twice` is a custom registered object"),
        "{}",
        text(&out.stderr)
    );

    // The worker refuses them too, whoever asks: before Keras reads the file.
    use harness_py::keras_file::KERAS_FILE_LIMITS;
    use harness_py::{Harness, KerasFileError, PythonEnv, WorkerCommand};
    let env = PythonEnv::probe(&PythonEnv::select(None).unwrap()).unwrap();
    let cmd = WorkerCommand {
        program: PathBuf::from(env!("CARGO_BIN_EXE_semfuzz")),
        args: vec!["__worker".into()],
        env: Vec::new(),
        shared_bytes: harness_py::client::SHARED_BYTES,
        backend: harness_py::Backend::Tensorflow,
    };
    let mut harness = Harness::new(cmd, env);
    for (file, says) in [
        (&lam, "`Lambda` layers carry Python code"),
        (&custom, "`mine>Twice` is a custom registered object"),
    ] {
        match harness.load_keras(file, KERAS_FILE_LIMITS) {
            Err(KerasFileError::Refused { path, message }) => {
                assert_eq!(&path, file);
                assert!(message.contains(says), "{message}");
            }
            other => panic!("{}: {other:?}", file.display()),
        }
    }
    assert!(!marker.exists(), "code from a .keras file ran");
    // The same worker goes on serving: a plain file loads.
    let fine = dir.path().join("fine.keras");
    export_keras(&fixture("dense_chain"), &fine);
    let weights = harness.load_keras(&fine, KERAS_FILE_LIMITS).unwrap();
    let case = oracle::Case::read(fixture("dense_chain")).unwrap();
    for (name, arrays) in &case.weights {
        let loaded = weights.layer(name).unwrap();
        assert_eq!(loaded.len(), arrays.len(), "{name}");
        for (a, b) in loaded.iter().zip(arrays) {
            assert_eq!(a, &b.data.mapv(|x| x as f32 as f64), "{name}");
        }
    }
    assert_eq!(harness.starts, 1);
}

#[test]
fn keras_files_without_weights_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("ok.keras");
    let missing = dir.path().join("missing.keras");
    let unbuilt = dir.path().join("unbuilt.keras");
    // `missing`: the file of a two-layer model with the second Dense's arrays taken out of
    // model.weights.h5; `unbuilt`: a Sequential model saved before it was built.
    let script = format!(
        "import io, zipfile, h5py, keras\n\
         x = keras.Input((4,))\n\
         keras.Model(x, keras.layers.Dense(2, name='d2')(keras.layers.Dense(3, name='d1')(x))).save({ok:?})\n\
         src = zipfile.ZipFile({ok:?})\n\
         dst = zipfile.ZipFile({missing:?}, 'w')\n\
         for n in src.namelist():\n    data = src.read(n)\n    if n == 'model.weights.h5':\n        b = io.BytesIO(data)\n        with h5py.File(b, 'a') as h:\n            del h['layers/dense_1']\n        data = b.getvalue()\n    dst.writestr(n, data)\n\
         dst.close()\n\
         keras.Sequential([keras.layers.Dense(3, name='d')]).save({unbuilt:?})\n",
        ok = p(&ok),
        missing = p(&missing),
        unbuilt = p(&unbuilt),
    );
    let made = python(&script);
    assert!(made.status.success(), "{}", text(&made.stderr));

    let (code, report) = run_json(&[p(&ok)]);
    assert_eq!((code, kinds(&report)), (Some(0), vec!["agree"]));
    let out = semfuzz(&["run", p(&missing)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.starts_with(&format!(
            "semfuzz: {}: Keras cannot load it: ValueError: ",
            missing.display()
        )),
        "{err}"
    );
    assert!(
        err.contains("Layer 'd2' expected 2 variables, but received 0"),
        "{err}"
    );
    let out = semfuzz(&["run", p(&unbuilt)]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim(),
        format!(
            "semfuzz: {}: the model declares 0 input layer(s) for its 1 input(s), so neither its inputs nor its weights are known (was it saved before it was built?)",
            unbuilt.display()
        )
    );
}

#[test]
fn bad_npz_inputs_name_the_file_and_the_array() {
    let dir = tempfile::tempdir().unwrap();
    let keras = dir.path().join("m.keras");
    export_keras(&fixture("dense_chain"), &keras);
    let case = oracle::Case::read(fixture("dense_chain")).unwrap();
    let input = case.model.input_refs()[0].layer.clone();
    let (wrong_key, wide, not_npz) = (
        dir.path().join("wrong_key.npz"),
        dir.path().join("wide.npz"),
        dir.path().join("not.npz"),
    );
    let script = format!(
        "import numpy as np\n\
         np.savez({wrong_key:?}, other=np.zeros((2, 4)))\n\
         np.savez({wide:?}, np.zeros((2, 5), 'float32'))\n\
         open({not_npz:?}, 'w').write('hello')\n",
        wrong_key = p(&wrong_key),
        wide = p(&wide),
        not_npz = p(&not_npz),
    );
    let made = python(&script);
    assert!(made.status.success(), "{}", text(&made.stderr));

    let stderr = |npz: &Path| {
        let out = semfuzz(&["run", p(&keras), "--inputs", p(npz)]);
        assert_eq!(out.status.code(), Some(2), "{}", npz.display());
        text(&out.stderr).trim().to_owned()
    };
    assert_eq!(
        stderr(&wrong_key),
        format!(
            "semfuzz: {}: no array for input 0 (`{input}`): expected one named `{input}` or `arr_0`; the file holds `other`",
            wrong_key.display()
        )
    );
    assert_eq!(
        stderr(&wide),
        format!(
            "semfuzz: {}: arr_0: has shape (2, 5), but input 0 (`{input}`) of the model takes (None, 4)",
            wide.display()
        )
    );
    let e = stderr(&not_npz);
    assert!(
        e.starts_with(&format!("semfuzz: {}: not an .npz", not_npz.display())),
        "{e}"
    );
    let e = stderr(&dir.path().join("absent.npz"));
    assert!(e.contains("absent.npz: cannot read: No such file"), "{e}");

    // --inputs goes with exactly one .keras file; neither flag goes with case files alone.
    let out = semfuzz(&["run", p(&keras), p(&keras), "--inputs", p(&wide)]);
    assert_eq!(out.status.code(), Some(2));
    let out = semfuzz(&["run", p(&fixture("dense_chain")), "--seed", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--inputs and --seed give the inputs of .keras files"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn gen_writes_keras_files_that_run_as_their_cases() {
    let dir = tempfile::tempdir().unwrap();
    let (keras_dir, case_dir) = (dir.path().join("keras"), dir.path().join("cases"));
    let gen_with = |format: &str, out: &Path| {
        let o = semfuzz(&[
            "gen",
            "--count",
            "2",
            "--seed",
            "11",
            "--layers",
            "4",
            "--format",
            format,
            "--out",
            p(out),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            text(&o.stdout).starts_with("wrote 2 valid model(s)"),
            "{}",
            text(&o.stdout)
        );
    };
    // float64 (gen's default): the files hold the cases' values exactly (a float32 file
    // holds them rounded to float32, which the cases need not be).
    gen_with("keras", &keras_dir);
    gen_with("case", &case_dir);
    for i in 0..2 {
        let stem = format!("gen-{i:06}");
        let keras = keras_dir.join(format!("{stem}.keras"));
        let npz = keras_dir.join(format!("{stem}.npz"));
        let case = case_dir.join(format!("{stem}.case.json"));
        let (_, from_file) = run_json(&[p(&keras), "--inputs", p(&npz)]);
        let (_, from_case) = run_json(&[p(&case)]);
        assert_eq!(kinds(&from_file), kinds(&from_case), "{from_file:#}");
        assert_eq!(from_file["reference"], from_case["reference"], "{stem}");
        if kinds(&from_case) == ["agree"] {
            assert_eq!(from_file["tensorflow"], from_case["tensorflow"], "{stem}");
        }
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(keras_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["written"], 2);
    assert_eq!(summary["keras_refused"], 0);
}

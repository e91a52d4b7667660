//! Another Keras release beside the pinned one, installed by the project's own set-up
//! (`make setup KERAS=3.3.3`, which `make test` runs): cases written for the pinned release
//! are adapted to it and run there, and what it cannot express is unsupported, not a finding.

mod common;

use std::path::PathBuf;

use serde_json::Value;

use common::semfuzz;

/// The older release's interpreter (`make setup KERAS=3.3.3` links it).
fn older() -> String {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv-keras-3.3.3-tf-2.16.2/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make setup KERAS=3.3.3`",
        python.display()
    );
    python.to_string_lossy().into_owned()
}

fn seeds() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seeds");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".case.json"))
        .collect();
    files.sort();
    files
}

fn reports(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `run --json --modes eager` of `cases` with `extra` arguments, on the pinned release or
/// `python`'s: one report per case.
fn run_eager(python: Option<&str>, extra: &[&str], cases: &[String]) -> Vec<Value> {
    let mut args = vec!["run", "--json", "--modes", "eager"];
    args.extend(extra);
    if let Some(p) = python {
        args.extend(["--python", p]);
    }
    args.extend(cases.iter().map(String::as_str));
    let out = semfuzz(&args);
    let reports = reports(&out.stdout);
    assert_eq!(
        reports.len(),
        cases.len(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    reports
}

#[test]
fn the_seeds_run_and_agree_on_an_older_release() {
    let python = older();
    let version = semfuzz(&["version", "--python", &python]);
    let said = String::from_utf8_lossy(&version.stdout);
    assert!(
        said.contains("\nkeras 3.3.3\n") && said.contains("\ntensorflow 2.16.2\n"),
        "{said}"
    );

    let seeds = seeds();
    let mut args = vec!["run", "--json", "--modes", "eager", "--python", &python];
    args.extend(seeds.iter().map(String::as_str));
    let out = semfuzz(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports = reports(&out.stdout);
    assert_eq!(reports.len(), seeds.len());
    for r in &reports {
        assert!(r["unsupported_on_target"].is_null(), "{r}");
        let verdicts = r["verdicts"].as_array().unwrap();
        assert!(!verdicts.is_empty(), "{r}");
        for v in verdicts {
            assert_eq!(v["kind"], "agree", "{}: {v}", r["case"]);
        }
    }
}

#[test]
fn what_the_older_release_cannot_express_is_unsupported() {
    let python = older();
    let dir = tempfile::tempdir().unwrap();
    let seed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seeds/hand-mlp.case.json");
    let mut case: Value = serde_json::from_str(&std::fs::read_to_string(seed).unwrap()).unwrap();
    let dense = case["model"]["layers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|l| l["class_name"] == "Dense")
        .unwrap();
    // `hard_tanh` came after Keras 3.3.
    dense["config"]["activation"] = "hard_tanh".into();
    let path = dir.path().join("hard-tanh.case.json");
    std::fs::write(&path, case.to_string()).unwrap();
    let path = path.to_string_lossy().into_owned();

    let out = semfuzz(&["run", "--json", "--python", &python, &path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = &reports(&out.stdout)[0];
    let why = r["unsupported_on_target"].as_str().unwrap_or_default();
    assert!(why.contains("hard_tanh"), "{r}");
    assert!(r["verdicts"].is_null(), "{r}");

    // The pinned release runs it.
    let out = semfuzz(&["run", "--json", &path]);
    let r = &reports(&out.stdout)[0];
    assert!(r["unsupported_on_target"].is_null(), "{r}");
    assert_eq!(r["verdicts"][0]["kind"], "agree", "{r}");
}

#[test]
fn a_campaign_on_an_older_release_records_it() {
    let python = older();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = semfuzz(&[
        "fuzz",
        "--no-status",
        "--modes",
        "eager",
        "--runs",
        "40",
        "--seed",
        "3",
        "--python",
        &python,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let campaign: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(campaign["runs"][0]["target"]["keras"], "3.3.3");
    // What the unpinned environment installed travels with the campaign.
    let installed = campaign["runs"][0]["installed"].as_array().unwrap();
    assert!(
        installed.iter().any(|l| l == "keras==3.3.3"),
        "{installed:?}"
    );
    let stats = std::fs::read_to_string(out.join("fuzzer_stats")).unwrap();
    assert!(stats.contains("unsupported_execs"), "{stats}");
}

/// A copy of a finding that Keras 3.3.3 has and 3.15 fixed, kept in `crashes/` for the older
/// release: `Concatenate(axis=0)`, joining along the batch axis, fails at build with an
/// IndexError in 3.3.3 and runs in 3.15.
fn fixed_upstream(dir: &std::path::Path) -> PathBuf {
    let from = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../crashes/unexpected-rejection-Concatenate-batch-axis-index-error");
    let to = dir.join("findings/unexpected-rejection/Concatenate-IndexError");
    std::fs::create_dir_all(&to).unwrap();
    for f in ["case.case.json", "outcome.json"] {
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
    to
}

/// The stdout of a replay in which something reproduced somewhere (exit 1).
fn found_somewhere(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn triage_on_two_releases_shows_a_bug_fixed_upstream() {
    let python = older();
    let dir = tempfile::tempdir().unwrap();
    fixed_upstream(dir.path());
    let findings = dir.path().join("findings");
    let (md, html) = (dir.path().join("t.md"), dir.path().join("t.html"));
    let pinned = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let out = semfuzz(&[
        "triage",
        "--python",
        &python,
        "--python",
        pinned.to_str().unwrap(),
        findings.to_str().unwrap(),
        "--report",
        md.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        // The older release's kept entry would explain it there: the bare verdicts here.
        "--no-builtin-suppressions",
    ]);
    let stdout = found_somewhere(&out);
    assert!(
        stdout.contains(
            "[1] reproduces\n    [2] no longer reproduces\n    shows in: Keras 3.3.3; not in 3.15.1"
        ),
        "{stdout}"
    );
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        md.contains("| Keras 3.3.3 / TF 2.16.2 | Keras 3.15.1 / TF 2.21.0 |")
            && md.contains("| reproduces | no longer reproduces | Keras 3.3.3; not in 3.15.1 |"),
        "{md}"
    );
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains("<td class=\"status-no-longer-reproduces\">no longer reproduces</td>"),
        "{html}"
    );
}

#[test]
fn bisect_names_the_releases_and_fills_a_kept_entry() {
    older();
    let dir = tempfile::tempdir().unwrap();
    let finding = fixed_upstream(dir.path());
    // Kept as a bug of the pinned release only, as a campaign on it would have kept it.
    std::fs::write(
        finding.join("kept.json"),
        r#"{"summary": "Concatenate on the batch axis", "releases": {"keras": {"from": "3.15.1"}},
            "when": [{"verdicts": ["unexpected-rejection"], "classes": ["Concatenate"]}]}"#,
    )
    .unwrap();
    let report = dir.path().join("bisect.md");
    let out = semfuzz(&[
        "bisect",
        finding.to_str().unwrap(),
        "--keras",
        "3.15.1,3.3.3",
        "--write-releases",
        "--report",
        report.to_str().unwrap(),
    ]);
    let stdout = found_somewhere(&out);
    assert!(
        stdout.contains("shows in: Keras 3.3.3; not in 3.15.1"),
        "{stdout}"
    );
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(finding.join("kept.json")).unwrap()).unwrap();
    assert_eq!(
        kept["releases"],
        serde_json::json!({"keras": {"from": "3.3.3", "before": "3.15.1"}, "tensorflow": {"from": "2.16.2"}})
    );
    // The rest of the entry is as it was.
    assert_eq!(kept["when"][0]["classes"][0], "Concatenate");
    assert!(
        std::fs::read_to_string(report)
            .unwrap()
            .contains("| reproduces | no longer reproduces |")
    );

    // A range that is not one is refused, naming the argument.
    let bad = semfuzz(&["bisect", finding.to_str().unwrap(), "--keras", "3.x..3.5"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--keras 3.x..3.5"));
}

/// The case-format fixtures and forty generated models, run on the pinned release and on
/// the older one (adapted), the models generated for each (`gen --python` draws only what the
/// release has): each agrees with the reference, is explained by a kept entry of that
/// release, or (older release only, fixtures) cannot be expressed there; nothing else.
#[test]
fn the_fixtures_and_generated_models_agree_on_both_releases() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../oracle/tests/fixtures/keras");
    let older = older();
    for python in [None, Some(older.as_str())] {
        let generated = dir
            .path()
            .join(if python.is_some() { "older" } else { "pinned" });
        let mut args = vec!["gen", "--count", "40", "--seed", "11", "--out"];
        args.push(generated.to_str().unwrap());
        if let Some(p) = python {
            args.extend(["--python", p]);
        }
        let out = semfuzz(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut cases: Vec<String> = Vec::new();
        for folder in [&fixtures, &generated] {
            let mut files: Vec<String> = std::fs::read_dir(folder)
                .unwrap()
                .map(|e| e.unwrap().path().to_string_lossy().into_owned())
                .filter(|p| p.ends_with(".case.json"))
                .collect();
            files.sort();
            cases.extend(files);
        }
        assert!(cases.len() >= 55, "{}", cases.len());
        let reports = run_eager(python, &[], &cases);
        let (mut ran, mut unsupported, mut wrong) = (0, Vec::new(), Vec::new());
        for r in &reports {
            if let Some(why) = r["unsupported_on_target"].as_str() {
                assert!(python.is_some(), "the pinned release refused: {r}");
                unsupported.push(format!("{}: {why}", r["case"]));
                continue;
            }
            ran += 1;
            for v in r["verdicts"].as_array().unwrap() {
                if v["kind"] != "agree" && v["known"].is_null() {
                    wrong.push(format!("{}: {} {}", r["case"], v["signature"], v["detail"]));
                }
            }
        }
        assert!(
            wrong.is_empty(),
            "{python:?}: unexplained verdicts:\n{}",
            wrong.join("\n")
        );
        // Every model generated for the release is expressible there; only fixtures written
        // for the pinned release may not be.
        let generated_unsupported: Vec<&String> = unsupported
            .iter()
            .filter(|u| u.contains(generated.to_str().unwrap()))
            .collect();
        assert!(
            generated_unsupported.is_empty(),
            "{python:?}: {ran} ran; generated for the release but unsupported there:\n{generated_unsupported:#?}"
        );
        assert!(ran >= 50, "{python:?}: {ran} ran, {unsupported:#?}");
    }
}

/// The set-up installs, for each Keras minor of `python/targets.tsv`, exactly the
/// TensorFlow the table gives it (the lookup once took 3.1 for 3.10 too, a number).
#[test]
fn the_setup_installs_the_tensorflow_of_each_minor_in_the_table() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let table = std::fs::read_to_string(root.join("python/targets.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("keras\t"))
        .map(|l| l.split('\t').collect())
        .collect();
    assert!(rows.len() >= 16, "{rows:?}");
    for row in rows {
        let (tf, last) = (row[1], row[2]);
        let out = std::process::Command::new(root.join("scripts/target_env.sh"))
            .env("KERAS", last)
            .env("PRINT", "packages")
            .env_remove("TF")
            .env_remove("TARGET")
            .output()
            .unwrap();
        assert!(out.status.success(), "{last}: {out:?}");
        let packages = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            packages.lines().collect::<Vec<_>>(),
            [format!("tensorflow-cpu=={tf}"), format!("keras=={last}")],
            "Keras {last}"
        );
    }
}

/// Where the older release computes a layer otherwise, the reference models that release:
/// Keras before 3.7 had no fused attention path (which ignores `attention_axes`) and scaled
/// GroupQueryAttention by `1/√head_dim` computed in the inputs' dtype; before 3.6
/// UnitNormalization raised a lane's squared norm to `ε` (a tiny lane is scaled by `1e6`, not
/// by its inverse norm). Each case (found by a 3.3.3 campaign) agrees on both releases.
#[test]
fn layers_are_judged_as_each_release_computes_them() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let cases: Vec<String> = [
        "keras-3.3.3-gqa-exact-scale",
        "keras-3.3.3-mha-no-fused-path",
        "keras-3.3.3-unit-normalization-tiny-lane",
    ]
    .iter()
    .map(|n| {
        data.join(format!("{n}.case.json"))
            .to_string_lossy()
            .into_owned()
    })
    .collect();
    let older = older();
    for python in [None, Some(older.as_str())] {
        for r in &run_eager(python, &["--dtype", "float64"], &cases) {
            assert!(r["unsupported_on_target"].is_null(), "{r}");
            for v in r["verdicts"].as_array().unwrap() {
                assert_eq!(v["kind"], "agree", "{python:?} {}: {v}", r["case"]);
            }
        }
    }
}

/// Models generated for the older release steer away from what it is known to refuse by a
/// layer's config (a `MultiHeadAttention` given `output_shape`, a kept bug of 3.3.3 fixed in
/// 3.7), where `--keep-known-bugs` lets them keep it; the models then build there.
#[test]
fn generation_for_an_older_release_avoids_its_kept_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let python = older();
    let generated = |keep: bool| {
        let out = dir.path().join(if keep { "kept" } else { "avoided" });
        let mut args = vec![
            "gen",
            "--count",
            "12",
            "--seed",
            "7",
            "--classes",
            "MultiHeadAttention",
            "--python",
            python.as_str(),
            "--out",
            out.to_str().unwrap(),
        ];
        if keep {
            args.push("--keep-known-bugs");
        }
        let said = semfuzz(&args);
        assert!(
            said.status.success(),
            "{}",
            String::from_utf8_lossy(&said.stderr)
        );
        let mut cases: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path().to_string_lossy().into_owned())
            .filter(|p| p.ends_with(".case.json"))
            .collect();
        cases.sort();
        let with_output_shape = cases
            .iter()
            .flat_map(|c| {
                let case: Value =
                    serde_json::from_str(&std::fs::read_to_string(c).unwrap()).unwrap();
                case["model"]["layers"].as_array().unwrap().clone()
            })
            .filter(|l| {
                l["class_name"] == "MultiHeadAttention" && !l["config"]["output_shape"].is_null()
            })
            .count();
        (cases, with_output_shape)
    };
    let (_, kept) = generated(true);
    assert!(kept > 0, "the generator draws output_shape");
    let (cases, avoided) = generated(false);
    assert_eq!(avoided, 0);
    for r in run_eager(Some(&python), &[], &cases) {
        assert!(
            r["verdicts"]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v["signature"] != "unexpected-rejection/MultiHeadAttention/TypeError"),
            "{r}"
        );
    }
}

/// A LayerNormalization over several axes written unsorted (`axis=[2, 1]`): Keras 3.3.3 lays
/// its gamma and beta out in the written order, and the worker hands it the case's weights
/// (laid out over the sorted axes, as 3.15 does) reshaped to that layout, which 3.3.3 reshapes
/// back when it uses them. Its gamma and beta vary, so a wrong layout would not agree.
#[test]
fn weights_laid_out_for_the_older_release_agree() {
    let case = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/layer_normalization_axes_written_unsorted.case.json")
        .to_string_lossy()
        .into_owned();
    let python = older();
    for r in run_eager(Some(&python), &[], &[case]) {
        let verdicts = r["verdicts"].as_array().unwrap();
        assert!(!verdicts.is_empty(), "{r}");
        assert!(verdicts.iter().all(|v| v["kind"] == "agree"), "{r}");
    }
}

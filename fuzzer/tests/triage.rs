//! `semfuzz triage` end to end with real TensorFlow and faults planted in the worker: a
//! campaign's findings are replayed, labelled and minimised; corrupt and foreign files are
//! reported and skipped; a nondeterministic fault is labelled flaky; without a fault, a plain
//! case agrees while a saved finding no longer reproduces. Deterministic: fixed seeds and run
//! counts.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use common::{RELU_CASE, data, repro_status};

fn semfuzz(args: &[&str], plant: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args(args)
        .env("SEMFUZZ_WORKER_PLANT", data(plant))
        .env_remove("SEMFUZZ_PYTHON")
        .env_remove("SEMFUZZ_PLANT_CRASH_ONCE")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", text(&o.stdout), text(&o.stderr))
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_campaigns_planted_bug_reproduces_and_minimizes_to_the_relu_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seeds = dir.path().join("no-seeds");
    std::fs::create_dir_all(&seeds).unwrap();
    let fuzz = semfuzz(
        &[
            "fuzz",
            "--no-status",
            "--modes",
            "eager",
            "--runs",
            "40",
            // A seed whose 40 generated executions draw a ReLU (what this test needs; it is
            // about triage, not about how soon generation draws one): seed 5 did until the
            // generator changed how layers take their inputs.
            "--seed",
            "7",
            "--out",
            out.to_str().unwrap(),
            "--seeds",
            seeds.to_str().unwrap(),
        ],
        "plant_fuzz.py",
    );
    assert_eq!(fuzz.status.code(), Some(0), "{}", show(&fuzz));
    let finding = out.join("findings/mismatch/ReLU");
    assert!(finding.join("outcome.json").is_file(), "{}", show(&fuzz));
    let original = std::fs::read(finding.join("case.case.json")).unwrap();

    let findings = out.join("findings");
    let html = dir.path().join("triage.html");
    let triage = semfuzz(
        &[
            "triage",
            "--minimize",
            "--time-per-finding",
            "60",
            "--html",
            html.to_str().unwrap(),
            findings.to_str().unwrap(),
        ],
        "plant_fuzz.py",
    );
    let stdout = text(&triage.stdout);
    assert_eq!(triage.status.code(), Some(1), "{}", show(&triage));
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("mismatch/ReLU: reproduces")),
        "{stdout}"
    );
    assert!(stdout.contains("minimized mismatch/ReLU:"), "{stdout}");
    assert!(stdout.contains("median"), "{stdout}");

    // The original is untouched; the minimal case lies beside it.
    assert_eq!(
        std::fs::read(finding.join("case.case.json")).unwrap(),
        original
    );
    let min = finding.join("minimized");
    let case = json(&min.join("case.case.json"));
    let layers: Vec<&Value> = case["model"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["class_name"] != "InputLayer")
        .collect();
    assert!(layers.len() <= 2, "{layers:?}");
    assert!(
        layers.iter().any(|l| l["class_name"] == "ReLU"),
        "{layers:?}"
    );
    for input in case["inputs"].as_array().unwrap() {
        let n: u64 = input["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .product();
        assert!(n <= 16, "{input}");
    }
    let outcome = json(&min.join("outcome.json"));
    assert_eq!(outcome["signature"], "mismatch/ReLU");
    assert_eq!(outcome["class"], "ReLU");
    let issue = std::fs::read_to_string(min.join("issue.md")).unwrap();
    assert!(
        issue.starts_with("# `ReLU` computes wrong values"),
        "{issue}"
    );
    assert!(issue.contains("TensorFlow 2."), "{issue}");
    assert!(issue.contains("```python\n"), "{issue}");
    let dot = std::fs::read_to_string(min.join("model.dot")).unwrap();
    assert!(
        dot.starts_with("digraph model {") && dot.contains("ReLU"),
        "{dot}"
    );
    let report = std::fs::read_to_string(findings.join("triage.md")).unwrap();
    // The planted +0.25 on finite data: a wrong result.
    assert!(report.contains("## wrong-result · mismatch"), "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("| ReLU | `mismatch/ReLU` | reproduces |")),
        "{report}"
    );
    assert_html_lists_the_minimal_relu(&std::fs::read_to_string(&html).unwrap(), &min);
    let repro = min.join("repro.py");
    assert_eq!(repro_status(&repro, true), Some(1));
    assert_eq!(repro_status(&repro, false), Some(0));
}

/// The HTML report of a triage that minimised the planted ReLU bug: its group under the
/// verdict, with status, count, dates, the minimal case and a picture of it.
fn assert_html_lists_the_minimal_relu(html: &str, min: &Path) {
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    let section = &html[html.find("<h2>wrong-result · mismatch</h2>").expect(html)..];
    let row = &section[section.find("<tr class=\"group\">").expect(html)..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(
        row.starts_with(
            "<tr class=\"group\"><td>ReLU</td><td><code>mismatch/ReLU</code></td><td class=\"status-reproduces\">reproduces</td><td class=\"what\">&#39;re_lu"
        ),
        "{row}"
    );
    // First and last seen come from the finding's outcome.json.
    assert_eq!(row.matches(" UTC</td>").count(), 2, "{row}");
    let minimal = min.join("case.case.json").display().to_string();
    assert!(row.contains(&format!("<code>{minimal}</code> (")), "{row}");
    // The picture, drawn without Graphviz: the ReLU the finding names highlighted.
    let picture = &row[row.find("<figure>").expect(row)..];
    assert!(
        picture.starts_with("<figure><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"model\""),
        "{picture}"
    );
    assert_highlights(picture, "ReLU");
    let file = std::fs::read_to_string(min.join("model.svg")).unwrap();
    assert!(file.starts_with("<svg xmlns="), "{file}");
    assert_highlights(&file, "ReLU");
}

/// The picture's one highlighted box is the layer of `class`.
fn assert_highlights(svg: &str, class: &str) {
    assert_eq!(
        svg.matches("<g class=\"node finding\">").count(),
        1,
        "{svg}"
    );
    let finding = &svg[svg.find("<g class=\"node finding\">").unwrap()..];
    let finding = &finding[..finding.find("</g>").unwrap()];
    assert!(finding.contains(&format!(">{class}</text>")), "{svg}");
}

/// Each bad file of the test below has a line of `text` starting with `prefix`.
fn assert_lists_the_bad_files(text: &str, prefix: &str) {
    for name in ["corrupt.case.json", "foreign.case.json", "finding"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(prefix) && l.contains(name)),
            "{name}: {text}"
        );
    }
}

#[test]
fn corrupt_and_foreign_files_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(cases.join("finding")).unwrap();
    std::fs::write(cases.join("corrupt.case.json"), "{\"format\": \"semfuzz-ca").unwrap();
    std::fs::write(cases.join("foreign.case.json"), "{\"hello\": [1, 2]}").unwrap();
    std::fs::write(cases.join("relu.case.json"), RELU_CASE).unwrap();
    // A findings folder whose outcome is not one.
    std::fs::write(cases.join("finding/case.case.json"), RELU_CASE).unwrap();
    std::fs::write(cases.join("finding/outcome.json"), "[1]").unwrap();
    let report = dir.path().join("report.md");
    let html = dir.path().join("report.html");
    let out = semfuzz(
        &[
            "triage",
            "--report",
            report.to_str().unwrap(),
            "--html",
            html.to_str().unwrap(),
            cases.to_str().unwrap(),
        ],
        "plant_fuzz.py",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_lists_the_bad_files(&stderr, "semfuzz: skipping");
    let stdout = text(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("relu.case.json: mismatch/ReLU: reproduces")),
        "{stdout}"
    );
    let report = std::fs::read_to_string(report).unwrap();
    assert!(report.contains("## Skipped"), "{report}");
    assert!(report.contains("corrupt.case.json"), "{report}");
    let html = std::fs::read_to_string(html).unwrap();
    let skipped = &html[html.find("<h2>Skipped</h2>").expect(&html)..];
    assert_lists_the_bad_files(skipped, "<li>");
    // Not minimised: the smallest example's picture is shown, its ReLU highlighted.
    let picture = &html[html.find("<figure><svg").expect(&html)..];
    assert_highlights(&picture[..picture.find("</figure>").unwrap()], "ReLU");
    assert!(!html.contains("digraph"), "{html}");

    // Without the planted fault nothing reproduces: exit 0.
    let clean = Command::new(env!("CARGO_BIN_EXE_semfuzz"))
        .args([
            "triage",
            cases
                .join("relu.case.json")
                .parent()
                .unwrap()
                .to_str()
                .unwrap(),
        ])
        .env_remove("SEMFUZZ_WORKER_PLANT")
        .env_remove("SEMFUZZ_PYTHON")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(clean.status.code(), Some(0), "{}", show(&clean));

    let missing = semfuzz(&["triage", "/nonexistent/findings"], "plant_fuzz.py");
    assert_eq!(missing.status.code(), Some(2), "{}", show(&missing));
    assert!(text(&missing.stderr).contains("no such directory"));
}

#[test]
fn a_bug_that_shows_every_other_run_is_flaky() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(cases.join("relu.case.json"), RELU_CASE).unwrap();
    let out = semfuzz(
        &["triage", "--replays", "3", cases.to_str().unwrap()],
        "plant_flaky.py",
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("relu.case.json: mismatch/ReLU: flaky")),
        "{stdout}"
    );
    let report = std::fs::read_to_string(cases.join("triage.md")).unwrap();
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("| ReLU | `mismatch/ReLU` | flaky |")),
        "{report}"
    );
}

/// A bug that shows only after another layer ran in the same process: minimising in one
/// worker would drop that layer (the worker is primed already), leaving a case that does not
/// reproduce alone. The minimal case is confirmed in a fresh worker, and minimised again with
/// a fresh worker per variant when it fails, so it keeps the primer.
#[test]
fn a_bug_that_needs_an_earlier_layer_in_the_process_keeps_it_when_minimized() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let mut case: Value = serde_json::from_str(RELU_CASE).unwrap();
    let primer = serde_json::json!({"module": "keras.layers", "class_name": "Identity", "name": "semfuzz_primer",
        "config": {"name": "semfuzz_primer", "trainable": true},
        "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"shape": [null, 3], "dtype": "float64", "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]});
    let layers = case["model"]["layers"].as_array_mut().unwrap();
    layers[1]["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] =
        Value::from("semfuzz_primer");
    layers.insert(1, primer);
    let file = cases.join("primed.case.json");
    std::fs::write(&file, case.to_string()).unwrap();
    let out = semfuzz(
        &[
            "triage",
            "--minimize",
            "--time-per-finding",
            "90",
            cases.to_str().unwrap(),
        ],
        "plant_primed.py",
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let min = stdout
        .lines()
        .find_map(|l| l.strip_prefix("minimized mismatch/ReLU: "))
        .and_then(|l| l.rsplit_once(": "))
        .map(|(_, dir)| Path::new(dir).join("case.case.json"))
        .unwrap_or_else(|| panic!("{}", show(&out)));
    let classes: Vec<String> = json(&min)["model"]["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["class_name"].as_str().unwrap().to_owned())
        .filter(|c| c != "InputLayer")
        .collect();
    assert_eq!(classes, ["Identity", "ReLU"], "{}", show(&out));
    // Alone, in a fresh worker, the minimal case still shows the bug.
    let run = semfuzz(&["run", min.to_str().unwrap()], "plant_primed.py");
    assert_eq!(run.status.code(), Some(1), "{}", show(&run));
    assert!(text(&run.stdout).contains("mismatch"), "{}", show(&run));
}

/// Without a planted fault TensorFlow computes the ReLU as the reference does: a plain case of
/// it agrees, while a saved finding of it (an `outcome.json` recording a mismatch) no longer
/// reproduces. Neither is a finding: exit 0.
#[test]
fn a_plain_case_that_agrees_is_not_a_finding_that_no_longer_reproduces() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    let finding = cases.join("findings/mismatch/ReLU");
    std::fs::create_dir_all(&finding).unwrap();
    std::fs::write(cases.join("relu.case.json"), RELU_CASE).unwrap();
    std::fs::write(finding.join("case.case.json"), RELU_CASE).unwrap();
    let outcome = serde_json::json!({
        "verdict": "mismatch",
        "signature": "mismatch/ReLU",
        "layer": "re_lu",
        "class": "ReLU",
        "modes": ["eager"],
        "count": 3,
        "first_seen": 1_700_000_000u64,
        "last_seen": 1_700_003_600u64,
    });
    std::fs::write(finding.join("outcome.json"), outcome.to_string()).unwrap();
    let html = dir.path().join("triage.html");
    let out = common::semfuzz(&[
        "triage",
        "--html",
        html.to_str().unwrap(),
        cases.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));

    let stdout = text(&out.stdout);
    let line = |path: &Path| {
        let prefix = format!("{}: ", path.display());
        stdout
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no line for {prefix}: {stdout}"))
            .to_owned()
    };
    let plain = cases.join("relu.case.json");
    assert_eq!(
        line(&plain),
        format!("{0}: agree/model/{0}: agrees", plain.display())
    );
    assert_eq!(
        line(&finding),
        format!("{}: mismatch/ReLU: no longer reproduces", finding.display())
    );

    let report = std::fs::read_to_string(cases.join("triage.md")).unwrap();
    assert!(
        report.contains("no longer reproduces: 1 · agrees: 1"),
        "{report}"
    );
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("| ReLU | `mismatch/ReLU` | no longer reproduces | - | 3 |")),
        "{report}"
    );
    assert!(
        report.lines().any(|l| l.starts_with(&format!(
            "| model | `agree/model/{}` | agrees | - | 1 |",
            plain.display()
        ))),
        "{report}"
    );
    let html = std::fs::read_to_string(html).unwrap();
    assert!(
        html.contains("<td class=\"status-agrees\">agrees</td>"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"status-no-longer-reproduces\">no longer reproduces</td>"),
        "{html}"
    );
}

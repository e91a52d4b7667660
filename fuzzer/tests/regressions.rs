//! The regression corpus: every confirmed bug kept in `crashes/` still behaves as its entry
//! says, and its example is explained by exactly that entry. When one stops reproducing
//! (fixed upstream?), the failure names the folder so that its entry's release range can be
//! closed.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod common;
use common::{installed, releases_hold};

/// `semfuzz ARGS`, in the given environment (default: the pinned one).
fn semfuzz(python: Option<&Path>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_semfuzz"));
    cmd.env_remove("SEMFUZZ_PYTHON");
    if let Some(p) = python {
        cmd.env("SEMFUZZ_PYTHON", p);
    }
    cmd
}

#[test]
fn every_kept_finding_behaves_as_recorded_and_is_explained_by_its_entry_alone() {
    check_every_kept_finding(None);
}

/// On the older release `make test` sets up, each kept bug shows exactly where its entry's
/// release range says (the ranges `semfuzz bisect --write-releases` filled): a bug the older
/// release has is known there too, and one it lacks (or cannot express) is not claimed.
#[test]
fn every_kept_finding_behaves_as_its_release_range_says_on_an_older_release() {
    let python =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv-keras-3.3.3-tf-2.16.2/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `make setup KERAS=3.3.3`",
        python.display()
    );
    check_every_kept_finding(Some(&python));
}

/// A kept folder's `machine.json` (`Null` where absent): what its evidence needs of the
/// machine.
fn machine(dir: &Path) -> Value {
    std::fs::read_to_string(dir.join("machine.json"))
        .map(|t| serde_json::from_str(&t).expect("machine.json: JSON"))
        .unwrap_or(Value::Null)
}

/// The environment variables a kept folder's `machine.json` sets for its replay (`env`,
/// e.g. TensorFlow's oneDNN kernels off).
fn machine_env(dir: &Path) -> Vec<(String, String)> {
    machine(dir)["env"]
        .as_object()
        .map(|e| {
            e.iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("env: strings").to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The CPU features a kept folder's `machine.json` asks for that this machine's
/// `/proc/cpuinfo` does not list (none where the file or its `cpu_flags` is absent).
fn missing_cpu_flags(dir: &Path) -> Vec<String> {
    let wanted = machine(dir);
    if wanted["cpu_flags"].is_null() {
        return Vec::new();
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags: std::collections::HashSet<&str> = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .flat_map(|l| l.split_whitespace())
        .collect();
    wanted["cpu_flags"]
        .as_array()
        .expect("machine.json: cpu_flags, a list")
        .iter()
        .map(|f| f.as_str().expect("a flag").to_owned())
        .filter(|f| !flags.contains(f.as_str()))
        .collect()
}

/// One kept folder to replay: what its record says it must show.
struct Kept {
    name: String,
    /// The entry's release ranges, as written.
    range: Value,
    in_range: bool,
    /// The signature (prefix) its verdict must have.
    want: String,
    tier: Value,
}

fn check_every_kept_finding(python: Option<&Path>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crashes");
    let installed = installed(python);
    let mut without_entry = Vec::new();
    // The replays, by what the worker runs them with (backend, modes, dtype, the machine's
    // environment): each group is one `known explain`, one worker for all its cases, as a
    // campaign runs them.
    type Group = (
        String,
        Option<String>,
        Option<String>,
        Vec<(String, String)>,
    );
    let mut groups: std::collections::BTreeMap<Group, Vec<Kept>> = Default::default();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("case.case.json").exists() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(kept) = std::fs::read_to_string(dir.join("kept.json")) else {
            without_entry.push(name);
            continue;
        };
        let kept: Value = serde_json::from_str(&kept).unwrap();
        // A kept bug whose evidence needs CPU features this machine lacks (`machine.json`,
        // e.g. the oneDNN kernels of AVX-512) is not expected to show here: said, not replayed.
        let missing = missing_cpu_flags(&dir);
        if !missing.is_empty() {
            eprintln!("{name}: not replayed: this CPU lacks {missing:?}");
            continue;
        }
        let outcome: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("outcome.json")).unwrap())
                .unwrap();
        // A bug of another backend is replayed on it; the older release's environment has
        // TensorFlow alone.
        let backend = outcome["backend"]
            .as_str()
            .unwrap_or("tensorflow")
            .to_owned();
        if backend != "tensorflow" && python.is_some() {
            eprintln!("{name}: not replayed: the older release's environment has no {backend}");
            continue;
        }
        // A bug of one execution mode (XLA, graph) is replayed in the modes it was found in.
        let modes = outcome["modes"].as_array().map(|m| {
            m.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        });
        let dtype = outcome["dtype"]
            .as_str()
            .filter(|d| !d.is_empty())
            .map(str::to_owned);
        groups
            .entry((backend, modes, dtype, machine_env(&dir)))
            .or_default()
            .push(Kept {
                // While the installed release is in the entry's range, the bug must show.
                range: kept["releases"].clone(),
                in_range: releases_hold(&kept, &installed),
                want: outcome["signature"].as_str().unwrap().to_owned(),
                tier: outcome["tier"].clone(),
                name,
            });
    }
    let mut checked = 0;
    let mut changed = Vec::new();
    let mut unexplained = Vec::new();
    let mut retiered = Vec::new();
    for ((backend, modes, dtype, env), folders) in &groups {
        let mut cmd = semfuzz(python);
        cmd.envs(env.iter().cloned());
        cmd.args(["known", "explain", "--json", "--backend", backend]);
        if let Some(dtype) = dtype {
            cmd.args(["--dtype", dtype]);
        }
        if let Some(modes) = modes {
            cmd.args(["--modes", modes]);
        }
        let names: Vec<&str> = folders.iter().map(|k| k.name.as_str()).collect();
        for (k, verdicts) in folders.iter().zip(verdicts_of(cmd, &root, &names)) {
            let name = k.name.as_str();
            let showing: Vec<&Value> = verdicts
                .iter()
                .filter(|v| {
                    v["signature"]
                        .as_str()
                        .is_some_and(|s| s.starts_with(&k.want))
                })
                .collect();
            let reproduces = !showing.is_empty();
            // While it reproduces, the bug is known: its verdict is explained by this folder's
            // entry and by no other, so campaigns count it instead of reporting it again.
            let explained_by_this_alone = showing
                .iter()
                .any(|v| v["known"].as_str() == Some(name) && explained_by(v) == [name]);
            // The tier its record gives is the one the judge gives now.
            if reproduces && !k.tier.is_null() && !showing.iter().any(|v| v["tier"] == k.tier) {
                retiered.push(format!(
                    "{name}: recorded {}, now {:?}",
                    k.tier,
                    showing.iter().map(|v| &v["tier"]).collect::<Vec<_>>()
                ));
            }
            if reproduces && !explained_by_this_alone {
                unexplained.push(format!(
                    "{name}: {:#}",
                    Value::Array(showing.iter().map(|v| json_brief(v)).collect())
                ));
            }
            if reproduces != k.in_range {
                changed.push(format!(
                    "{name}: its entry's release ranges {} {} the installed releases, but it {}: {:?}",
                    k.range,
                    if k.in_range { "holds for" } else { "excludes" },
                    if reproduces {
                        "reproduces"
                    } else {
                        "no longer reproduces"
                    },
                    verdicts
                        .iter()
                        .filter_map(|v| v["signature"].as_str())
                        .collect::<Vec<_>>()
                ));
            }
            checked += 1;
        }
    }
    assert!(checked >= 2, "only {checked} kept findings");
    assert!(
        without_entry.is_empty(),
        "kept folders without a kept.json entry: {without_entry:?}"
    );
    assert!(
        unexplained.is_empty(),
        "kept findings not explained by their own entry alone:\n{}",
        unexplained.join("\n")
    );
    assert!(
        retiered.is_empty(),
        "kept findings whose tier changed (update outcome.json):\n{}",
        retiered.join("\n")
    );
    assert!(
        changed.is_empty(),
        "kept findings no longer behave as their entries say (update the release range):\n{}",
        changed.join("\n")
    );
}

/// The verdicts of each kept folder's case, in order, from one `known explain --json` (`cmd`,
/// its options given) run over all of them: one worker for the lot.
fn verdicts_of(mut cmd: Command, root: &Path, names: &[&str]) -> Vec<Vec<Value>> {
    let paths: Vec<_> = names
        .iter()
        .map(|n| root.join(n).join("case.case.json"))
        .collect();
    cmd.args(&paths);
    let out = cmd.output().unwrap();
    let reports: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    paths
        .iter()
        .map(|path| {
            reports
                .iter()
                .find(|r| r["case"].as_str() == path.to_str())
                .and_then(|r| r["verdicts"].as_array().cloned())
                .unwrap_or_default()
        })
        .collect()
}

/// The entries that explain a verdict of `known explain --json`.
fn explained_by(v: &Value) -> Vec<&str> {
    v["explanation"]["explained_by"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x["entry"].as_str())
        .collect()
}

/// A verdict's kind, layer, known entry, evidence and explanation.
fn json_brief(v: &Value) -> Value {
    serde_json::json!({
        "signature": v["signature"],
        "mode": v["mode"],
        "known": v["known"],
        "evidence": v["evidence"],
        "explanation": v["explanation"],
        "detail": v["detail"],
    })
}

/// A kept bug's example holds finite inputs and weights unless the bug is about non-finite
/// values (tier `ieee`): on non-finite outputs the precision guard's planted wrong value
/// cannot show, and a maintainer reads a report with an infinite weight as an IEEE question.
#[test]
fn every_kept_example_outside_the_ieee_tier_holds_finite_values() {
    let crashes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crashes");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crashes).expect("crashes/") {
        let dir = entry.expect("entry").path();
        let (Ok(case), Ok(outcome)) = (
            std::fs::read_to_string(dir.join("case.case.json")),
            std::fs::read_to_string(dir.join("outcome.json")),
        ) else {
            continue;
        };
        let outcome: Value = serde_json::from_str(&outcome).expect("outcome.json: JSON");
        if outcome["tier"] == "ieee" {
            continue;
        }
        let case: Value = serde_json::from_str(&case).expect("case.case.json: JSON");
        let tensors = case["inputs"].as_array().into_iter().flatten().chain(
            case["weights"]
                .as_object()
                .into_iter()
                .flat_map(|w| w.values())
                .flat_map(|ts| ts.as_array().into_iter().flatten()),
        );
        for t in tensors {
            let data = t["data"].as_array().expect("a tensor's data");
            assert!(
                data.iter().all(Value::is_number),
                "{}: a non-finite input or weight in the example of a {} finding",
                dir.display(),
                outcome["tier"]
            );
        }
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} kept examples read");
}

/// A kept bug whose entry names backends besides the one its example was found on shows on
/// each of them too, explained by its own entry alone: an entry is only as wide as the
/// backends its example reproduces on. The example runs there in the backend's counterpart of
/// its recorded modes (TensorFlow's graph and XLA are JAX's `jit` and PyTorch's eager).
#[test]
fn every_kept_finding_shows_on_each_backend_its_entry_names() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crashes");
    let installed = installed(None);
    // The replays, by (backend, modes, dtype): each group runs in one `known explain`, one
    // worker for all its cases. Per case: (folder, the verdict and class it must show).
    type Group = (String, String, Option<String>);
    let mut groups: std::collections::BTreeMap<Group, Vec<(String, String)>> = Default::default();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(kept) = std::fs::read_to_string(dir.join("kept.json")) else {
            continue;
        };
        let kept: Value = serde_json::from_str(&kept).unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let outcome: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("outcome.json")).unwrap())
                .unwrap();
        if !releases_hold(&kept, &installed) {
            continue;
        }
        let recorded = outcome["backend"].as_str().unwrap_or("tensorflow");
        let backends: Vec<&str> = kept["backends"]
            .as_array()
            .map(|b| b.iter().filter_map(Value::as_str).collect())
            .unwrap_or_else(|| vec!["tensorflow"]);
        let class = outcome["class"]
            .as_str()
            .or_else(|| outcome["signature"].as_str()?.split('/').nth(1))
            .unwrap()
            .to_owned();
        // The bug shows at the same class, explained by this entry; the verdict may be another
        // that the entry lists (a missing validation on one backend is a kernel's late error
        // on another).
        let want = class;
        for backend in backends.into_iter().filter(|b| *b != recorded) {
            let counterpart = |m: &str| -> String {
                match (backend, m) {
                    ("jax", "graph" | "xla" | "jit") => "jit".into(),
                    ("jax", _) | ("torch", _) => "eager".into(),
                    (_, m) => m.into(),
                }
            };
            let mut modes: Vec<String> = outcome["modes"]
                .as_array()
                .map(|m| {
                    m.iter()
                        .filter_map(Value::as_str)
                        .map(counterpart)
                        .collect()
                })
                .unwrap_or_else(|| vec!["eager".into()]);
            modes.dedup();
            let dtype = outcome["dtype"].as_str().map(str::to_owned);
            groups
                .entry((backend.to_owned(), modes.join(","), dtype))
                .or_default()
                .push((name.clone(), want.clone()));
        }
    }
    let mut checked = 0;
    let mut failures = Vec::new();
    for ((backend, modes, dtype), cases) in &groups {
        let mut cmd = semfuzz(None);
        cmd.args([
            "known",
            "explain",
            "--json",
            "--backend",
            backend,
            "--modes",
            modes,
        ]);
        if let Some(dtype) = dtype {
            cmd.args(["--dtype", dtype]);
        }
        let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
        for ((name, want), verdicts) in cases.iter().zip(verdicts_of(cmd, &root, &names)) {
            let explained = verdicts.iter().any(|v| {
                v["signature"].as_str().is_some_and(|s| {
                    // TensorFlow's signatures name no backend; the others' end with it.
                    let on_backend = if backend == "tensorflow" {
                        !s.contains("/on-")
                    } else {
                        s.ends_with(&format!("/on-{backend}"))
                    };
                    s.split('/').nth(1) == Some(want.as_str()) && on_backend
                }) && explained_by(v) == [name.as_str()]
            });
            if !explained {
                failures.push(format!(
                    "{name} on {backend}: {:#}",
                    Value::Array(verdicts.iter().map(json_brief).collect())
                ));
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} replays on other backends");
    assert!(
        failures.is_empty(),
        "kept findings that do not show, explained by their own entry, on a backend it names:\n{}",
        failures.join("\n")
    );
}

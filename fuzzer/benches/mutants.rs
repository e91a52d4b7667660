//! The planted-bug benchmark: how many one-line faults in Keras (and in TensorFlow's Python
//! layer) a short campaign finds. Not a test: run with `cargo bench -p fuzzer --bench mutants`.
//!
//! The faults are data, `benches/mutants/faults.json`: per fault the file (relative to
//! site-packages), the exact text to replace and its replacement, the faulted class (and the
//! classes that share the faulted code), its family folder, and what a model must have to show
//! it, in words (`needs`) and as conditions on a drawn layer (`when`). Each fault also has a
//! verification case, `benches/mutants/cases/<id>.case.json` (written by `make_cases.py`).
//!
//! Per fault:
//! 1. the fault is planted in a copy of the installed package (`harness_py::overlay`), put
//!    first on the worker's path through `SEMFUZZ_OVERLAY`;
//! 2. verification: the case runs (`semfuzz run --json`, eager) on stock and planted Keras,
//!    and its verdicts or TensorFlow's outputs must differ; a fault that fails is reported as
//!    such and left out of the share;
//! 3. a campaign (`semfuzz fuzz`, a fixed seed, the repository's seeds) runs on the planted
//!    copy, with `SEMFUZZ_DRAWN` recording what it drew;
//! 4. found = a finding whose `outcome.json` names the faulted class (or one sharing the
//!    faulted code); the time to the first one is its `first_seen` less the campaign's start.
//!    A miss is explained, in this order: the class was never drawn; no drawn layer of the
//!    class had the argument value the fault needs (or the value range: a `min`/`max`
//!    condition), or each condition was met but never all at once (a combination); no
//!    layer meeting them was in a valid model TensorFlow ran; a kept bug explained verdicts
//!    at such a layer (the entry named from `known.json`); otherwise the judge said agree on
//!    what was drawn (or the data the fault needs, which no record holds, never came).
//!
//! Results are rewritten after every fault: `target/bench-results/mutants.json` and
//! `mutants.md` (a table).
//!
//! - `SEMFUZZ_BENCH_MUTANTS=id1,id2`: only these faults.
//! - `SEMFUZZ_BENCH_MINUTES` (default 3): each campaign's length.
//! - `SEMFUZZ_BENCH_SEED` (default 2026): the campaigns' seed.
//! - `SEMFUZZ_BENCH_PARALLEL` (default 2): campaigns at a time (one core each).
//! - `SEMFUZZ_BENCH_VERIFY_ONLY=1`: verification only, no campaigns.
//! - `SEMFUZZ_BENCH_FUZZ_ARGS="--value-burst 16"`: more arguments for each campaign (to
//!   compare schedules), recorded with the results.
//! - `SEMFUZZ_BENCH_TAG=name`: results go to `mutants-name.json` and `mutants-name.md`.

mod common;
use common::stat;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use harness_py::PythonEnv;
use harness_py::overlay::{self, Patch};
use serde_json::{Value, json};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/mutants")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The classes a finding may name for `fault`: its own and those sharing its code.
fn classes(fault: &Value) -> Vec<String> {
    let mut c = vec![fault["class"].as_str().unwrap_or("").to_owned()];
    if let Some(also) = fault["also"].as_array() {
        c.extend(also.iter().filter_map(|a| a.as_str().map(str::to_owned)));
    }
    c
}

/// `semfuzz run --json` on `cases`, one report per case (in order), with `overlay` first
/// on the worker's path when given.
fn run_cases(bin: &Path, cases: &[PathBuf], overlay: Option<&Path>) -> Vec<Value> {
    let mut cmd = Command::new(bin);
    cmd.args(["run", "--json", "--modes", "eager"]).args(cases);
    cmd.env_remove("SEMFUZZ_OVERLAY").stderr(Stdio::null());
    if let Some(o) = overlay {
        cmd.env(overlay::OVERLAY_VAR, o);
    }
    let out = cmd.output().expect("semfuzz run");
    let reports: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    cases
        .iter()
        .map(|c| {
            reports
                .iter()
                .find(|r| r["case"].as_str() == Some(&c.to_string_lossy()))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect()
}

/// What a report says, for comparing a stock run with a planted one: the verdicts (kind,
/// layer) and TensorFlow's outputs.
fn verdicts(report: &Value) -> Vec<String> {
    report["verdicts"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .map(|v| format!("{}@{}", v["kind"], v["layer"]))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the planted run differs from the stock one, and how.
fn verify(stock: &Value, planted: &Value) -> (bool, String) {
    if planted.is_null() {
        return (false, "no report from the planted run".into());
    }
    let (s, p) = (verdicts(stock), verdicts(planted));
    if s != p {
        return (true, format!("verdicts {s:?} -> {p:?}"));
    }
    if stock["tensorflow"] != planted["tensorflow"] {
        // A change no verdict shows (within the layer's tolerance) is no fault to find.
        return (false, format!("outputs differ but not the verdicts {p:?}"));
    }
    (false, format!("same verdicts {p:?} and outputs"))
}

/// One condition of `when.config` on a config value.
fn meets(v: Option<&Value>, cond: &Value) -> bool {
    let Some(c) = cond.as_object() else {
        return true;
    };
    if let Some(p) = c.get("present").and_then(Value::as_bool)
        && p != v.is_some_and(|v| !v.is_null())
    {
        return false;
    }
    let Some(v) = v else {
        return !c.keys().any(|k| k != "present");
    };
    c.iter().all(|(k, want)| match k.as_str() {
        "present" => true,
        "equals" => v == want || (v.is_array() && v.as_array().unwrap().iter().all(|x| x == want)),
        "not" => v != want,
        "min" => nums_of(v)
            .iter()
            .any(|&x| want.as_f64().is_some_and(|w| x >= w)),
        "max" => nums_of(v)
            .iter()
            .any(|&x| want.as_f64().is_some_and(|w| x <= w)),
        "len_min" => v
            .as_array()
            .is_some_and(|a| a.len() as u64 >= want.as_u64().unwrap_or(0)),
        "differs" => {
            let n = nums_of(v);
            n.windows(2).any(|w| w[0] != w[1])
        }
        // Two given elements differ (a single number stands for all elements alike).
        "differs_at" => {
            let n = nums_of(v);
            let at = |i: usize| want[i].as_u64().and_then(|i| n.get(i as usize));
            matches!((at(0), at(1)), (Some(a), Some(b)) if a != b)
        }
        // Applied to one element by `meets_all`.
        "at" => true,
        "any" => v
            .as_array()
            .map(|a| a.iter().any(|x| meets(Some(x), want)))
            .unwrap_or_else(|| meets(Some(v), want)),
        _ => true,
    })
}

fn nums_of(v: &Value) -> Vec<f64> {
    match v {
        Value::Number(n) => n.as_f64().into_iter().collect(),
        Value::Array(a) => a.iter().flat_map(nums_of).collect(),
        _ => Vec::new(),
    }
}

/// Whether a `Dot`'s two axes name different dimensions of its two inputs (of ranks `ranks`),
/// resolved as Keras resolves them: a negative axis modulo its own input's rank, one integer
/// for both inputs. `[2, -1]` on rank-3 inputs names the same axis twice.
fn resolved_axes_differ(axes: &Value, ranks: &[u64]) -> bool {
    let [r0, r1] = ranks else {
        return false;
    };
    let resolve = |a: i64, r: u64| if a < 0 { a.rem_euclid(r as i64) } else { a };
    match axes {
        Value::Number(n) => n
            .as_i64()
            .is_some_and(|a| resolve(a, *r0) != resolve(a, *r1)),
        Value::Array(a) => match (
            a.first().and_then(Value::as_i64),
            a.get(1).and_then(Value::as_i64),
        ) {
            (Some(a0), Some(a1)) => resolve(a0, *r0) != resolve(a1, *r1),
            _ => false,
        },
        _ => false,
    }
}

/// Per key of `when.config`, whether `config` meets its condition (`at`: the condition's
/// other keys on one element of the value).
fn meets_all(config: &Value, conds: &serde_json::Map<String, Value>) -> Vec<(String, bool)> {
    conds
        .iter()
        .map(|(key, cond)| {
            let ok = if cond.get("at").is_some() {
                let rest: serde_json::Map<String, Value> = cond
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(k, _)| *k != "at")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let flat = nums_of(config.get(key).unwrap_or(&Value::Null));
                cond["at"]
                    .as_u64()
                    .and_then(|i| flat.get(i as usize))
                    .is_some_and(|x| meets(Some(&json!(x)), &Value::Object(rest)))
            } else {
                meets(config.get(key), cond)
            };
            (key.clone(), ok)
        })
        .collect()
}

/// What the campaign drew of the fault's classes: layers drawn, those meeting every
/// condition, and per unmet condition whether it is a value range.
struct Drawn {
    execs: usize,
    of_class: usize,
    meeting: usize,
    /// Of those meeting every condition: in a valid model that TensorFlow ran.
    meeting_ran: usize,
    /// Of those that ran: with a verdict at the layer a kept entry explained.
    meeting_known: usize,
    /// The conditions no drawn layer of the class met, with whether each is a range.
    never_met: Vec<(String, bool)>,
}

fn drawn(out: &Path, fault: &Value) -> Drawn {
    let wanted = classes(fault);
    let when = &fault["when"];
    let conds = when["config"].as_object().cloned().unwrap_or_default();
    let mut d = Drawn {
        execs: 0,
        of_class: 0,
        meeting: 0,
        meeting_ran: 0,
        meeting_known: 0,
        never_met: Vec::new(),
    };
    let mut met: BTreeMap<String, bool> = BTreeMap::new();
    let text = std::fs::read_to_string(out.join("drawn.jsonl")).unwrap_or_default();
    for line in text.lines() {
        let Ok(exec) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        d.execs += 1;
        let valid = exec["valid"].as_bool().unwrap_or(false);
        for l in exec["layers"].as_array().into_iter().flatten() {
            let class = l["class"].as_str().unwrap_or("");
            let inner = l["config"]["layer"]["class_name"].as_str().unwrap_or("");
            if !wanted.iter().any(|w| w == class || w == inner) {
                continue;
            }
            d.of_class += 1;
            let config = if wanted.iter().any(|w| w == class) {
                &l["config"]
            } else {
                &l["config"]["layer"]["config"]
            };
            let ranks: Vec<u64> = l["ranks"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            let mut all = true;
            let mut check = |name: &str, ok: bool| {
                *met.entry(name.to_owned()).or_default() |= ok;
                all &= ok;
            };
            for (key, ok) in meets_all(config, &conds) {
                check(&key, ok);
            }
            if let Some(r) = when["ranks"].as_array() {
                check("rank", ranks.iter().any(|x| r.contains(&json!(x))));
            }
            if let Some(m) = when["ranks_min"].as_u64() {
                check("rank", ranks.iter().any(|&x| x >= m));
            }
            if let Some(m) = when["inputs_min"].as_u64() {
                check("inputs", ranks.len() as u64 >= m);
            }
            // An input at position `n` or later whose tensor none of the inputs before it is
            // (what a merge of only its first `n` inputs misses).
            if let Some(n) = when["new_input_from"].as_u64() {
                let first_at: Vec<u64> = l["inputs_first_at"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_u64).collect())
                    .unwrap_or_default();
                let new_late = first_at
                    .iter()
                    .enumerate()
                    .any(|(i, &f)| i as u64 >= n && f == i as u64);
                check("inputs", new_late);
            }
            if when["axes_differ"].as_bool() == Some(true) {
                check("axes", resolved_axes_differ(&config["axes"], &ranks));
            }
            if when["ranks_differ"].as_bool() == Some(true) {
                check("rank", ranks.windows(2).any(|w| w[0] != w[1]));
            }
            if when["invalid"].as_bool() == Some(true) {
                check("an invalid model", !valid);
            }
            if all {
                d.meeting += 1;
                if valid && exec["tf"] == "ran" {
                    d.meeting_ran += 1;
                    let known = l["verdicts"]
                        .as_array()
                        .is_some_and(|vs| vs.iter().any(|v| v["known"] == true));
                    d.meeting_known += usize::from(known);
                }
            }
        }
    }
    let range = |key: &str| {
        matches!(key, "rank" | "inputs")
            || conds.get(key).is_some_and(|c| {
                let c = c.get("any").unwrap_or(c);
                c.get("min").is_some() || c.get("max").is_some()
            })
    };
    d.never_met = met
        .iter()
        .filter(|(_, ok)| !**ok)
        .map(|(k, _)| (k.clone(), range(k)))
        .collect();
    d
}

/// The conditions of a fault's `when`, by name.
fn conds_named(fault: &Value) -> Vec<String> {
    let when = &fault["when"];
    let mut names: Vec<String> = when["config"]
        .as_object()
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default();
    if ["ranks", "ranks_min", "ranks_differ"]
        .iter()
        .any(|k| when.get(*k).is_some())
    {
        names.push("rank".into());
    }
    if when.get("inputs_min").is_some() || when.get("new_input_from").is_some() {
        names.push("inputs".into());
    }
    if when.get("axes_differ").is_some() {
        names.push("axes".into());
    }
    if when["invalid"] == true {
        names.push("an invalid model".into());
    }
    names
}

/// The campaign's findings at the fault's classes: (signature, first_seen), and all
/// findings' signatures.
fn findings(out: &Path, fault: &Value) -> (Vec<(String, u64)>, Vec<String>) {
    let wanted = classes(fault);
    let (mut hits, mut all) = (Vec::new(), Vec::new());
    let root = out.join("findings");
    for verdict in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(verdict.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let Ok(text) = std::fs::read_to_string(f.path().join("outcome.json")) else {
                continue;
            };
            let Ok(o) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let sig = o["signature"].as_str().unwrap_or("").to_owned();
            // A finding without a layer (about the whole model) is at no class.
            let class = o["class"].as_str().unwrap_or_default().to_owned();
            if wanted.contains(&class) {
                hits.push((sig.clone(), o["first_seen"].as_u64().unwrap_or(0)));
            }
            all.push(sig);
        }
    }
    (hits, all)
}

/// Kept bugs that explained verdicts at the fault's classes: (entry, count).
fn explained(out: &Path, fault: &Value) -> Vec<(String, u64)> {
    let wanted = classes(fault);
    let known: Value = std::fs::read_to_string(out.join("known.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    known
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, e)| {
            let class = e["example"].as_str().and_then(|s| s.split('/').nth(1));
            class.is_some_and(|c| wanted.iter().any(|w| w == c))
        })
        .map(|(id, e)| (id.clone(), e["count"].as_u64().unwrap_or(0)))
        .collect()
}

/// One fault from planting to its result.
fn bench_fault(ctx: &Ctx, fault: &Value, stock: &Value) -> Value {
    let id = fault["id"].as_str().unwrap_or("?");
    let dir = ctx.work.join(id);
    let _ = std::fs::remove_dir_all(&dir);
    let patch: Patch = serde_json::from_value(json!({
        "file": fault["file"], "find": fault["find"], "replace": fault["replace"]
    }))
    .expect("a patch");
    let mut result = json!({
        "id": id, "class": fault["class"], "family": fault["family"],
        "needs": fault["needs"], "file": fault["file"],
    });
    let overlay_dir = dir.join("overlay");
    if let Err(e) = overlay::plant(&ctx.env, &overlay_dir, &[patch]) {
        result["verified"] = json!(false);
        result["verification"] = json!(format!("cannot plant: {e}"));
        return result;
    }
    let case = here().join("cases").join(format!("{id}.case.json"));
    let planted = run_cases(&ctx.bin, &[case], Some(&overlay_dir)).remove(0);
    let (ok, how) = verify(stock, &planted);
    result["verified"] = json!(ok);
    result["verification"] = json!(how);
    if !ok || ctx.verify_only {
        let _ = std::fs::remove_dir_all(&dir);
        return result;
    }
    let out = dir.join("out");
    let started = Instant::now();
    let status = Command::new(&ctx.bin)
        .args(["fuzz", "--no-status", "-q", "--seed", &ctx.seed.to_string()])
        .args(["--minutes", &ctx.minutes.to_string()])
        .args(&ctx.fuzz_args)
        .arg("--out")
        .arg(&out)
        .arg("--seeds")
        .arg(repo().join("seeds"))
        .env(overlay::OVERLAY_VAR, &overlay_dir)
        .env("SEMFUZZ_DRAWN", out.join("drawn.jsonl"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let seconds = started.elapsed().as_secs_f64();
    let campaign: Value = std::fs::read_to_string(out.join("campaign.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let start = campaign["runs"][0]["started"].as_u64().unwrap_or(0);
    let (hits, all) = findings(&out, fault);
    let kept = explained(&out, fault);
    let d = drawn(&out, fault);
    result["campaign"] = json!({
        "seconds": seconds,
        "exit": status.map(|s| s.code()).ok().flatten(),
        "execs": stat(&out, "execs_done"),
        "known_execs": stat(&out, "known_execs"),
        "held_model_percent": stat(&out, "held_model_percent"),
        "findings": all,
        "drawn_execs": d.execs,
        "class_draws": d.of_class,
        "draws_meeting_needs": d.meeting,
        "draws_meeting_needs_ran": d.meeting_ran,
        "kept_bugs_at_class": kept.iter().map(|(k, n)| json!({"entry": k, "count": n})).collect::<Vec<_>>(),
    });
    result["found"] = json!(!hits.is_empty());
    if let Some(first) = hits.iter().map(|h| h.1).min() {
        result["seconds_to_first"] = json!(first.saturating_sub(start));
        result["found_as"] = json!(hits.iter().map(|h| h.0.clone()).collect::<Vec<_>>());
    } else {
        let data = fault["when"]["data"].as_str();
        result["miss"] = json!(if d.execs == 0 {
            "no record of what was drawn".to_owned()
        } else if d.of_class == 0 {
            "class never drawn".to_owned()
        } else if d.meeting == 0 && d.never_met.iter().any(|(_, range)| *range) {
            let what: Vec<&str> = d.never_met.iter().map(|(k, _)| k.as_str()).collect();
            format!("value range never reached ({})", what.join(", "))
        } else if d.meeting == 0 && d.never_met.is_empty() {
            let what: Vec<String> = conds_named(fault);
            format!(
                "combination never drawn ({} each drawn, never together)",
                what.join(", ")
            )
        } else if d.meeting == 0 {
            let what: Vec<&str> = d.never_met.iter().map(|(k, _)| k.as_str()).collect();
            format!("argument value never drawn ({})", what.join(", "))
        } else if d.meeting_ran == 0 {
            format!(
                "never ran: {} draws met the needs, none in a valid model TensorFlow ran",
                d.meeting
            )
        } else if d.meeting_known > 0 && !kept.is_empty() {
            // A kept entry explained verdicts on draws that met the needs.
            format!("explained by a kept bug ({})", kept[0].0)
        } else if let Some(data) = data {
            format!("judged agree: the data it needs ({data}) never came in the draws")
        } else {
            format!(
                "judged agree ({} draws met the needs, {} ran, {} of those with a kept bug's verdict)",
                d.meeting, d.meeting_ran, d.meeting_known
            )
        });
    }
    let _ = std::fs::remove_dir_all(&overlay_dir);
    result
}

struct Ctx {
    bin: PathBuf,
    /// More arguments for `semfuzz fuzz`.
    fuzz_args: Vec<String>,
    env: PythonEnv,
    work: PathBuf,
    minutes: f64,
    seed: u64,
    verify_only: bool,
}

fn table(results: &[Value], ctx: &Ctx) -> String {
    let verified: Vec<&Value> = results.iter().filter(|r| r["verified"] == true).collect();
    let ran: Vec<&&Value> = verified
        .iter()
        .filter(|r| r.get("found").is_some())
        .collect();
    let found = ran.iter().filter(|r| r["found"] == true).count();
    let mut s = format!(
        "# Planted-bug benchmark\n\n{} faults done, {} verified, {} campaigns ({} min each, seed {}{}): **{} found ({:.0}%)**\n\n",
        results.len(),
        verified.len(),
        ran.len(),
        ctx.minutes,
        ctx.seed,
        if ctx.fuzz_args.is_empty() {
            String::new()
        } else {
            format!(", `{}`", ctx.fuzz_args.join(" "))
        },
        found,
        100.0 * found as f64 / (ran.len().max(1)) as f64
    );
    s.push_str("| fault | class | family | needs | verified | found | s to first | execs | why missed |\n|---|---|---|---|---|---|---|---|---|\n");
    for r in results {
        let c = &r["campaign"];
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r["id"].as_str().unwrap_or(""),
            r["class"].as_str().unwrap_or(""),
            r["family"].as_str().unwrap_or(""),
            r["needs"].as_str().unwrap_or(""),
            if r["verified"] == true {
                "yes".to_owned()
            } else {
                format!("no: {}", r["verification"].as_str().unwrap_or(""))
            },
            match r.get("found") {
                Some(Value::Bool(true)) => "yes",
                Some(_) => "no",
                None => "",
            },
            r["seconds_to_first"]
                .as_u64()
                .map(|s| s.to_string())
                .unwrap_or_default(),
            c["execs"]
                .as_f64()
                .map(|e| format!("{e:.0}"))
                .unwrap_or_default(),
            r["miss"].as_str().unwrap_or(""),
        ));
    }
    s
}

fn main() {
    let minutes: f64 = env_or("SEMFUZZ_BENCH_MINUTES", 3.0);
    let seed: u64 = env_or("SEMFUZZ_BENCH_SEED", 2026);
    let parallel: usize = env_or("SEMFUZZ_BENCH_PARALLEL", 2usize).max(1);
    let verify_only = std::env::var("SEMFUZZ_BENCH_VERIFY_ONLY").is_ok_and(|v| v == "1");
    let catalogue: Value =
        serde_json::from_str(&std::fs::read_to_string(here().join("faults.json")).unwrap())
            .expect("faults.json");
    let mut faults: Vec<Value> = catalogue["faults"].as_array().cloned().unwrap_or_default();
    if let Ok(only) = std::env::var("SEMFUZZ_BENCH_MUTANTS") {
        let only: Vec<&str> = only.split(',').map(str::trim).collect();
        faults.retain(|f| only.contains(&f["id"].as_str().unwrap_or("")));
    }
    let results_dir = repo().join("target/bench-results");
    std::fs::create_dir_all(&results_dir).expect("results dir");
    // A copy of the binary: a rebuild during the run does not change what runs.
    let scratch = tempfile::tempdir().expect("temp dir");
    let bin = scratch.path().join("semfuzz");
    std::fs::copy(env!("CARGO_BIN_EXE_semfuzz"), &bin).expect("copy of semfuzz");
    let python = PythonEnv::select(None).expect("the project's environment (make setup)");
    let fuzz_args: Vec<String> = std::env::var("SEMFUZZ_BENCH_FUZZ_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let tag = std::env::var("SEMFUZZ_BENCH_TAG")
        .ok()
        .filter(|t| !t.is_empty())
        .map_or_else(|| "mutants".to_owned(), |t| format!("mutants-{t}"));
    let ctx = Ctx {
        bin,
        fuzz_args,
        env: PythonEnv::probe(&python).expect("probe the environment"),
        work: scratch.path().join("work"),
        minutes,
        seed,
        verify_only,
    };
    eprintln!(
        "mutants: {} faults, {minutes} min campaigns, seed {seed}, {parallel} at a time",
        faults.len()
    );
    let cases: Vec<PathBuf> = faults
        .iter()
        .map(|f| {
            here()
                .join("cases")
                .join(format!("{}.case.json", f["id"].as_str().unwrap_or("")))
        })
        .collect();
    let stock = run_cases(&ctx.bin, &cases, None);
    let queue = Mutex::new(faults.iter().zip(&stock).collect::<VecDeque<_>>());
    let results: Mutex<Vec<Value>> = Mutex::new(Vec::new());
    let write = |results: &[Value]| {
        let summary = json!({
            "minutes": minutes, "seed": seed, "fuzz_args": ctx.fuzz_args, "faults": results,
        });
        let _ = std::fs::write(
            results_dir.join(format!("{tag}.json")),
            serde_json::to_string_pretty(&summary).unwrap(),
        );
        let _ = std::fs::write(results_dir.join(format!("{tag}.md")), table(results, &ctx));
    };
    std::thread::scope(|s| {
        for _ in 0..parallel {
            s.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().pop_front();
                    let Some((fault, stock)) = next else { break };
                    let r = bench_fault(&ctx, fault, stock);
                    eprintln!(
                        "{}: verified {} found {} {}",
                        r["id"].as_str().unwrap_or(""),
                        r["verified"],
                        r.get("found").unwrap_or(&Value::Null),
                        r["miss"]
                            .as_str()
                            .or(r["verification"].as_str())
                            .unwrap_or("")
                    );
                    let mut all = results.lock().unwrap();
                    all.push(r);
                    write(&all);
                }
            });
        }
    });
    let all = results.into_inner().unwrap();
    write(&all);
    println!("{}", table(&all, &ctx));
}

//! `semfuzz bisect`: replays findings on a range of Keras releases, each with its TensorFlow
//! in its own cached environment (`scripts/target_env.sh`, made on first use), and says in
//! which releases each reproduces. `--write-releases` writes that into a kept bug's
//! `kept.json`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use harness_py::target::release;
use serde_json::{Value, json};

use super::matrix::{Matrix, MatrixRow, Span};
use super::{Plan, Source, discover, replay_everywhere};
use crate::cli::{BisectArgs, PythonArgs, SuppressionArgs};
use crate::exit::{Failure, Outcome};

/// Each Keras minor release, the TensorFlow that goes with it, and its last patch release.
const TARGETS: &str = include_str!("../../../../python/targets.tsv");
/// The pinned environment's lock: the release it holds needs no environment of its own.
const LOCK: &str = include_str!("../../../../python/requirements.lock");

/// A Keras release and the TensorFlow release set up with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    pub keras: String,
    pub tensorflow: String,
}

/// Rows of `targets.tsv`: (minor, tensorflow, last patch).
fn table() -> Vec<(&'static str, &'static str, &'static str)> {
    TARGETS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            match f[..] {
                [minor, tf, last] if minor != "keras" => Some((minor, tf, last)),
                _ => None,
            }
        })
        .collect()
}

fn is_release(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The releases `--keras` names: `A..B` (the last patch of every minor from A's to B's) or
/// a list `3.3.3,3.15.1`, each with its TensorFlow from the table.
pub fn releases(spec: &str) -> Result<Vec<Pair>, Failure> {
    let table = table();
    let bad = |why: &str| Failure::usage(format!("--keras {spec}: {why}"));
    let tf_of = |keras: &str| -> Result<String, Failure> {
        let minor: Vec<&str> = keras.split('.').take(2).collect();
        let minor = minor.join(".");
        table
            .iter()
            .find(|(m, _, _)| *m == minor)
            .map(|(_, tf, _)| (*tf).to_owned())
            .ok_or_else(|| {
                bad(&format!(
                    "Keras {minor} is not in python/targets.tsv (releases 3.0 to {})",
                    table.last().map_or("?", |r| r.0)
                ))
            })
    };
    if let Some((lo, hi)) = spec.split_once("..") {
        for end in [lo, hi] {
            if !is_release(end) {
                return Err(bad(&format!(
                    "`{end}` is not a release such as 3.3 or 3.3.3"
                )));
            }
        }
        let (lo, hi) = (release(lo), release(hi));
        let pairs: Vec<Pair> = table
            .iter()
            .filter(|(_, _, last)| {
                let v = release(last);
                v[..lo.len().min(v.len())] >= lo[..] && v[..hi.len().min(v.len())] <= hi[..]
            })
            .map(|(_, tf, last)| Pair {
                keras: (*last).to_owned(),
                tensorflow: (*tf).to_owned(),
            })
            .collect();
        if pairs.is_empty() {
            return Err(bad("no release in this range"));
        }
        return Ok(pairs);
    }
    let mut pairs = Vec::new();
    for keras in spec.split(',').map(str::trim) {
        if !is_release(keras) || keras.split('.').count() != 3 {
            return Err(bad(&format!("`{keras}` is not a release such as 3.3.3")));
        }
        pairs.push(Pair {
            keras: keras.to_owned(),
            tensorflow: tf_of(keras)?,
        });
    }
    pairs.sort_by_key(|p| release(&p.keras));
    pairs.dedup();
    Ok(pairs)
}

/// The release pinned in `python/requirements.lock` (`keras==`, `tensorflow_cpu==`).
fn pinned() -> Option<Pair> {
    let pin = |name: &str| {
        LOCK.lines().find_map(|l| {
            l.trim()
                .strip_prefix(name)
                .and_then(|r| r.strip_prefix("=="))
                .map(|v| v.split_whitespace().next().unwrap_or("").to_owned())
        })
    };
    Some(Pair {
        keras: pin("keras")?,
        tensorflow: pin("tensorflow_cpu").or_else(|| pin("tensorflow-cpu"))?,
    })
}

/// The folder holding `scripts/target_env.sh`: the current one, else the project semfuzz
/// was built from.
fn project_root() -> Result<PathBuf, Failure> {
    let here = std::env::current_dir().ok();
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned);
    here.into_iter()
        .chain(built)
        .find(|d| d.join("scripts/target_env.sh").is_file())
        .ok_or_else(|| {
            Failure::usage(
                "bisect needs the semfuzz project (scripts/target_env.sh): run it from the project's folder",
            )
        })
}

/// The environment of one release: the project's own for the pinned release, else the
/// cached one `scripts/target_env.sh` makes (a few minutes the first time).
fn environment(pair: &Pair, root: &Path) -> Result<PythonArgs, Failure> {
    if pinned().as_ref() == Some(pair) {
        return Ok(PythonArgs::default());
    }
    eprintln!(
        "semfuzz: environment for Keras {} / TensorFlow {}",
        pair.keras, pair.tensorflow
    );
    let out = Command::new("bash")
        .arg(root.join("scripts/target_env.sh"))
        .current_dir(root)
        .env("KERAS", &pair.keras)
        .env("TF", &pair.tensorflow)
        .env("TARGET", "")
        .env("PRINT", "interpreter")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Failure::failed(format!("cannot run scripts/target_env.sh: {e}")))?;
    if !out.status.success() {
        return Err(Failure::failed(format!(
            "no environment for Keras {} / TensorFlow {} (scripts/target_env.sh exited {})",
            pair.keras, pair.tensorflow, out.status
        )));
    }
    let python = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Ok(PythonArgs {
        python: Some(PathBuf::from(python)),
        ..Default::default()
    })
}

fn sources(targets: &[PathBuf]) -> Result<Vec<Source>, Failure> {
    let mut all = Vec::new();
    for t in targets {
        if t.is_file() {
            all.push(Source::Case(t.clone()));
        } else {
            all.extend(discover(t).map_err(|e| Failure::usage(e.to_string()))?);
        }
    }
    Ok(all)
}

pub fn run(args: &BisectArgs) -> Result<Outcome, Failure> {
    let pairs = releases(&args.keras)?;
    let sources = sources(&args.targets)?;
    let root = project_root()?;
    let envs = pairs
        .iter()
        .map(|p| environment(p, &root))
        .collect::<Result<Vec<_>, _>>()?;
    // Kept bugs are asked about too: nothing explains a verdict away.
    let plan = Plan {
        replays: 1,
        minimize: None,
        suppressions: SuppressionArgs {
            suppressions: Vec::new(),
            no_builtin_suppressions: true,
        },
    };
    let everywhere = replay_everywhere(&envs, &sources, &plan)?;
    let matrix = &everywhere.matrix;
    print!("{}", matrix.text());
    let report = args
        .report
        .clone()
        .unwrap_or_else(|| PathBuf::from("bisect.md"));
    let text = format!(
        "# semfuzz bisect\n\nKeras {}, each with its TensorFlow; every verdict reported (no suppressions).\n\n{}",
        args.keras,
        matrix.markdown()
    );
    fs::write(&report, text)
        .map_err(|e| Failure::failed(format!("cannot write {}: {e}", report.display())))?;
    println!("report: {}", report.display());
    if args.write_releases {
        for row in &matrix.rows {
            write_releases(matrix, row)?;
        }
    }
    let shows = matrix.rows.iter().any(|r| !matches!(r.span(), Span::Never));
    Ok(if shows {
        Outcome::Found
    } else {
        Outcome::Clean
    })
}

/// The release ranges a row's span gives a kept entry: Keras from the first release that
/// shows it, before the first later one that does not; TensorFlow from the first one's.
pub fn ranges(matrix: &Matrix, row: &MatrixRow) -> Option<Value> {
    let Span::Between { first, after, .. } = row.span() else {
        return None;
    };
    let mut keras = json!({"from": matrix.columns[first].keras});
    if let Some(a) = after {
        keras["before"] = json!(matrix.columns[a].keras);
    }
    Some(json!({
        "keras": keras,
        "tensorflow": {"from": matrix.columns[first].tensorflow},
    }))
}

fn write_releases(matrix: &Matrix, row: &MatrixRow) -> Result<(), Failure> {
    let kept = Path::new(&row.source).join("kept.json");
    if !kept.is_file() {
        return Ok(());
    }
    let Some(releases) = ranges(matrix, row) else {
        eprintln!(
            "semfuzz: {}: {}; kept.json left as it is",
            row.source,
            matrix.span_text(row)
        );
        return Ok(());
    };
    let failed = |e: String| Failure::failed(format!("{}: {e}", kept.display()));
    let text = fs::read_to_string(&kept).map_err(|e| failed(e.to_string()))?;
    let mut entry: Value = serde_json::from_str(&text).map_err(|e| failed(e.to_string()))?;
    entry["releases"] = releases;
    let mut out = serde_json::to_string_pretty(&entry).map_err(|e| failed(e.to_string()))?;
    out.push('\n');
    fs::write(&kept, out).map_err(|e| failed(e.to_string()))?;
    println!(
        "{}: releases {}",
        kept.display(),
        serde_json::to_string(&entry["releases"]).unwrap_or_default()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::triage::Status;
    use crate::commands::triage::matrix::Column;

    #[test]
    fn a_range_of_minors_takes_each_last_patch_with_its_tensorflow() {
        let p = releases("3.3..3.5").unwrap();
        let k: Vec<(&str, &str)> = p
            .iter()
            .map(|p| (p.keras.as_str(), p.tensorflow.as_str()))
            .collect();
        assert_eq!(
            k,
            [
                ("3.3.3", "2.16.2"),
                ("3.4.1", "2.16.2"),
                ("3.5.0", "2.17.1")
            ]
        );
        assert_eq!(releases("3.0..3.15").unwrap().len(), 16);
        assert_eq!(releases("3.13.2..3.15.1").unwrap().len(), 3);
        let listed = releases("3.15.1, 3.3.3").unwrap();
        assert_eq!(listed[0].keras, "3.3.3");
        assert_eq!(listed[1].tensorflow, "2.21.0");
    }

    #[test]
    fn bad_ranges_are_usage_errors_naming_the_argument() {
        for bad in ["3.x..3.5", "2.0..2.9", "3.3", "3.99.0", "", "3.3..3.4..3.5"] {
            let e = releases(bad).expect_err(bad);
            assert_eq!(e.outcome, Outcome::Usage, "{bad}");
            assert!(e.message.contains("--keras"), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn the_pinned_release_is_read_from_the_lock() {
        let p = pinned().expect("the lock pins keras and tensorflow");
        assert!(release(&p.keras) >= release("3.0.0"));
        assert!(release(&p.tensorflow) >= release("2.16.0"));
    }

    #[test]
    fn a_kept_entry_gets_the_releases_that_show_it() {
        let col = |k: &str, tf: &str| Column {
            keras: k.to_owned(),
            tensorflow: tf.to_owned(),
            environment: String::new(),
        };
        let m = Matrix {
            columns: vec![
                col("3.3.3", "2.16.2"),
                col("3.9.2", "2.19.1"),
                col("3.15.1", "2.21.0"),
            ],
            rows: Vec::new(),
        };
        let row = |cells: Vec<Status>| MatrixRow {
            source: String::new(),
            signature: String::new(),
            cells: cells.into_iter().map(Some).collect(),
        };
        use Status::*;
        let fixed = row(vec![Reproduces, Reproduces, NoLongerReproduces]);
        assert_eq!(
            ranges(&m, &fixed),
            Some(
                json!({"keras": {"from": "3.3.3", "before": "3.15.1"}, "tensorflow": {"from": "2.16.2"}})
            )
        );
        let new = row(vec![Agrees, Reproduces, Reproduces]);
        assert_eq!(
            ranges(&m, &new),
            Some(json!({"keras": {"from": "3.9.2"}, "tensorflow": {"from": "2.19.1"}}))
        );
        assert_eq!(ranges(&m, &row(vec![Reproduces, Agrees, Reproduces])), None);
    }
}

//! `semfuzz export CASE --format py|keras -o PATH`: the case as a standalone Python script,
//! or as a `.keras` file saved by Keras itself (through the worker) with the case's inputs in
//! an `.npz` beside it. A script's exit status for an invalid model follows the finding's
//! verdict (`--verdict`, else the `outcome.json` beside the case).

use std::path::Path;

use crate::cli::ExportArgs;
use crate::exit::{Failure, Outcome};
use crate::keras_case::{is_keras, write_inputs_beside};

pub fn run(args: &ExportArgs) -> Result<Outcome, Failure> {
    let case = super::read_cases(std::slice::from_ref(&args.case))?.remove(0);
    match args.format.as_str() {
        "py" => {
            let verdict = match args.verdict {
                Some(kind) => Some(kind),
                None => verdict_beside(&args.case)?,
            };
            let script = harness_py::export::finding_script(
                &case,
                &args.case.display().to_string(),
                args.python.backend,
                verdict,
            );
            std::fs::write(&args.output, script).map_err(|e| {
                Failure::failed(format!("{}: cannot write: {e}", args.output.display()))
            })?;
            Ok(Outcome::Clean)
        }
        "keras" => {
            if !is_keras(&args.output) {
                return Err(Failure::usage(format!(
                    "-o {}: Keras saves models only to files named *.keras",
                    args.output.display()
                )));
            }
            let mut harness = super::harness(&args.python)?;
            harness
                .save_keras(
                    &case,
                    &args.output,
                    harness_py::keras_file::KERAS_FILE_LIMITS,
                )
                .map_err(super::keras_failure)?;
            let npz = write_inputs_beside(&args.output, &case)
                .map_err(|e| Failure::failed(e.to_string()))?;
            match npz {
                Some(npz) => println!(
                    "wrote {} and its inputs {}; run it with `semfuzz run {} --inputs {}`",
                    args.output.display(),
                    npz.display(),
                    args.output.display(),
                    npz.display()
                ),
                None => println!("wrote {}", args.output.display()),
            }
            Ok(Outcome::Clean)
        }
        other => Err(Failure::usage(format!(
            "--format {other}: expected `py` or `keras`"
        ))),
    }
}

/// The verdict in the `outcome.json` beside `case` (a findings or crashes/ folder's), if there
/// is one and it names a verdict.
fn verdict_beside(case: &Path) -> Result<Option<judge::Kind>, Failure> {
    let path = case.with_file_name("outcome.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let outcome: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Failure::usage(format!("{}: not JSON: {e}", path.display())))?;
    match outcome.get("verdict").and_then(|v| v.as_str()) {
        Some(name) => crate::cli::parse_verdict(name)
            .map(Some)
            .map_err(|e| Failure::usage(format!("{}: verdict {e}", path.display()))),
        None => Ok(None),
    }
}

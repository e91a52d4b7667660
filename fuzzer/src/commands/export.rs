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
            let finding = beside(&args.case)?;
            let verdict = args.verdict.or(finding.verdict);
            let modes = if args.modes.is_empty() {
                harness_py::export::finding_modes(finding.verdict, finding.mode, &finding.modes)
            } else {
                args.modes.clone()
            };
            let backend = args.python.backend;
            if let Some(mode) = modes
                .iter()
                .find(|m| !harness_py::Mode::of(backend).contains(m))
            {
                return Err(Failure::usage(format!(
                    "--modes {}: not a mode of the {backend} backend (it has {})",
                    mode.name(),
                    harness_py::Mode::of(backend)
                        .iter()
                        .map(|m| m.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            let script = harness_py::export::finding_script(
                &case,
                &args.case.display().to_string(),
                backend,
                verdict,
                &modes,
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

/// What the `outcome.json` beside a case (a findings or crashes/ folder's) says of its
/// finding, where there is one.
#[derive(Default)]
struct Finding {
    verdict: Option<judge::Kind>,
    /// The verdict's mode.
    mode: Option<harness_py::Mode>,
    /// Every mode the case ran in.
    modes: Vec<harness_py::Mode>,
}

fn beside(case: &Path) -> Result<Finding, Failure> {
    let path = case.with_file_name("outcome.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(Finding::default());
    };
    let outcome: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Failure::usage(format!("{}: not JSON: {e}", path.display())))?;
    let verdict = match outcome.get("verdict").and_then(|v| v.as_str()) {
        Some(name) => Some(
            crate::cli::parse_verdict(name)
                .map_err(|e| Failure::usage(format!("{}: verdict {e}", path.display())))?,
        ),
        None => None,
    };
    let mode = |name: &str| {
        name.parse::<harness_py::Mode>()
            .map_err(|e| Failure::usage(format!("{}: mode `{name}`: {e}", path.display())))
    };
    let modes = outcome
        .get("modes")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|m| m.as_str()).map(mode).collect())
        .transpose()?
        .unwrap_or_default();
    Ok(Finding {
        verdict,
        mode: outcome
            .get("mode")
            .and_then(|v| v.as_str())
            .map(mode)
            .transpose()?,
        modes,
    })
}

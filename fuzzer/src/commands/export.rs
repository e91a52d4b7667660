//! `semfuzz export CASE --format py|keras -o PATH`: the case as a standalone Python script,
//! or as a `.keras` file saved by Keras itself (through the worker) with the case's inputs in
//! an `.npz` beside it.

use crate::cli::ExportArgs;
use crate::exit::{Failure, Outcome};
use crate::keras_case::{is_keras, write_inputs_beside};

pub fn run(args: &ExportArgs) -> Result<Outcome, Failure> {
    let case = super::read_cases(std::slice::from_ref(&args.case))?.remove(0);
    match args.format.as_str() {
        "py" => {
            let script = harness_py::export::python_script(
                &case,
                &args.case.display().to_string(),
                args.python.backend,
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

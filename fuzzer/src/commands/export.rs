//! `semfuzz export CASE --format py -o PATH`: the case as a standalone Python script.

use crate::cli::ExportArgs;
use crate::exit::{Failure, Outcome};

pub fn run(args: &ExportArgs) -> Result<Outcome, Failure> {
    let case = super::read_cases(std::slice::from_ref(&args.case))?.remove(0);
    match args.format.as_str() {
        "py" => {
            let script = harness_py::export::python_script(&case, &args.case.display().to_string());
            std::fs::write(&args.output, script).map_err(|e| {
                Failure::failed(format!("{}: cannot write: {e}", args.output.display()))
            })?;
            Ok(Outcome::Clean)
        }
        "keras" => Outcome::not_built("export --format keras"),
        other => Err(Failure::usage(format!(
            "--format {other}: expected `py` or `keras`"
        ))),
    }
}

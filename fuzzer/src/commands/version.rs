//! `semfuzz version`: semfuzz's version, and Python's, TensorFlow's and Keras's as the
//! worker sees them.

use harness_py::{Worker, WorkerCommand};

use crate::cli::PythonArgs;
use crate::exit::{Failure, Outcome};

pub fn run(args: &PythonArgs) -> Result<Outcome, Failure> {
    println!("semfuzz {}", env!("CARGO_PKG_VERSION"));
    let env = super::python_env(args)?;
    let cmd = WorkerCommand::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find the semfuzz executable: {e}")))?;
    let mut worker = Worker::spawn(&cmd, &env).map_err(|e| Failure::failed(e.to_string()))?;
    let v = worker.hello().map_err(|e| Failure::failed(e.to_string()))?;
    println!("python {}", v.python);
    println!("tensorflow {}", v.tensorflow);
    println!("keras {}", v.keras);
    println!("numpy {}", v.numpy);
    println!("environment {}", v.environment);
    Ok(Outcome::Clean)
}

//! `semfuzz version`: semfuzz's version, and Python's, TensorFlow's and Keras's as the
//! worker sees them, with Keras's backend and how many layer classes the target has.

use crate::cli::PythonArgs;
use crate::exit::{Failure, Outcome};

pub fn run(args: &PythonArgs) -> Result<Outcome, Failure> {
    println!("semfuzz {}", env!("CARGO_PKG_VERSION"));
    let env = super::python_env(args)?;
    let cmd = super::worker_command(args)?;
    let target = super::target_info(&cmd, &env)?;
    let v = &target.versions;
    println!("python {}", v.python);
    println!("tensorflow {}", v.tensorflow);
    println!("keras {}", v.keras);
    println!("numpy {}", v.numpy);
    println!("backend {}", v.backend);
    for (name, version) in [("jax", &v.jax), ("torch", &v.torch)] {
        if let Some(version) = version {
            println!("{name} {version}");
        }
    }
    if let Some(on) = v.onednn {
        println!("onednn {}", if on { "on" } else { "off" });
    }
    println!("layer classes {}", target.offers.layers.len());
    println!("environment {}", v.environment);
    Ok(Outcome::Clean)
}

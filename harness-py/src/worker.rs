//! The worker process: embeds CPython, activates the selected environment, imports
//! TensorFlow, and answers frames on stdin/stdout until stdin closes.
//!
//! Python code may print; so that nothing it writes can corrupt a frame, the protocol uses
//! a private copy of the original stdout and file descriptor 1 is pointed at stderr.

use std::ffi::CString;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::fd::FromRawFd;
use std::process::ExitCode;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyModule};
use serde_json::json;

use crate::client::WORKER_ENV_VAR;
use crate::env::PythonEnv;
use crate::protocol::{Frame, read_frame, write_frame};

/// The Python half of the worker, compiled into the binary.
const WORKER_PY: &str = include_str!("../python/semfuzz_worker.py");

/// Runs the worker loop. Returns when the client closes stdin.
pub fn main() -> ExitCode {
    let (mut input, mut output) = match protocol_streams() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("semfuzz worker: cannot set up its pipes: {e}");
            return ExitCode::from(70);
        }
    };
    // Ctrl-C reaches the whole process group; the client decides when the worker stops.
    // Python keeps an ignored SIGINT ignored.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    let env: Result<PythonEnv, String> = std::env::var(WORKER_ENV_VAR)
        .map_err(|_| format!("{WORKER_ENV_VAR} is not set; the worker is started by semfuzz"))
        .and_then(|s| serde_json::from_str(&s).map_err(|e| format!("{WORKER_ENV_VAR}: {e}")));

    Python::initialize();
    Python::attach(|py| {
        let module = env.and_then(|env| load(py, &env).map_err(|e| describe(py, &e)));
        loop {
            let frame = match read_frame(&mut input) {
                Ok(Some(f)) => f,
                Ok(None) => return ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("semfuzz worker: bad frame from the client: {e}");
                    return ExitCode::from(65);
                }
            };
            let started = std::time::Instant::now();
            let mut answer = match &module {
                Ok(m) => handle(py, m, &frame)
                    .unwrap_or_else(|e| error_frame("WorkerError", &describe(py, &e))),
                Err(setup) => error_frame("EnvironmentError", setup),
            };
            if let Some(h) = answer.header.as_object_mut() {
                h.insert(
                    "worker_seconds".into(),
                    json!(started.elapsed().as_secs_f64()),
                );
            }
            if write_frame(&mut output, &answer).is_err() {
                return ExitCode::from(74);
            }
        }
    })
}

/// A private reader of stdin and writer of the original stdout; fd 1 then goes to stderr.
fn protocol_streams() -> std::io::Result<(BufReader<File>, BufWriter<File>)> {
    unsafe {
        let out = libc::dup(1);
        if out < 0 || libc::dup2(2, 1) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let input = libc::dup(0);
        if input < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((
            BufReader::new(File::from_raw_fd(input)),
            BufWriter::new(File::from_raw_fd(out)),
        ))
    }
}

/// Checks the interpreter, activates the environment and imports the worker module (which
/// imports TensorFlow).
fn load<'py>(py: Python<'py>, env: &PythonEnv) -> PyResult<Bound<'py, PyModule>> {
    let v = py.version_info();
    let embedded = format!("{}.{}", v.major, v.minor);
    if embedded != env.version {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "the environment `{}` is Python {}, but the worker embeds Python {embedded}; rebuild semfuzz against it",
            env.python.display(),
            env.version
        )));
    }
    let code = CString::new(WORKER_PY).expect("the worker source has no NUL byte");
    let module = PyModule::from_code(py, &code, c"semfuzz_worker.py", c"semfuzz_worker")?;
    module.call_method1(
        "setup",
        (
            env.python.to_string_lossy().into_owned(),
            env.sys_path.clone(),
        ),
    )?;
    Ok(module)
}

/// Hands one request to the Python side: `handle(header_json, payload) -> (header_json, payload)`.
fn handle(py: Python<'_>, module: &Bound<'_, PyModule>, frame: &Frame) -> PyResult<Frame> {
    let header = frame.header.to_string();
    let payload = PyBytes::new(py, &frame.payload);
    let result = module.call_method1("handle", (header, payload))?;
    // Borrow the answer's bytes; extracting a Vec<u8> would convert them one by one.
    let (answer, data): (String, Bound<'_, PyBytes>) = result.extract()?;
    let bytes = data.as_bytes().to_vec();
    let header = serde_json::from_str(&answer).map_err(|e| {
        pyo3::exceptions::PyValueError::new_err(format!("the worker module answered non-JSON: {e}"))
    })?;
    Ok(Frame {
        header,
        payload: bytes,
    })
}

fn describe(py: Python<'_>, e: &PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    format!("{kind}: {}", e.value(py))
}

fn error_frame(kind: &str, message: &str) -> Frame {
    Frame::new(json!({"ok": false, "error": {"type": kind, "message": message}}))
}

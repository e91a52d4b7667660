//! The worker process: embeds CPython, activates the selected environment, imports
//! TensorFlow, and answers frames on stdin/stdout until stdin closes.
//!
//! Python code may print; so that nothing it writes can corrupt a frame, the protocol uses
//! a private copy of the original stdout and file descriptor 1 is pointed at stderr.

use std::ffi::CString;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::process::ExitCode;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyModule};
use serde_json::{Value, json};

use crate::client::{WORKER_ENV_VAR, may_stay_awake, stay_awake};
use crate::env::PythonEnv;
use crate::protocol::{
    Frame, Payload, read_frame_head_waking, write_frame, write_raw_frame, write_shared_frame,
};

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
        // Where the Python side announces an answer with a wake-up, once TF is done with a
        // case (see `crate::protocol`); only where the client may stay awake for it.
        if let Ok(m) = &module
            && may_stay_awake()
            && let Err(e) = m.setattr("_wake_fd", output.get_ref().as_raw_fd())
        {
            eprintln!("semfuzz worker: {}", describe(py, &e));
        }
        loop {
            // A wake-up says the client is writing a request: stay awake for it.
            let (header, payload_len) = match read_frame_head_waking(&mut input, awaiting) {
                Ok(Some(f)) => f,
                Ok(None) => return ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("semfuzz worker: bad frame from the client: {e}");
                    return ExitCode::from(65);
                }
            };
            // An inline payload is read straight into the bytes object Python gets; a shared
            // one is already in the region the Python side has mapped, and only its length
            // goes across.
            let payload = match payload_len {
                Payload::Inline(len) => match PyBytes::new_with(py, len, |buf| {
                    std::io::Read::read_exact(&mut input, buf).map_err(PyErr::from)
                }) {
                    Ok(p) => p.into_any(),
                    Err(e) => {
                        eprintln!("semfuzz worker: bad frame from the client: {e}");
                        return ExitCode::from(65);
                    }
                },
                Payload::Shared(len) => len.into_pyobject(py).expect("ints convert").into_any(),
            };
            let Ok(header) = String::from_utf8(header) else {
                eprintln!("semfuzz worker: bad frame from the client: the header is not UTF-8");
                return ExitCode::from(65);
            };
            let started = std::time::Instant::now();
            let written = match &module {
                Ok(m) => match handle(m, header, payload) {
                    Ok((answer, data)) => {
                        let answer = with_worker_seconds(&answer, started.elapsed().as_secs_f64());
                        match data {
                            Answer::Bytes(data) => {
                                write_raw_frame(&mut output, answer.as_bytes(), data.as_bytes())
                            }
                            Answer::Shared(len) => {
                                write_shared_frame(&mut output, answer.as_bytes(), len)
                            }
                        }
                    }
                    Err(e) => write_error(&mut output, "WorkerError", &describe(py, &e), started),
                },
                Err(setup) => write_error(&mut output, "EnvironmentError", setup, started),
            };
            if written.is_err() {
                return ExitCode::from(74);
            }
            // A client running cases one after another sends the next request soon after an
            // answer (or its wake-up): stay awake for it, so that it finds this process
            // running instead of having to wake it.
            awaiting(&mut input);
        }
    })
}

/// Stays awake for a moment for the next frame from the client (see [`stay_awake`]).
fn awaiting(input: &mut BufReader<File>) {
    let fd = input.get_ref().as_raw_fd();
    stay_awake(fd, || !input.buffer().is_empty());
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
            env.overlay
                .as_ref()
                .map(|d| d.to_string_lossy().into_owned()),
        ),
    )?;
    Ok(module)
}

/// The payload of an answer: bytes, borrowed from Python until they are written, or the
/// length the Python side wrote into the shared region.
#[derive(FromPyObject)]
enum Answer<'py> {
    Bytes(Bound<'py, PyBytes>),
    Shared(usize),
}

/// Hands one request to the Python side: `handle(header_json, payload) -> (header_json,
/// payload)`, where a payload is bytes or the length of one in a shared region.
fn handle<'py>(
    module: &Bound<'py, PyModule>,
    header: String,
    payload: Bound<'py, PyAny>,
) -> PyResult<(String, Answer<'py>)> {
    module.call_method1("handle", (header, payload))?.extract()
}

/// The answer's header (a JSON object, as the Python side writes it) with `worker_seconds`
/// spliced in as its first key, so the header is not parsed and written again.
fn with_worker_seconds(header: &str, seconds: f64) -> String {
    match header.strip_prefix('{') {
        Some(rest) if !rest.trim_start().starts_with('}') => {
            format!("{{\"worker_seconds\": {seconds}, {rest}")
        }
        _ => {
            let mut value: Value = serde_json::from_str(header).unwrap_or_else(|e| {
                json!({"ok": false, "error": {"type": "WorkerError", "message": format!("the worker module answered non-JSON: {e}")}})
            });
            if let Some(h) = value.as_object_mut() {
                h.insert("worker_seconds".into(), json!(seconds));
            }
            value.to_string()
        }
    }
}

fn describe(py: Python<'_>, e: &PyErr) -> String {
    let kind = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    format!("{kind}: {}", e.value(py))
}

fn write_error(
    output: &mut impl Write,
    kind: &str,
    message: &str,
    started: std::time::Instant,
) -> std::io::Result<()> {
    let frame = Frame::new(json!({
        "ok": false,
        "error": {"type": kind, "message": message},
        "worker_seconds": started.elapsed().as_secs_f64(),
    }));
    write_frame(output, &frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_seconds_join_any_answer_as_valid_json() {
        for answer in [
            r#"{"ok": true, "tensors": []}"#,
            "{}",
            " { } ",
            r#"{"ok":false}"#,
            "not json",
        ] {
            let header = with_worker_seconds(answer, 0.0000125);
            let value: Value = serde_json::from_str(&header)
                .unwrap_or_else(|e| panic!("{answer:?} gave {header:?}: {e}"));
            assert_eq!(value["worker_seconds"], json!(0.0000125), "{header}");
            if answer.contains("tensors") {
                assert_eq!(value["ok"], json!(true));
                assert_eq!(value["tensors"], json!([]));
            }
            if answer == "not json" {
                assert_eq!(value["ok"], json!(false));
            }
        }
    }
}

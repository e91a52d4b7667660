//! The client side: start a worker process, exchange frames with it, notice its death.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, BufWriter};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::PythonEnv;
use crate::protocol::{Frame, read_frame, write_frame};

/// How many lines of the worker's stderr are kept for reports.
const STDERR_TAIL: usize = 40;

/// The environment variable through which the client hands the worker its environment.
pub const WORKER_ENV_VAR: &str = "SEMFUZZ_WORKER_ENV";

/// How to start a worker process: normally the `semfuzz` binary itself with `__worker`.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// The running executable, started as `<exe> __worker`.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(WorkerCommand {
            program: std::env::current_exe()?,
            args: vec!["__worker".into()],
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("cannot start the worker `{}`: {source}", program.display())]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("the worker died ({status}); last lines of its stderr:\n{stderr_tail}")]
    Died {
        status: WorkerExit,
        stderr_tail: String,
    },
    #[error("the worker broke the protocol: {0}")]
    Protocol(String),
    #[error("{kind} in the worker: {message}")]
    Python { kind: String, message: String },
}

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    Code(i32),
    Signal(i32),
    /// Still running (the pipe broke first).
    Unknown,
}

impl std::fmt::Display for WorkerExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerExit::Code(c) => write!(f, "exit code {c}"),
            WorkerExit::Signal(s) => write!(f, "signal {s}"),
            WorkerExit::Unknown => f.write_str("pipe closed"),
        }
    }
}

impl From<ExitStatus> for WorkerExit {
    fn from(s: ExitStatus) -> Self {
        match (s.code(), s.signal()) {
            (Some(c), _) => WorkerExit::Code(c),
            (None, Some(sig)) => WorkerExit::Signal(sig),
            _ => WorkerExit::Unknown,
        }
    }
}

/// What the worker reports about itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Versions {
    pub python: String,
    pub tensorflow: String,
    pub keras: String,
    pub numpy: String,
    /// The interpreter whose environment the worker activated.
    pub environment: String,
}

/// A running worker process.
pub struct Worker {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_thread: Option<thread::JoinHandle<()>>,
}

impl Worker {
    /// Starts a worker that activates `env`. TensorFlow is imported before the first answer.
    pub fn spawn(cmd: &WorkerCommand, env: &PythonEnv) -> Result<Worker, WorkerError> {
        let mut command = Command::new(&cmd.program);
        command
            .args(&cmd.args)
            .env(
                WORKER_ENV_VAR,
                serde_json::to_string(env).expect("environments serialize"),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The embedded interpreter finds its standard library under the environment's base
        // prefix, not wherever `python3` on PATH happens to live.
        if std::env::var_os("PYTHONHOME").is_none() {
            command.env("PYTHONHOME", &env.base_prefix);
        }
        if std::env::var_os("TF_CPP_MIN_LOG_LEVEL").is_none() {
            command.env("TF_CPP_MIN_LOG_LEVEL", "2");
        }
        let mut child = command.spawn().map_err(|source| WorkerError::Spawn {
            program: cmd.program.clone(),
            source,
        })?;
        let stdin = BufWriter::new(child.stdin.take().expect("piped"));
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let stderr = child.stderr.take().expect("piped");
        let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let tail = Arc::clone(&stderr_tail);
        let pid = child.id();
        let stderr_thread = thread::Builder::new()
            .name(format!("worker-{pid}-stderr"))
            .spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    tracing::debug!(target: "semfuzz::worker", pid, "{line}");
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    if t.len() == STDERR_TAIL {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            })
            .map_err(|source| WorkerError::Spawn {
                program: cmd.program.clone(),
                source,
            })?;
        tracing::debug!(pid, "worker started");
        Ok(Worker {
            child,
            stdin,
            stdout,
            stderr_tail,
            stderr_thread: Some(stderr_thread),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one request and waits for its answer. A worker that dies on the way is
    /// reported with how it ended and the tail of its stderr.
    pub fn request(&mut self, frame: &Frame) -> Result<Frame, WorkerError> {
        if write_frame(&mut self.stdin, frame).is_err() {
            return Err(self.died());
        }
        match read_frame(&mut self.stdout) {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err(self.died()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.died()),
            Err(e) => Err(WorkerError::Protocol(e.to_string())),
        }
    }

    /// Asks for the versions of Python, TensorFlow, Keras and NumPy in the worker.
    pub fn hello(&mut self) -> Result<Versions, WorkerError> {
        let answer = self.request(&Frame::new(json!({"op": "hello"})))?;
        let body = ok_body(answer.header)?;
        serde_json::from_value(body["versions"].clone())
            .map_err(|e| WorkerError::Protocol(format!("bad hello answer: {e}")))
    }

    /// The last lines the worker wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let t = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        t.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    fn died(&mut self) -> WorkerError {
        // The pipe closed: the worker is gone or going; wait for it to learn how it ended.
        let status = self
            .child
            .wait()
            .map(WorkerExit::from)
            .unwrap_or(WorkerExit::Unknown);
        // Its stderr is closed now; let the reader thread take in the last lines.
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        WorkerError::Died {
            status,
            stderr_tail: self.stderr_tail(),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of a successful answer, or the worker's error as a [`WorkerError::Python`].
fn ok_body(header: Value) -> Result<Value, WorkerError> {
    if header["ok"] == Value::Bool(true) {
        return Ok(header);
    }
    let err = &header["error"];
    match (err["type"].as_str(), err["message"].as_str()) {
        (Some(kind), Some(message)) => Err(WorkerError::Python {
            kind: kind.to_owned(),
            message: message.to_owned(),
        }),
        _ => Err(WorkerError::Protocol(format!(
            "unexpected answer: {header}"
        ))),
    }
}

//! The client side: start a worker process, exchange frames with it, and notice when it
//! dies, hangs or grows past its memory limit.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, BufWriter};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::env::PythonEnv;
use crate::protocol::{
    Frame, WAKE, parse_header, read_frame_with, write_raw_frame, write_shared_frame, write_wake,
};

/// How many lines of the worker's stderr are kept for reports.
/// The variable that turns TensorFlow's oneDNN CPU kernels on or off.
pub const ONEDNN_VAR: &str = "TF_ENABLE_ONEDNN_OPTS";

const STDERR_TAIL: usize = 40;

/// The environment variable through which the client hands the worker its environment.
pub const WORKER_ENV_VAR: &str = "SEMFUZZ_WORKER_ENV";

/// The environment variable that names the worker's shared regions (see [`Shared`]).
pub const SHARED_ENV_VAR: &str = "SEMFUZZ_WORKER_SHM";

/// The default size of each shared region (see [`WorkerCommand::shared_bytes`]). Pages are
/// only used as payloads touch them.
pub const SHARED_BYTES: usize = 16 << 20;

/// The prefix of the stderr lines in which the worker announces the layer it enters, when
/// no memory is shared with it.
pub const LAYER_MARK: &str = "\x1esemfuzz-layer:";

/// The prefix of the stderr lines in which the worker announces the mode it starts to run,
/// when no memory is shared with it.
pub const MODE_MARK: &str = "\x1esemfuzz-mode:";

/// Bytes at the end of the answers' region in which the worker announces the layer it
/// enters: a little-endian u32 length, then that many bytes of the layer's name (UTF-8,
/// cut to fit). A store to memory, where a line on stderr would be a system call and a
/// wake-up of the client's reader thread, for every layer of every case. Its last
/// [`MODE_BYTES`] hold the mode the worker runs: a length byte, then the mode's name.
const LAYER_SLOT: usize = 256;

/// The end of the layer slot that holds the mode (see [`LAYER_SLOT`]).
const MODE_BYTES: usize = 8;

/// How long a process that got a [`WAKE`] checks for the frame it announces before it
/// sleeps (see [`stay_awake`]).
const STAY_AWAKE: Duration = Duration::from_micros(500);

/// A `sched_yield` that takes longer than this let another task run: the CPU is not free for
/// [`stay_awake`]. An idle CPU returns from it in about a microsecond.
const YIELDED: Duration = Duration::from_micros(20);

/// Whether this process may keep its CPU busy for a moment while the other side finishes a
/// frame: not when it may run on one CPU only (a fuzzing job bound to a core, and its
/// worker), where the other side needs that CPU to finish it.
pub(crate) fn may_stay_awake() -> bool {
    static MAY: OnceLock<bool> = OnceLock::new();
    *MAY.get_or_init(|| {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, which sched_getaffinity fills.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) == 0
                && libc::CPU_COUNT(&set) > 1
        }
    })
}

/// After a [`WAKE`] on `fd` (or, in the worker, after an answer): checks, for up to
/// [`STAY_AWAKE`], whether a frame is coming in (or `buffered` says it has), without going
/// to sleep; a frame that arrives meanwhile finds this process running instead of having to
/// wake it. Returns at once where [`may_stay_awake`] says no, and as soon as anything else
/// needs this CPU: measured on a 2-core VM with the other core busy, checking without yielding
/// it made the harness's overhead on a graph stream several times what it is when sleeping.
pub(crate) fn stay_awake(fd: RawFd, buffered: impl Fn() -> bool) {
    if !may_stay_awake() {
        return;
    }
    let until = Instant::now() + STAY_AWAKE;
    while !buffered() && Instant::now() < until {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        if unsafe { libc::poll(&mut pfd, 1, 0) } != 0 {
            return;
        }
        // Whatever else waits for this CPU runs first: the other side among them, where the
        // other cores are busy. If anything did, this process is in the way of work that
        // may be the frame's: it sleeps instead.
        let before = Instant::now();
        // SAFETY: no arguments; it cannot fail on Linux.
        unsafe {
            libc::sched_yield();
        }
        if before.elapsed() > YIELDED {
            return;
        }
    }
}

/// How to start a worker process: normally the `semfuzz` binary itself with `__worker`.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Extra environment for the worker (e.g. TF thread pools, a planted fault module).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes of each of the two memory regions shared with the worker, in which payloads
    /// travel instead of the pipe ([`SHARED_BYTES`] by default); a larger payload, or any
    /// with 0, goes through the pipe.
    pub shared_bytes: usize,
    /// The Keras backend the worker runs (`KERAS_BACKEND`, set before Keras is imported).
    pub backend: judge::Backend,
}

impl WorkerCommand {
    /// The running executable, started as `<exe> __worker`.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(WorkerCommand {
            program: std::env::current_exe()?,
            args: vec!["__worker".into()],
            env: Vec::new(),
            shared_bytes: SHARED_BYTES,
            backend: judge::Backend::Tensorflow,
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
    #[error("the worker died ({status}){}; last lines of its stderr:\n{stderr_tail}", layer.as_ref().map(|l| format!(" in layer '{l}'")).unwrap_or_default())]
    Died {
        status: WorkerExit,
        layer: Option<String>,
        /// The mode the worker was running (`eager`, `graph`, `xla`), when it had started one.
        mode: Option<String>,
        stderr_tail: String,
    },
    #[error("the worker took longer than {limit:?}{}", layer.as_ref().map(|l| format!(" (in layer '{l}')")).unwrap_or_default())]
    Timeout {
        limit: Duration,
        layer: Option<String>,
        mode: Option<String>,
    },
    #[error("the worker grew to {rss_mib} MiB, past its {limit_mib} MiB limit{}", layer.as_ref().map(|l| format!(" (in layer '{l}')")).unwrap_or_default())]
    OutOfMemory {
        rss_mib: u64,
        limit_mib: u64,
        layer: Option<String>,
        mode: Option<String>,
    },
    #[error("the worker broke the protocol: {0}")]
    Protocol(String),
    /// The request was abandoned (see [`Limits::cancel`]); the worker was killed.
    #[error("the request was cancelled")]
    Cancelled,
    /// The worker was stopped from outside, by a signal only a person or the system sends
    /// ([`WorkerExit::is_stop`]: a service stopping every process of its group, `kill`):
    /// not a framework crash, and the case it was running has no answer.
    #[error("the worker was stopped from outside ({status})")]
    Stopped { status: WorkerExit },
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

impl WorkerExit {
    /// Whether the worker died by a signal that asks a process to stop (SIGTERM, SIGINT,
    /// SIGHUP): sent from outside, never raised by a fault in the framework, unlike
    /// SIGSEGV, SIGABRT or SIGFPE (and SIGKILL, which the kernel's memory killer sends).
    pub fn is_stop(self) -> bool {
        matches!(self, WorkerExit::Signal(s) if [libc::SIGTERM, libc::SIGINT, libc::SIGHUP].contains(&s))
    }
}

impl std::fmt::Display for WorkerExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerExit::Code(c) => write!(f, "exit code {c}"),
            WorkerExit::Signal(s) => write!(f, "signal {}", judge::outcome::signal_name(*s)),
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

/// Bounds on one request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    /// Resident memory of the worker, in MiB.
    pub memory_mib: u64,
    /// Once set (by a signal handler, say), the request in flight is abandoned: the worker is
    /// killed, and the request ends in [`WorkerError::Cancelled`] within [`POLL`].
    pub cancel: Option<&'static AtomicBool>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(10),
            memory_mib: 4096,
            cancel: None,
        }
    }
}

/// How often a client waiting for an answer checks its limits.
pub const POLL: Duration = Duration::from_millis(25);

/// What the worker reports about itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Versions {
    pub python: String,
    pub tensorflow: String,
    pub keras: String,
    pub numpy: String,
    /// The interpreter whose environment the worker activated.
    pub environment: String,
    /// Keras's backend.
    pub backend: judge::Backend,
    /// JAX's and PyTorch's versions, where installed (whatever the backend).
    #[serde(default)]
    pub jax: Option<String>,
    #[serde(default)]
    pub torch: Option<String>,
    /// Whether TensorFlow runs its oneDNN CPU kernels (its results differ from the other
    /// kernels' in places); `None` where the worker could not tell (or an older record).
    #[serde(default)]
    pub onednn: Option<bool>,
}

/// What the stderr reader thread keeps.
#[derive(Default)]
struct StderrState {
    tail: VecDeque<String>,
    layer: Option<String>,
    mode: Option<String>,
}

/// Where the last request's time went, on the client side (seconds).
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestTiming {
    /// Writing the request into the pipe (the worker reads it meanwhile).
    pub write: f64,
    /// Waiting for the first byte of the answer.
    pub wait: f64,
    /// Reading the answer frame.
    pub read: f64,
    /// Building the request from the case.
    pub build: f64,
    /// Decoding the answer into outputs.
    pub parse: f64,
}

/// A region of memory shared with the worker: an anonymous file (`memfd`) mapped here and
/// inherited by the worker, which maps it too. Payloads travel in it instead of through the
/// pipe, saving the copies into and out of the kernel; the frames still go through the pipe,
/// which orders who touches the region when.
struct Region {
    fd: OwnedFd,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by the `Region`; it is only read and written through `&self`
// and `&mut self` methods, while the pipe's protocol keeps the worker off it.
unsafe impl Send for Region {}

impl Region {
    fn new(name: &std::ffi::CStr, len: usize) -> std::io::Result<Region> {
        // SAFETY: memfd_create with a valid C string; the descriptor is owned from here on.
        let raw = unsafe {
            libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ftruncate and mmap on that descriptor; a failed mmap is checked.
        unsafe {
            // Sealed at its size: whatever the worker does with its descriptor, the region
            // cannot shrink under this process's mapping (a read past a file's end would
            // be SIGBUS here, killing the fuzzer instead of the worker).
            if libc::ftruncate(raw, len as libc::off_t) != 0
                || libc::fcntl(
                    raw,
                    libc::F_ADD_SEALS,
                    libc::F_SEAL_SHRINK | libc::F_SEAL_GROW,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                raw,
                0,
            );
            if ptr == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Region {
                fd,
                ptr: ptr.cast(),
                len,
            })
        }
    }

    /// The first `len` bytes, to write a request's payload in place.
    fn start_mut(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.len, "checked by the caller");
        // SAFETY: in bounds of the mapping; the worker is between requests, and `&mut self`
        // keeps this process's other uses off it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }

    /// The first `len` bytes, to read an answer's payload where it lies.
    fn start(&self, len: usize) -> &[u8] {
        assert!(len <= self.len, "checked by the caller");
        // SAFETY: in bounds of the mapping; the worker wrote it before sending its answer and
        // touches it again only for the next request, which needs `&mut self`.
        unsafe { std::slice::from_raw_parts(self.ptr, len) }
    }

    fn read_at(&self, offset: usize, len: usize) -> Vec<u8> {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "checked by the caller"
        );
        let mut out = vec![0u8; len];
        // SAFETY: in bounds of the mapping; the worker wrote it before sending its answer
        // (or before it was stopped) and touches it again only for the next request.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr(), len) }
        out
    }

    fn write_at(&mut self, offset: usize, bytes: &[u8]) {
        assert!(
            offset
                .checked_add(bytes.len())
                .is_some_and(|end| end <= self.len),
            "checked by the caller"
        );
        // SAFETY: in bounds of the mapping; the worker is between requests.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// The worker's two regions: one the client writes requests' payloads into, one the worker
/// writes answers' payloads into, followed by the [`LAYER_SLOT`].
struct Shared {
    to_worker: Region,
    from_worker: Region,
    /// Bytes of each region a payload may take.
    bytes: usize,
}

impl Shared {
    fn new(bytes: usize) -> std::io::Result<Option<Shared>> {
        if bytes == 0 {
            return Ok(None);
        }
        Ok(Some(Shared {
            to_worker: Region::new(c"semfuzz-requests", bytes)?,
            from_worker: Region::new(c"semfuzz-answers", bytes + LAYER_SLOT)?,
            bytes,
        }))
    }

    /// The worker's view: `<fd it reads>,<fd it writes>,<payload bytes each>,<layer slot
    /// bytes after the answers' payload>`.
    fn describe(&self) -> String {
        format!(
            "{},{},{},{LAYER_SLOT}",
            self.to_worker.fd.as_raw_fd(),
            self.from_worker.fd.as_raw_fd(),
            self.bytes
        )
    }

    /// Empties the layer slot and its mode, before a request.
    fn clear_layer(&mut self) {
        self.from_worker.write_at(self.bytes, &0u32.to_le_bytes());
        self.from_worker
            .write_at(self.bytes + LAYER_SLOT - MODE_BYTES, &[0]);
    }

    /// The layer the worker last announced, read once it has stopped (answered, died or been
    /// killed), so nothing writes the slot meanwhile.
    fn layer(&self) -> Option<String> {
        let len = self.from_worker.read_at(self.bytes, 4);
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        let name = self
            .from_worker
            .read_at(self.bytes + 4, len.min(LAYER_SLOT - 4 - MODE_BYTES));
        (len > 0).then(|| String::from_utf8_lossy(&name).into_owned())
    }

    /// The mode the worker last announced starting, read as [`Shared::layer`] is.
    fn mode(&self) -> Option<String> {
        let at = self.bytes + LAYER_SLOT - MODE_BYTES;
        let len = self.from_worker.read_at(at, 1)[0] as usize;
        let name = self.from_worker.read_at(at + 1, len.min(MODE_BYTES - 1));
        (len > 0).then(|| String::from_utf8_lossy(&name).into_owned())
    }

    fn fds(&self) -> [RawFd; 2] {
        [
            self.to_worker.fd.as_raw_fd(),
            self.from_worker.fd.as_raw_fd(),
        ]
    }
}

/// A running worker process.
pub struct Worker {
    /// Where the last request's time went.
    pub timing: RequestTiming,
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<StderrState>>,
    stderr_thread: Option<thread::JoinHandle<()>>,
    /// Shared memory for payloads; without it (no `memfd` here) they go through the pipe.
    shared: Option<Shared>,
    /// The worker's own temporary directory (its `TMPDIR`), removed with the worker: TF's
    /// AutoGraph writes a file there for every function it converts, and leaves it behind,
    /// so a long campaign would otherwise fill the system's temporary directory with them.
    /// Declared after `child`, which `Drop` has killed by the time it goes.
    _temp: Option<tempfile::TempDir>,
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
            .env("KERAS_BACKEND", cmd.backend.name())
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
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
        // TF turns its oneDNN CPU kernels on by itself only on some CPUs (Intel's; not on an
        // AMD EPYC without AVX-512): without them every channels_first convolution is refused
        // on the CPU and subnormals are kept. The same kernels on every machine, unless the
        // user says otherwise; the kept bugs and the reference assume them.
        if std::env::var_os(ONEDNN_VAR).is_none() {
            command.env(ONEDNN_VAR, "1");
        }
        // Inside the temporary directory the worker would have used: the one its given
        // environment names, else this process's.
        let root = cmd
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == "TMPDIR")
            .map_or_else(std::env::temp_dir, |(_, v)| PathBuf::from(v));
        let temp = tempfile::Builder::new()
            .prefix("semfuzz-worker-")
            .tempdir_in(&root)
            .inspect_err(|e| {
                tracing::warn!(
                    "cannot make the worker a temporary directory in {}: {e}; TF's files stay there",
                    root.display()
                )
            })
            .ok();
        if let Some(t) = &temp {
            command.env("TMPDIR", t.path());
        }
        let shared = Shared::new(cmd.shared_bytes)
            .inspect_err(|e| tracing::debug!("payloads go through the pipe: {e}"))
            .ok()
            .flatten();
        let inherited = shared.as_ref().map(Shared::fds);
        match &shared {
            Some(s) => command.env(SHARED_ENV_VAR, s.describe()),
            None => command.env_remove(SHARED_ENV_VAR),
        };
        // Its own process group: a Ctrl-C at the terminal reaches the fuzzer, which stops
        // cleanly, not the worker in the middle of a case. It dies with the process that
        // started it, however that process ends.
        command.process_group(0);
        // SAFETY: the closure runs in the child between fork and exec and calls only prctl
        // and fcntl, which are async-signal-safe.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The shared regions' descriptors, and only these, survive the exec.
                for fd in inherited.into_iter().flatten() {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let spawn_err = |source| WorkerError::Spawn {
            program: cmd.program.clone(),
            source,
        };
        let mut child = command.spawn().map_err(spawn_err)?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        widen_pipe(stdin.as_raw_fd());
        widen_pipe(stdout.as_raw_fd());
        let stdin = BufWriter::new(stdin);
        let stdout = BufReader::new(stdout);
        let stderr_pipe = child.stderr.take().expect("piped");
        let stderr = Arc::new(Mutex::new(StderrState::default()));
        let state = Arc::clone(&stderr);
        let pid = child.id();
        let stderr_thread = thread::Builder::new()
            .name(format!("worker-{pid}-stderr"))
            .spawn(move || {
                for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(layer) = line.strip_prefix(LAYER_MARK) {
                        s.layer = Some(layer.to_owned());
                        continue;
                    }
                    if let Some(mode) = line.strip_prefix(MODE_MARK) {
                        s.mode = Some(mode.to_owned());
                        continue;
                    }
                    tracing::debug!(target: "semfuzz::worker", pid, "{line}");
                    if s.tail.len() == STDERR_TAIL {
                        s.tail.pop_front();
                    }
                    s.tail.push_back(line);
                }
            })
            .map_err(spawn_err)?;
        tracing::debug!(pid, "worker started");
        Ok(Worker {
            timing: RequestTiming::default(),
            child,
            stdin,
            stdout,
            stderr,
            stderr_thread: Some(stderr_thread),
            shared,
            _temp: temp,
        })
    }

    /// Sends one request and waits for its answer, with no time or memory limit beyond the
    /// defaults.
    pub fn request(&mut self, frame: &Frame) -> Result<Frame, WorkerError> {
        self.request_within(frame, Limits::default())
    }

    /// Sends one request and waits for its answer. A worker that dies on the way is reported
    /// with how it ended, the layer it was in and the tail of its stderr; one that takes too
    /// long or grows too large is killed and reported so. After any of these the worker is
    /// gone: start a new one.
    pub fn request_within(&mut self, frame: &Frame, limits: Limits) -> Result<Frame, WorkerError> {
        self.exchange(
            &frame.header,
            frame.payload.len(),
            |buf| buf.copy_from_slice(&frame.payload),
            limits,
            |header, payload| {
                Ok(Frame {
                    header: parse_header(header)
                        .map_err(|e| WorkerError::Protocol(e.to_string()))?,
                    payload: payload.to_vec(),
                })
            },
        )?
    }

    /// As [`Worker::request_within`], without copies of the payloads: `fill` writes the
    /// request's payload, `len` bytes, where it travels from (the shared region when it fits
    /// there), and `decode` reads the answer's header (its JSON text) and payload where they
    /// arrived.
    pub fn exchange<R>(
        &mut self,
        header: &Value,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        limits: Limits,
        decode: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> Result<R, WorkerError> {
        {
            let mut stderr = self.lock_stderr();
            stderr.layer = None;
            stderr.mode = None;
        }
        if let Some(shared) = &mut self.shared {
            shared.clear_layer();
        }
        let t0 = Instant::now();
        let header = serde_json::to_vec(header).expect("JSON values serialize");
        let sent = match &mut self.shared {
            Some(shared) if len <= shared.bytes => {
                fill(shared.to_worker.start_mut(len));
                write_shared_frame(&mut self.stdin, &header, len)
            }
            _ => {
                let mut payload = vec![0u8; len];
                fill(&mut payload);
                write_raw_frame(&mut self.stdin, &header, &payload)
            }
        };
        if sent.is_err() {
            return Err(self.died());
        }
        let start = Instant::now();
        self.timing.write = (start - t0).as_secs_f64();
        let fd = self.stdout.get_ref().as_raw_fd();
        loop {
            // The worker announces its answer with a wake-up once TF is done: stay awake for
            // the answer. A wake-up is written whole before the answer, so the buffer, empty
            // when the request went out, starts with it.
            let mut woken = false;
            while self.stdout.buffer().starts_with(&WAKE) {
                self.stdout.consume(WAKE.len());
                woken = true;
            }
            if !self.stdout.buffer().is_empty() {
                break;
            }
            if woken {
                stay_awake(fd, || false);
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd for the duration of the call.
            let ready = unsafe { libc::poll(&mut pfd, 1, POLL.as_millis() as i32) };
            if ready > 0 {
                match self.stdout.fill_buf() {
                    // The pipe closed: reading the answer finds out how the worker ended.
                    Ok([]) => break,
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(WorkerError::Protocol(format!("read: {e}"))),
                }
            }
            if ready < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return Err(WorkerError::Protocol(format!(
                    "poll: {}",
                    std::io::Error::last_os_error()
                )));
            }
            if limits.cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
                self.kill();
                return Err(WorkerError::Cancelled);
            }
            if start.elapsed() > limits.timeout {
                self.kill();
                return Err(WorkerError::Timeout {
                    limit: limits.timeout,
                    layer: self.current_layer(),
                    mode: self.current_mode(),
                });
            }
            if let Some(rss_mib) = self.rss_mib()
                && rss_mib > limits.memory_mib
            {
                self.kill();
                return Err(WorkerError::OutOfMemory {
                    rss_mib,
                    limit_mib: limits.memory_mib,
                    layer: self.current_layer(),
                    mode: self.current_mode(),
                });
            }
        }
        let t1 = Instant::now();
        self.timing.wait = (t1 - start).as_secs_f64();
        let answer = self.read_answer(decode);
        self.timing.read = t1.elapsed().as_secs_f64();
        match answer {
            Ok(Some(answer)) => Ok(answer),
            Ok(None) => Err(self.died()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(self.died()),
            Err(e) => Err(WorkerError::Protocol(e.to_string())),
        }
    }

    /// Reads one answer frame and decodes it, its payload where it lies: in the shared region
    /// or, read from the pipe, in a buffer.
    fn read_answer<R>(
        &mut self,
        decode: impl FnOnce(&[u8], &[u8]) -> R,
    ) -> std::io::Result<Option<R>> {
        let shared = self.shared.as_ref();
        read_frame_with(
            &mut self.stdout,
            |len| match shared {
                Some(shared) if len <= shared.bytes => Ok(shared.from_worker.start(len)),
                _ => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("an answer of {len} bytes in shared memory, past the region's end"),
                )),
            },
            decode,
        )
    }

    /// Tells the worker that a request follows soon (while its payload is being written), so
    /// that it is awake when the request comes. A worker that is gone is found out by that
    /// request.
    pub fn wake(&mut self) {
        if may_stay_awake() {
            let _ = write_wake(&mut self.stdin);
        }
    }

    /// Asks for the versions of Python, TensorFlow, Keras and NumPy in the worker.
    pub fn hello(&mut self) -> Result<Versions, WorkerError> {
        let answer = self.request_within(
            &Frame::new(json!({"op": "hello"})),
            Limits {
                timeout: Duration::from_secs(120),
                ..Limits::default()
            },
        )?;
        let body = ok_body(answer.header)?;
        serde_json::from_value(body["versions"].clone())
            .map_err(|e| WorkerError::Protocol(format!("bad hello answer: {e}")))
    }

    /// What the target offers (see [`crate::target`]).
    pub fn target(&mut self) -> Result<crate::target::TargetInfo, WorkerError> {
        let answer = self.request_within(
            &Frame::new(json!({"op": "target"})),
            Limits {
                timeout: Duration::from_secs(120),
                ..Limits::default()
            },
        )?;
        let body = ok_body(answer.header)?;
        serde_json::from_value(body["target"].clone())
            .map_err(|e| WorkerError::Protocol(format!("bad target answer: {e}")))
    }

    /// The last lines the worker wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.lock_stderr()
            .tail
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The layer the worker last announced entering during the current request; read once
    /// the worker has stopped.
    pub fn current_layer(&self) -> Option<String> {
        match &self.shared {
            Some(shared) => shared.layer(),
            None => self.lock_stderr().layer.clone(),
        }
    }

    /// The mode the worker last announced starting during the current request; read once
    /// the worker has stopped.
    pub fn current_mode(&self) -> Option<String> {
        match &self.shared {
            Some(shared) => shared.mode(),
            None => self.lock_stderr().mode.clone(),
        }
    }

    /// The worker's resident memory, from /proc.
    pub fn rss_mib(&self) -> Option<u64> {
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.child.id())).ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        Some(pages * page / (1024 * 1024))
    }

    fn lock_stderr(&self) -> std::sync::MutexGuard<'_, StderrState> {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
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
            layer: self.current_layer(),
            mode: self.current_mode(),
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
pub(crate) fn ok_body(header: Value) -> Result<Value, WorkerError> {
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

/// Pipes as large as the system allows a user (up to 1 MiB): a request's weights then fit in
/// the pipe, so writing it does not wait, chunk by chunk, for the worker to read. Where the
/// size cannot be changed the default stays; only speed depends on it.
fn widen_pipe(fd: std::os::fd::RawFd) {
    #[cfg(target_os = "linux")]
    {
        let max = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
            .ok()
            .and_then(|s| s.trim().parse::<libc::c_int>().ok())
            .unwrap_or(1 << 20)
            .min(1 << 20);
        // SAFETY: fcntl on a pipe descriptor this process owns; failure leaves it unchanged.
        if unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, max) } < 0 {
            tracing::debug!(
                "the worker pipe keeps its default size: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

//! Running a case in TensorFlow: the request (model config, weights and inputs as raw bytes),
//! the answer (every layer's output per mode, or the exception), and a [`Harness`] that keeps
//! one worker alive across cases and replaces it after a crash, hang or memory blow-up.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher as _};
use std::time::Duration;

use ndarray::ArrayD;
use oracle::check::CheckedShapes;
use oracle::{Case, DType};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::client::{Limits, Worker, WorkerCommand, WorkerError, ok_body};
use crate::env::PythonEnv;
use crate::protocol::Frame;
pub use judge::outcome::{LayerOutputs, Mode, ModeOutcome, PyError, TfOutcome};

/// How to run cases.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub modes: Vec<Mode>,
    /// The compute dtype TF runs the case in (the case's own by default).
    pub dtype: Option<DType>,
    pub limits: Limits,
    /// XLA compiles take longer: extra time allowed for a run that includes it.
    pub xla_budget: Duration,
    /// Ask the worker for the lines of Keras's and TF's Python code the case ran (slower).
    pub python_coverage: bool,
}

impl RunOptions {
    /// How long a case may take in TF: the timeout, and the XLA budget when a mode compiles.
    pub fn time_limit(&self) -> Duration {
        if self.modes.iter().any(|m| m.compiles()) {
            self.limits.timeout + self.xla_budget
        } else {
            self.limits.timeout
        }
    }

    /// These options with [`PATIENCE`] times the time limit, for the second run of a case
    /// that timed out: its XLA budget grows too, since a slow compile is what takes long.
    pub fn patient(&self) -> RunOptions {
        let mut patient = self.clone();
        patient.limits.timeout *= PATIENCE;
        patient.xla_budget *= PATIENCE;
        patient
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            modes: vec![Mode::Eager],
            dtype: None,
            limits: Limits::default(),
            xla_budget: Duration::from_secs(20),
            python_coverage: false,
        }
    }
}

/// A worker kept across cases, restarted when it dies.
pub struct Harness {
    command: WorkerCommand,
    env: PythonEnv,
    worker: Option<Worker>,
    /// Workers started so far (1 + restarts).
    pub starts: usize,
    /// The model the current worker holds built (its config need not be sent again) and the
    /// weights last set in it (only those that changed travel).
    held_model: Option<Held>,
    /// Keep a second worker started (TF imported in the background), to replace one that
    /// dies without waiting for the import: crashes cost a switch, not seconds.
    pub keep_spare: bool,
    spare: Option<Worker>,
    /// The Python lines (hashes of `file:line`) the last case ran, when coverage was asked for.
    pub python_lines: Vec<u32>,
    /// Cases the current worker has run.
    served: usize,
    /// Workers replaced because they had grown past half the memory limit over many cases
    /// (XLA keeps every program it compiles).
    pub recycled: usize,
    /// Memory blow-ups on a worker that had run other cases that did not happen again when
    /// the case ran on a fresh worker.
    pub outgrown: usize,
    /// What the target offers, asked once (see [`Harness::adapt`]).
    target: Option<crate::target::TargetInfo>,
}

/// Every this many cases, the worker's memory is checked against half the memory limit.
pub const RECYCLE_CHECK_EVERY: usize = 16;

impl Harness {
    pub fn new(command: WorkerCommand, env: PythonEnv) -> Self {
        Harness {
            command,
            env,
            worker: None,
            starts: 0,
            held_model: None,
            keep_spare: false,
            spare: None,
            python_lines: Vec::new(),
            served: 0,
            recycled: 0,
            outgrown: 0,
            target: None,
        }
    }

    /// What the target offers (asked of the worker once).
    pub fn target(&mut self) -> Result<&crate::target::TargetInfo, WorkerError> {
        if self.target.is_none() {
            let info = self.worker()?.target()?;
            self.target = Some(info);
        }
        Ok(self.target.as_ref().expect("just asked"))
    }

    /// The case as this target should get it (see [`crate::target::Adapter`]): itself when
    /// the target is the release the case was written for (or one semfuzz has no table of),
    /// a rewritten copy otherwise, or why the target cannot express it.
    pub fn adapt<'c>(
        &mut self,
        case: &'c Case,
    ) -> Result<Result<Cow<'c, Case>, crate::target::Unexpressible>, WorkerError> {
        let written_for = case
            .keras_version
            .as_deref()
            .unwrap_or(crate::target::CASE_KERAS);
        let target = self.target()?;
        if target.versions.keras == written_for {
            return Ok(Ok(Cow::Borrowed(case)));
        }
        let Some(from) = crate::target::bundled(written_for) else {
            return Ok(Ok(Cow::Borrowed(case)));
        };
        let adapter = crate::target::Adapter::new(from, written_for, target);
        Ok(adapter
            .case(case)
            .map(|c| c.map_or(Cow::Borrowed(case), Cow::Owned)))
    }

    fn worker(&mut self) -> Result<&mut Worker, WorkerError> {
        if self.worker.is_none() {
            let ready = match self.spare.take() {
                Some(mut spare) => match spare.hello() {
                    Ok(_) => Some(spare),
                    Err(e) => {
                        tracing::warn!("the spare worker did not start ({e}); starting another");
                        None
                    }
                },
                None => None,
            };
            let w = match ready {
                Some(w) => w,
                None => {
                    let mut w = Worker::spawn(&self.command, &self.env)?;
                    w.hello()?;
                    w
                }
            };
            self.starts += 1;
            self.worker = Some(w);
            self.held_model = None;
            self.served = 0;
        }
        if self.keep_spare && self.spare.is_none() {
            // Started now, it imports TF while the active worker runs cases.
            self.spare = Some(Worker::spawn(&self.command, &self.env)?);
        }
        Ok(self.worker.as_mut().expect("just started"))
    }

    /// Stops the current worker: the next request goes to a fresh one (the spare, when one is
    /// kept), with nothing left from the cases run before.
    pub fn restart(&mut self) {
        self.worker = None;
        self.held_model = None;
    }

    /// The spare worker's resident memory in MiB, when there is one.
    pub fn spare_rss_mib(&self) -> Option<u64> {
        self.spare.as_ref().and_then(Worker::rss_mib)
    }

    /// The worker's versions (starting it if needed).
    pub fn versions(&mut self) -> Result<crate::client::Versions, WorkerError> {
        self.worker()?.hello()
    }

    /// Where the last request's time went on the client side, when a worker is running.
    pub fn last_timing(&self) -> Option<crate::client::RequestTiming> {
        self.worker.as_ref().map(|w| w.timing)
    }

    /// The worker's resident memory in MiB, when it is running.
    pub fn worker_rss_mib(&self) -> Option<u64> {
        self.worker.as_ref().and_then(Worker::rss_mib)
    }

    /// Sends a request that replaces whatever model the worker holds (saving or loading a
    /// `.keras` file). A worker that dies, hangs or blows its memory on the way is dropped;
    /// the next request starts another.
    pub(crate) fn request_replacing_model(
        &mut self,
        frame: &Frame,
        limits: Limits,
    ) -> Result<Frame, WorkerError> {
        self.held_model = None;
        let answer = self.worker()?.request_within(frame, limits);
        if matches!(
            answer,
            Err(WorkerError::Died { .. }
                | WorkerError::Stopped { .. }
                | WorkerError::Timeout { .. }
                | WorkerError::OutOfMemory { .. }
                | WorkerError::Protocol(_)
                | WorkerError::Cancelled)
        ) {
            self.worker = None;
        }
        answer
    }

    /// Runs a case. Errors are failures of semfuzz itself (the worker cannot start, the
    /// protocol broke); everything TF does, crashing included, is a [`TfOutcome`].
    pub fn run(&mut self, case: &Case, opts: &RunOptions) -> Result<TfOutcome, WorkerError> {
        let t0 = std::time::Instant::now();
        // When the worker has this model built, only weights and inputs travel.
        // A worker that died took its model along: the next one needs the config.
        match self.worker.as_mut() {
            // It wakes up while the request is being built.
            Some(w) => w.wake(),
            None => self.held_model = None,
        }
        let (header, arrays, held) = request_for(case, opts, self.held_model.take());
        let build = t0.elapsed().as_secs_f64();
        let mut limits = opts.limits;
        limits.timeout = opts.time_limit();
        // The payloads are written and read where they travel (the shared regions).
        let answer = self.worker()?.exchange(
            &header,
            arrays.len(),
            |buf| arrays.write(buf),
            limits,
            |header, payload| {
                let t1 = std::time::Instant::now();
                (parse_answer(header, payload), t1.elapsed())
            },
        );
        self.python_lines.clear();
        self.served += 1;
        let outcome = match answer {
            Ok((answer, parse)) => {
                let (outcome, lines) = answer?;
                self.python_lines = lines;
                if let Some(w) = self.worker.as_mut() {
                    w.timing.build = build;
                    w.timing.parse = parse.as_secs_f64();
                }
                self.held_model = match &outcome {
                    TfOutcome::Ran { .. } => Some(held),
                    _ => None,
                };
                outcome
            }
            Err(WorkerError::Died { status, .. }) if status.is_stop() => {
                self.worker = None;
                return Err(WorkerError::Stopped { status });
            }
            Err(WorkerError::Died {
                status,
                layer,
                mode,
                stderr_tail,
            }) => {
                self.worker = None;
                let signal = match status {
                    crate::client::WorkerExit::Signal(s) => Some(s),
                    _ => None,
                };
                TfOutcome::Crash {
                    signal,
                    layer,
                    mode: announced(mode),
                    stderr_tail,
                }
            }
            Err(WorkerError::Timeout { layer, mode, .. }) => {
                self.worker = None;
                TfOutcome::Timeout {
                    layer,
                    mode: announced(mode),
                }
            }
            Err(WorkerError::OutOfMemory {
                rss_mib,
                layer,
                mode,
                ..
            }) => {
                self.worker = None;
                TfOutcome::OutOfMemory {
                    layer,
                    mode: announced(mode),
                    rss_mib,
                }
            }
            Err(e) => {
                self.worker = None;
                return Err(e);
            }
        };
        if matches!(outcome, TfOutcome::Ran { .. }) {
            self.recycle_when_grown(&limits);
        }
        Ok(outcome)
    }

    /// Replaces the worker (with the spare, when one is kept) once it has grown past half
    /// the memory limit: XLA keeps every program a worker compiles, and a worker that reached the limit that way would blame the case it happened to be
    /// running. Checked every [`RECYCLE_CHECK_EVERY`] cases.
    fn recycle_when_grown(&mut self, limits: &Limits) {
        if !self.served.is_multiple_of(RECYCLE_CHECK_EVERY) {
            return;
        }
        let Some(rss) = self.worker_rss_mib() else {
            return;
        };
        if rss > limits.memory_mib / 2 {
            tracing::info!(
                "the worker grew to {rss} MiB over {} cases; replacing it",
                self.served
            );
            self.recycled += 1;
            self.restart();
        }
    }

    /// Runs a case; one past its timeout runs once more with [`PATIENCE`] times the limit,
    /// so a case that is only slow (a first compile of a large recurrent graph, a machine
    /// busy with other work) is judged on that run, not reported as a hang. A memory
    /// blow-up on a worker that had run other cases runs once more on a fresh worker, so
    /// that what the worker had gathered before is not blamed on this case: it counts only
    /// when it happens again.
    pub fn run_confirming_timeouts(
        &mut self,
        case: &Case,
        opts: &RunOptions,
    ) -> Result<(TfOutcome, TimeoutCheck), WorkerError> {
        let fresh = self.worker.is_none() || self.served == 0;
        let mut first = self.run(case, opts)?;
        if !fresh && matches!(first, TfOutcome::OutOfMemory { .. }) {
            first = self.run(case, opts)?;
            if !matches!(first, TfOutcome::OutOfMemory { .. }) {
                tracing::info!("a memory blow-up did not happen again on a fresh worker");
                self.outgrown += 1;
            }
        }
        if !matches!(first, TfOutcome::Timeout { .. }) {
            return Ok((first, TimeoutCheck::None));
        }
        let patient = opts.patient();
        Ok(match self.run(case, &patient) {
            Err(WorkerError::Cancelled) => return Err(WorkerError::Cancelled),
            Ok(TfOutcome::Timeout { .. }) | Err(_) => (first, TimeoutCheck::Confirmed),
            Ok(finished) => {
                tracing::info!(
                    "a case past the {:?} time limit finished within {:?}",
                    opts.time_limit(),
                    patient.time_limit()
                );
                (finished, TimeoutCheck::Slow)
            }
        })
    }
}

/// How many times the timeout a case that timed out gets when it runs again.
pub const PATIENCE: u32 = 3;

/// What happened to a case's timeout in [`Harness::run_confirming_timeouts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutCheck {
    /// It did not time out.
    None,
    /// It timed out, then finished within [`PATIENCE`] times the limit: only slow.
    Slow,
    /// It timed out twice: the hang it seemed.
    Confirmed,
}

/// The request frame for a case: the model config (derived shapes regenerated), the input
/// dtypes, the weights' layout, and all arrays as little-endian f64 in the payload.
pub fn request(case: &Case, opts: &RunOptions) -> Frame {
    let (header, arrays, _) = request_for(case, opts, None);
    Frame {
        header,
        payload: arrays.payload(),
    }
}

/// A case's arrays as a request carries them: their shapes in order (the inputs, then each
/// layer's weights as `weights` lists them), the weights' layout (`[layer, count]` pairs),
/// the input dtypes, and the arrays themselves, which [`Arrays::write`] lays end to end as
/// little-endian f64 wherever the payload goes. Values of a float64 case run in float32 are
/// rounded to float32 on the way.
pub(crate) struct Arrays<'a> {
    pub shapes: Vec<Value>,
    pub weights: Vec<Value>,
    pub input_dtypes: Vec<Value>,
    /// In payload order, each with whether it is rounded to float32.
    data: Vec<(&'a ArrayD<f64>, bool)>,
}

impl<'a> Arrays<'a> {
    /// The case's weights, and its inputs when `with_inputs`.
    pub(crate) fn of(case: &'a Case, dtype: DType, with_inputs: bool) -> Arrays<'a> {
        Arrays::of_layers(case, dtype, with_inputs, |_| true)
    }

    /// As [`Arrays::of`], with the weights of the layers `send` accepts only.
    fn of_layers(
        case: &'a Case,
        dtype: DType,
        with_inputs: bool,
        send: impl Fn(&str) -> bool,
    ) -> Arrays<'a> {
        let round = dtype == DType::Float32 && case.dtype == DType::Float64;
        let mut data = Vec::new();
        if with_inputs {
            data.extend(
                case.inputs
                    .iter()
                    .map(|t| (&t.data, round && t.dtype.is_none())),
            );
        }
        let mut weights = Vec::new();
        for (name, ts) in case.weights.iter().filter(|(name, _)| send(name)) {
            data.extend(ts.iter().map(|t| (&t.data, round)));
            weights.push(json!([name, ts.len()]));
        }
        let input_dtypes = case
            .inputs
            .iter()
            .map(|t| json!({"dtype": t.dtype.map_or(dtype, |d| d).name()}))
            .collect();
        Arrays {
            shapes: data.iter().map(|(a, _)| json!(a.shape())).collect(),
            weights,
            input_dtypes,
            data,
        }
    }

    /// The payload's length in bytes.
    pub(crate) fn len(&self) -> usize {
        8 * self.data.iter().map(|(a, _)| a.len()).sum::<usize>()
    }

    /// Writes the payload into `out`, which is [`Arrays::len`] bytes long.
    pub(crate) fn write(&self, out: &mut [u8]) {
        let mut rest = out;
        for &(a, round) in &self.data {
            let (here, after) = std::mem::take(&mut rest).split_at_mut(8 * a.len());
            rest = after;
            match a.as_slice() {
                // On a little-endian target, the native bytes are the ones the protocol wants.
                Some(xs) if !round && cfg!(target_endian = "little") => {
                    here.copy_from_slice(native_bytes(xs))
                }
                _ => {
                    for (to, &x) in here.chunks_exact_mut(8).zip(a.iter()) {
                        let x = if round { x as f32 as f64 } else { x };
                        to.copy_from_slice(&x.to_le_bytes());
                    }
                }
            }
        }
    }

    /// The payload, in a buffer of its own.
    pub(crate) fn payload(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len()];
        self.write(&mut out);
        out
    }
}

/// What a worker holds between cases: the model it has built, under its key, and a digest of
/// the weights last set in it, by layer ([`digest`]): a digest, not a copy, so that a case
/// whose values all changed costs one pass over them, not a comparison and a copy.
#[derive(Debug)]
struct Held {
    key: String,
    model: Built,
    weights: HashMap<String, u128>,
}

/// A 128-bit XXH3 digest of a layer's weights: each array's shape, then its values' bits in
/// logical order (NaNs and signed zeros told apart). Two different sets of weights share one
/// with a chance of about 2^-128.
fn digest(arrays: &[oracle::case::Tensor]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(arrays.len() as u64).to_le_bytes());
    for a in arrays {
        let a = &a.data;
        h.update(&(a.ndim() as u64).to_le_bytes());
        for &d in a.shape() {
            h.update(&(d as u64).to_le_bytes());
        }
        match a.as_slice() {
            Some(xs) => h.update(native_bytes(xs)),
            None => {
                for x in a.iter() {
                    h.update(&x.to_bits().to_le_bytes());
                }
            }
        }
    }
    h.digest128()
}

/// What decides the model a worker builds: the config as parsed (derived shapes are not part
/// of it), the dtype, the input dtypes and the layers given weights (a layer without weights
/// in the case runs on its initial values, which a held model may no longer have).
#[derive(Debug, PartialEq, Hash)]
struct Built {
    model: oracle::case::Model,
    dtype: DType,
    input_dtypes: Vec<DType>,
    weighted: Vec<String>,
}

impl Built {
    /// Whether `case` run in `dtype` needs exactly this model; compares without copying.
    fn fits(&self, case: &Case, dtype: DType) -> bool {
        self.dtype == dtype
            && self.model == case.model
            && self.input_dtypes.len() == case.inputs.len()
            && self
                .input_dtypes
                .iter()
                .zip(&case.inputs)
                .all(|(d, t)| *d == t.dtype.unwrap_or(dtype))
            && self.weighted.len() == case.weights.len()
            && self
                .weighted
                .iter()
                .zip(case.weights.keys())
                .all(|(a, b)| a == b)
    }

    fn of(case: &Case, dtype: DType) -> Built {
        Built {
            model: case.model.clone(),
            dtype,
            input_dtypes: case
                .inputs
                .iter()
                .map(|t| t.dtype.unwrap_or(dtype))
                .collect(),
            weighted: case.weights.keys().cloned().collect(),
        }
    }

    /// The key the worker knows the model by: a hash of all of the above, the same for the
    /// same model in any run, so a worker that holds it can tell.
    fn key(&self) -> String {
        let mut h = std::hash::DefaultHasher::new();
        self.hash(&mut h);
        format!("{:016x}", h.finish())
    }
}

/// An f64 slice as its bytes, in the target's order.
fn native_bytes(xs: &[f64]) -> &[u8] {
    // SAFETY: the same memory viewed as bytes: 8 times the length, alignment 1, and every
    // byte of an f64 is initialised.
    unsafe { std::slice::from_raw_parts(xs.as_ptr().cast::<u8>(), size_of_val(xs)) }
}

/// The request's header and arrays, and what the worker will hold once it has run it. When
/// the worker holds this model (`held` fits the case), the config does not travel, and of
/// the weights only the layers whose values differ from those last set. The checker runs
/// only when the config travels.
fn request_for<'a>(
    case: &'a Case,
    opts: &RunOptions,
    held: Option<Held>,
) -> (Value, Arrays<'a>, Held) {
    let dtype = opts.dtype.unwrap_or(case.dtype);
    let held = held.filter(|held| held.model.fits(case, dtype));
    let digests: Vec<(&str, u128)> = case
        .weights
        .iter()
        .map(|(name, now)| (name.as_str(), digest(now)))
        .collect();
    let changed: Vec<&str> = digests
        .iter()
        .filter(|(name, now)| {
            held.as_ref()
                .is_none_or(|held| held.weights.get(*name) != Some(now))
        })
        .map(|(name, _)| *name)
        .collect();
    let mut arrays = Arrays::of_layers(case, dtype, true, |name| changed.contains(&name));
    let input_dtypes = std::mem::take(&mut arrays.input_dtypes);
    let case_header = if held.is_some() {
        json!({"inputs": input_dtypes})
    } else {
        json!({"model": case.model.to_json(&CheckedShapes::of(case), &[]), "inputs": input_dtypes})
    };
    let mut next = held.unwrap_or_else(|| {
        let model = Built::of(case, dtype);
        Held {
            key: model.key(),
            model,
            weights: HashMap::new(),
        }
    });
    let header = json!({
        "op": "run",
        "case": case_header,
        "dtype": dtype.name(),
        "modes": opts.modes.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "weights": std::mem::take(&mut arrays.weights),
        "shapes": std::mem::take(&mut arrays.shapes),
        "model_key": next.key,
        "python_coverage": opts.python_coverage,
    });
    for (name, now) in digests {
        if next.weights.get(name) != Some(&now) {
            next.weights.insert(name.to_owned(), now);
        }
    }
    (header, arrays, next)
}

/// The arrays of an answer, by name: its `tensors` table over the payload (little-endian f64).
pub(crate) fn decode_tensors(
    body: &Value,
    payload: &[u8],
) -> Result<HashMap<String, ArrayD<f64>>, String> {
    let mut arrays = HashMap::new();
    for t in body["tensors"].as_array().ok_or("no tensors")? {
        let name = t["name"].as_str().ok_or("tensor name")?;
        let offset = t["offset"].as_u64().ok_or("offset")? as usize;
        let shape = Vec::<usize>::deserialize(&t["shape"])
            .map_err(|e| format!("tensor {name}: shape: {e}"))?;
        let (a, _) = array_at(shape, payload, offset)?;
        if Some(a.len() as u64) != t["size"].as_u64() {
            return Err(format!("tensor {name}: size and shape differ"));
        }
        arrays.insert(name.to_owned(), a);
    }
    Ok(arrays)
}

/// The array of this shape at `offset` in a payload of little-endian f64, and the bytes it
/// takes.
fn array_at(
    shape: Vec<usize>,
    payload: &[u8],
    offset: usize,
) -> Result<(ArrayD<f64>, usize), String> {
    let bytes = shape
        .iter()
        .try_fold(8usize, |n, &d| n.checked_mul(d))
        .ok_or("shape too large")?;
    let data = offset
        .checked_add(bytes)
        .and_then(|end| payload.get(offset..end))
        .ok_or("payload too short")?
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let a = ArrayD::from_shape_vec(shape, data).map_err(|e| e.to_string())?;
    Ok((a, bytes))
}

/// A run's answer header, as the worker writes it (see `_run` in the worker's Python half):
/// parsed straight into these types rather than through a `serde_json::Value`, since one
/// comes back for every case.
#[derive(Deserialize)]
struct RunAnswer {
    /// False where the worker itself failed; [`ok_body`] reads its error.
    #[serde(default)]
    ok: bool,
    /// TF refused the case before running any mode.
    case_error: Option<PyError>,
    /// Per mode, in the order run: its error, or its calls.
    modes: Option<Vec<(Mode, ModeAnswer)>>,
    /// The outputs' shapes, in payload order.
    shapes: Option<Vec<Vec<usize>>>,
    #[serde(default)]
    reused: bool,
    #[serde(default)]
    tf_seconds: f64,
    #[serde(default)]
    worker_seconds: f64,
    #[serde(default)]
    python_lines: Vec<u32>,
}

#[derive(Deserialize)]
struct ModeAnswer {
    error: Option<PyError>,
    /// (layer, call index, number of outputs), the outputs next in the payload; with an
    /// error, the calls that finished before it.
    calls: Option<Vec<(String, usize, usize)>>,
}

/// A run's outcome and the Python lines it covered, from the answer's header (JSON text) and
/// payload.
/// The mode a dead worker announced, by name (`None`: none yet, or a name it does not know).
fn announced(mode: Option<String>) -> Option<Mode> {
    mode.and_then(|m| m.parse().ok())
}

/// Decodes a run answer's header and payload as the client does, saying only which kind of
/// outcome it holds (`ran`, `rejected`): the reader that `fuzz-self` feeds with what a
/// broken worker might write.
pub fn decode_run_answer(header: &[u8], payload: &[u8]) -> Result<&'static str, WorkerError> {
    Ok(match parse_answer(header, payload)?.0 {
        TfOutcome::Ran { .. } => "ran",
        TfOutcome::Rejected(_) => "rejected",
        _ => "other",
    })
}

fn parse_answer(header: &[u8], payload: &[u8]) -> Result<(TfOutcome, Vec<u32>), WorkerError> {
    let bad = |what: &str| WorkerError::Protocol(format!("bad run answer: {what}"));
    let answer: RunAnswer = serde_json::from_slice(header).map_err(|e| bad(&e.to_string()))?;
    if !answer.ok {
        // A failure is rare: read it as every other answer's is.
        let header: Value = serde_json::from_slice(header).map_err(|e| bad(&e.to_string()))?;
        return Err(ok_body(header).err().unwrap_or_else(|| bad("not ok")));
    }
    if let Some(e) = answer.case_error {
        return Ok((TfOutcome::Rejected(e), answer.python_lines));
    }
    // The outputs follow one another in the payload, their shapes in `shapes`.
    let mut shapes = answer.shapes.ok_or_else(|| bad("shapes"))?.into_iter();
    let mut offset = 0;
    let mut next_array = || -> Result<ArrayD<f64>, WorkerError> {
        let shape = shapes.next().ok_or_else(|| bad("missing output"))?;
        let (a, bytes) = array_at(shape, payload, offset).map_err(|e| bad(&e))?;
        offset += bytes;
        Ok(a)
    };
    let mut modes = Vec::new();
    for (mode, result) in answer.modes.ok_or_else(|| bad("modes"))? {
        // A mode that raised may carry the calls that finished before the error.
        let calls = match (&result.error, result.calls) {
            (_, Some(calls)) => calls,
            (Some(_), None) => Vec::new(),
            (None, None) => return Err(bad("calls")),
        };
        let mut outputs = LayerOutputs::new();
        for (layer, node, n) in calls {
            let outs = (0..n)
                .map(|_| next_array())
                .collect::<Result<Vec<_>, _>>()?;
            outputs.insert((layer, node), outs);
        }
        modes.push((
            mode,
            match result.error {
                Some(e) => ModeOutcome::Error(e, outputs),
                None => ModeOutcome::Outputs(outputs),
            },
        ));
    }
    modes.sort_by_key(|(m, _)| *m);
    let outcome = TfOutcome::Ran {
        modes,
        reused: answer.reused,
        tf_seconds: answer.tf_seconds,
        worker_seconds: answer.worker_seconds,
    };
    Ok((outcome, answer.python_lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Case {
        Case::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../oracle/tests/fixtures/keras/dense_chain.case.json"),
        )
        .unwrap()
    }

    /// The layers whose weights a request carries, and whether it carries the config.
    fn sent(header: &Value) -> (Vec<String>, bool) {
        let layers = header["weights"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w[0].as_str().unwrap().to_owned())
            .collect();
        (layers, header["case"].get("model").is_some())
    }

    /// The payload's f64 values, read back.
    fn values(payload: &[u8]) -> Vec<f64> {
        payload
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn a_payload_holds_the_inputs_then_the_weights_rounded_as_they_run() {
        let mut case = fixture();
        case.dtype = DType::Float64;
        let third = 1.0 / 3.0;
        case.inputs[0].data.fill(third);
        for ts in case.weights.values_mut() {
            for t in ts {
                t.data.fill(-third);
            }
        }
        let expected = |x: f64, round: bool| if round { x as f32 as f64 } else { x };
        for (dtype, round) in [(DType::Float64, false), (DType::Float32, true)] {
            let opts = RunOptions {
                dtype: Some(dtype),
                ..RunOptions::default()
            };
            let frame = request(&case, &opts);
            let got = values(&frame.payload);
            let n_in = case.inputs[0].data.len();
            let n_w: usize = case.weights.values().flatten().map(|t| t.data.len()).sum();
            assert_eq!(got.len(), n_in + n_w);
            assert!(got[..n_in].iter().all(|&x| x == expected(third, round)));
            assert!(got[n_in..].iter().all(|&x| x == expected(-third, round)));
            let shapes = frame.header["shapes"].as_array().unwrap();
            assert_eq!(shapes[0], json!(case.inputs[0].data.shape()));
            assert_eq!(shapes.len(), 1 + case.weights.values().flatten().count());
        }
        // An input with its own dtype keeps its values.
        case.inputs[0].dtype = Some(DType::Float64);
        let opts = RunOptions {
            dtype: Some(DType::Float32),
            ..RunOptions::default()
        };
        let got = values(&request(&case, &opts).payload);
        assert_eq!(got[0], third);
        assert_eq!(*got.last().unwrap(), -third as f32 as f64);
    }

    /// A case that timed out runs again with every part of its time limit, the XLA
    /// budget included, three times as long: a slow XLA compile is not a hang.
    #[test]
    fn the_second_run_of_a_timeout_is_patient_with_xla_compiles_too() {
        let opts = RunOptions {
            modes: vec![Mode::Eager, Mode::Xla],
            limits: Limits {
                timeout: Duration::from_secs(10),
                ..Limits::default()
            },
            xla_budget: Duration::from_secs(20),
            ..RunOptions::default()
        };
        assert_eq!(opts.time_limit(), Duration::from_secs(30));
        assert_eq!(opts.patient().time_limit(), Duration::from_secs(90));
        let eager = RunOptions {
            modes: vec![Mode::Eager],
            ..opts
        };
        assert_eq!(eager.patient().time_limit(), Duration::from_secs(30));
    }

    #[test]
    fn a_held_model_gets_only_the_weights_that_changed() {
        let opts = RunOptions::default();
        let base = fixture();
        let names: Vec<String> = base.weights.keys().cloned().collect();
        assert!(names.len() >= 2, "{names:?}");
        let (frame, _, held) = request_for(&base, &opts, None);
        assert_eq!(sent(&frame), (names.clone(), true));
        let (frame, _, held) = request_for(&base, &opts, Some(held));
        assert_eq!(sent(&frame), (vec![], false));
        assert!(frame["shapes"].as_array().unwrap().len() == base.inputs.len());

        let mut one = base.clone();
        one.weights[1][0].data[[0, 0]] += 1.0;
        let (frame, _, held) = request_for(&one, &opts, Some(held));
        assert_eq!(sent(&frame), (vec![names[1].clone()], false));
        // NaN equals itself bit for bit: setting the same NaN again is not a change.
        let mut nan = one.clone();
        nan.weights[0][0].data[[0, 0]] = f64::NAN;
        let (_, _, held) = request_for(&nan, &opts, Some(held));
        let (frame, _, held) = request_for(&nan, &opts, Some(held));
        assert_eq!(sent(&frame), (vec![], false));
        // 0.0 and -0.0 compare equal as numbers but differ in their bits: a change.
        let mut zero = nan.clone();
        zero.weights[0][0].data[[0, 1]] = 0.0;
        let (_, _, held) = request_for(&zero, &opts, Some(held));
        let mut negative = zero.clone();
        negative.weights[0][0].data[[0, 1]] = -0.0;
        let (frame, _, held) = request_for(&negative, &opts, Some(held));
        assert_eq!(sent(&frame), (vec![names[0].clone()], false));

        // Back to the first weights: the held model has the changed ones.
        let (frame, _, held) = request_for(&base, &opts, Some(held));
        assert_eq!(sent(&frame), (names.clone(), false));

        // A layer left to its initial values needs a fresh model, not the held one.
        let mut fewer = base.clone();
        fewer.weights.shift_remove(&names[0]);
        let (frame, _, _) = request_for(&fewer, &opts, Some(held));
        assert_eq!(sent(&frame), (vec![names[1].clone()], true));
        assert_ne!(
            frame["model_key"],
            request(&base, &opts).header["model_key"]
        );
    }

    #[test]
    fn an_answer_gives_each_calls_outputs_in_payload_order_and_each_failure_its_kind() {
        // Two modes: graph's calls, then eager's error; the layer name has a JSON escape.
        let header = br#"{"ok": true, "modes": [["graph", {"calls": [["d\u00e9", 0, 2], ["e", 1, 1]]}],
            ["eager", {"error": {"type": "ValueError", "message": "m", "phase": "call", "layer": null},
            "calls": [["p", 0, 1]]}]],
            "shapes": [[2], [], [1, 1], [1]], "reused": true, "tf_seconds": 0.5, "python_lines": [7, 4294967295],
            "worker_seconds": 0.75}"#;
        let payload: Vec<u8> = [1.0f64, 2.0, 3.0, f64::NAN, 5.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let (outcome, lines) = parse_answer(header, &payload).unwrap();
        assert_eq!(lines, [7, u32::MAX]);
        let TfOutcome::Ran {
            modes,
            reused,
            tf_seconds,
            worker_seconds,
        } = outcome
        else {
            panic!("{outcome:?}")
        };
        assert!(reused);
        assert_eq!((tf_seconds, worker_seconds), (0.5, 0.75));
        assert_eq!(modes.len(), 2);
        let ModeOutcome::Error(e, before) = &modes[0].1 else {
            panic!("{modes:?}")
        };
        // The call that finished before the error, after graph's outputs in the payload.
        assert_eq!(before.len(), 1);
        assert_eq!(before[&("p".to_owned(), 0)][0].as_slice().unwrap(), [5.0]);
        assert_eq!(
            (modes[0].0, e.kind.as_str(), e.layer.as_ref()),
            (Mode::Eager, "ValueError", None)
        );
        let ModeOutcome::Outputs(outs) = &modes[1].1 else {
            panic!("{modes:?}")
        };
        assert_eq!(modes[1].0, Mode::Graph);
        let first = &outs[&("dé".to_owned(), 0)];
        assert_eq!(first[0].as_slice().unwrap(), [1.0, 2.0]);
        assert_eq!((first[1].shape(), first[1].sum()), (&[][..], 3.0));
        assert!(outs[&("e".to_owned(), 1)][0][[0, 0]].is_nan());

        // A payload shorter than the shapes say is a protocol error, not a panic.
        assert!(matches!(
            parse_answer(header, &payload[..24]),
            Err(WorkerError::Protocol(_))
        ));
        // TF's refusal before any mode ran.
        let rejected = br#"{"ok": true, "modes": [], "shapes": [],
            "case_error": {"type": "TypeError", "message": "m", "phase": "build"}}"#;
        assert!(matches!(
            parse_answer(rejected, &[]),
            Ok((TfOutcome::Rejected(PyError { ref phase, .. }), _)) if phase == "build"
        ));
        // The worker's own failure, and answers that are not what a run answers.
        let failed = br#"{"ok": false, "error": {"type": "KeyError", "message": "'case'"}}"#;
        assert!(matches!(
            parse_answer(failed, &[]),
            Err(WorkerError::Python { ref kind, .. }) if kind == "KeyError"
        ));
        for bad in [
            &br#"{"ok": true, "shapes": []}"#[..],
            b"{\"ok\": false}",
            b"not json",
        ] {
            assert!(matches!(
                parse_answer(bad, &[]),
                Err(WorkerError::Protocol(_))
            ));
        }
    }
}

//! The command line: one subcommand per job, each with its own arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "semfuzz",
    version,
    about = "Finds bugs in TensorFlow/Keras by running random layer-graph models against a reference interpreter",
    after_help = "Exit codes: 0 done, nothing found; 1 done, something found; 2 bad usage or unreadable input; 3 not built yet.\n`fuzz` exits 0 after a clean finish whether or not it found something."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output (-v: info, -vv: debug, -vvv: trace). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors in the log output.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Fuzz TensorFlow: generate, repair and run models, and keep what disagrees with the reference.
    Fuzz(FuzzArgs),
    /// Run cases in TensorFlow (or only the reference) and print a verdict per case.
    Run(RunArgs),
    /// Check a Keras model without running TensorFlow: every shape/argument error, located, and numeric hazards.
    Check(CheckArgs),
    /// Generate random valid (or minimally invalid) cases.
    Gen(GenArgs),
    /// Replay, deduplicate and minimise saved findings, and write standalone repros and a report.
    Triage(TriageArgs),
    /// Replay findings on a range of Keras releases (each with its TensorFlow) and say in
    /// which they reproduce: the first and the last.
    Bisect(BisectArgs),
    /// List the layer classes the reference oracle supports, with their parameter spaces.
    Layers(LayersArgs),
    /// Write a case as a .keras file or as a standalone Python script.
    Export(ExportArgs),
    /// Print the versions of semfuzz, Python, TensorFlow and Keras (asks the worker).
    Version(PythonArgs),
    /// The suppression entries (kept framework bugs, known limitations): list them, or say
    /// which explains each verdict on a case.
    #[command(subcommand)]
    Known(KnownCommand),
    /// Fuzz semfuzz's own readers (case files and sidecars, Keras JSON, .keras archives,
    /// .npz, findings folders, suppression lists, worker frames): panics, crashes, hangs and
    /// memory past the limits are saved with their inputs.
    FuzzSelf(FuzzSelfArgs),
    /// The TensorFlow worker process (started by semfuzz itself).
    #[command(name = "__worker", hide = true)]
    Worker,
}

#[derive(Debug, Subcommand)]
pub enum KnownCommand {
    /// Every entry with its scope: releases, backends, verdicts, classes, modes, dtypes.
    List(KnownListArgs),
    /// Run cases (as `run` does) and say which entry explains each verdict and by which
    /// alternative, or that none does and which condition each near entry missed.
    Explain(RunArgs),
}

#[derive(Debug, Args)]
pub struct KnownListArgs {
    /// One JSON object per entry.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub suppressions: SuppressionArgs,
}

/// Selecting the Python environment with TensorFlow.
#[derive(Debug, Args, Clone, Default)]
pub struct PythonArgs {
    /// The Python interpreter of the environment to test (default: $SEMFUZZ_PYTHON, else
    /// the project's .venv). It must be the Python minor version semfuzz was built for.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// The Keras backend to run cases on: tensorflow, jax or torch (its framework must be
    /// installed in the environment).
    #[arg(long, default_value_t)]
    pub backend: harness_py::Backend,
}

/// Which suppression entries (kept bugs, known limitations) explain verdicts.
#[derive(Debug, Clone, Args)]
pub struct SuppressionArgs {
    /// More suppression entries, in the format of the built-in ones: a folder of
    /// `<id>/kept.json` entries and `*.json` lists, or one list file. Repeatable.
    #[arg(long, value_name = "DIR")]
    pub suppressions: Vec<PathBuf>,
    /// Leave out the built-in entries (the kept bugs of crashes/ and the known limitations),
    /// so that every verdict is reported.
    #[arg(long)]
    pub no_builtin_suppressions: bool,
}

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Fuzz for this many hours (without --hours, --minutes or --runs: until Ctrl-C/SIGTERM).
    #[arg(long, conflicts_with = "minutes")]
    pub hours: Option<f64>,
    /// Fuzz for this many minutes.
    #[arg(long)]
    pub minutes: Option<f64>,
    /// Stop each client after this many executions (with --seed and --jobs 1: a
    /// reproducible campaign).
    #[arg(long)]
    pub runs: Option<u64>,
    /// Clients, one per core, each with its own TensorFlow worker, sharing the corpus.
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// The LLMP broker's port for --jobs > 1 (default: a free one).
    #[arg(long)]
    pub broker_port: Option<u16>,
    /// Where the corpus, findings and stats go.
    #[arg(long, short, default_value = "fuzz-out")]
    pub out: PathBuf,
    /// Continue the campaign found in --out (corpus, findings and counters).
    #[arg(long)]
    pub resume: bool,
    /// Seed of the campaign's randomness (default: from the clock; printed at the start).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub python: PythonArgs,
    #[command(flatten)]
    pub suppressions: SuppressionArgs,
    /// The modes a case may run in; the first runs every time, another one is added to a
    /// share of runs (--second-mode-share) to compare the backend's modes. Default: the
    /// backend's (tensorflow: eager,graph,xla; jax: jit,eager; torch: eager, since a
    /// `compile` of each new model costs far more than ten eager runs on a CPU).
    #[arg(long, value_delimiter = ',')]
    pub modes: Option<Vec<harness_py::Mode>>,
    /// Share of runs that add a second mode.
    #[arg(long, default_value_t = 0.2)]
    pub second_mode_share: f64,
    /// Several backends in one campaign (overrides --backend): each case runs on one of them,
    /// a share (--second-backend-share) on two, whose outputs are compared layer by layer
    /// (`backend-mismatch`). Each backend runs its default modes, or those of --modes that
    /// are its own.
    #[arg(long, value_delimiter = ',', value_name = "BACKEND,...")]
    pub backends: Option<Vec<harness_py::Backend>>,
    /// With several backends, the share of runs that run the case on a second backend too.
    #[arg(long, default_value_t = 0.2)]
    pub second_backend_share: f64,
    /// The dtypes cases run in: a fresh model draws one; a mutated case keeps its own but for
    /// a fifth of the mutations, which change it.
    #[arg(long, value_delimiter = ',', value_parser = parse_dtype, default_value = "float32,float64")]
    pub dtype: Vec<oracle::DType>,
    /// Share of executions that send a minimally-invalid case, to test TF's validation.
    #[arg(long, default_value_t = 0.1)]
    pub invalid_share: f64,
    /// Share of mutations that replace a corpus entry by a freshly generated model: every
    /// layer of one is a new draw of its class and arguments, where a mutation changes one
    /// (on 16 planted faults a 3-minute campaign missed, 0.25 found 7, 0.05 found 1).
    #[arg(long, default_value_t = 0.25)]
    pub fresh_share: f64,
    /// Layers per generated model.
    #[arg(long, default_value_t = 10)]
    pub layers: usize,
    /// After the mutations of each corpus entry, up to this many runs that change only its
    /// input and weight values (on the model the worker already holds, several times
    /// faster than a new one); 0 for none.
    #[arg(long, default_value_t = 0)]
    pub value_burst: usize,
    /// Which corpus entry is fuzzed next: mostly those that are the smallest and fastest to
    /// reach some coverage feature (`minimizer`), or each in turn (`queue`).
    #[arg(long, value_enum, default_value = "minimizer")]
    pub scheduler: crate::fuzz::schedule::SchedulerKind,
    /// Let generated and repaired models keep triggers of the framework bugs kept in
    /// `crashes/` (by default they are steered away from them).
    #[arg(long)]
    pub keep_known_bugs: bool,
    /// Seed corpus: folders of case files added at the start (default: the repository's
    /// `seeds/`, when present).
    #[arg(long, value_name = "DIR")]
    pub seeds: Vec<PathBuf>,
    /// Another campaign's output folder (or corpus folder) to import test cases from
    /// periodically, as independent campaigns sharing a corpus do. Repeatable.
    #[arg(long, value_name = "DIR")]
    pub sync_from: Vec<PathBuf>,
    /// Seconds between imports from --sync-from.
    #[arg(long, default_value_t = 60.0)]
    pub sync_every: f64,
    /// Add the worker's Python line coverage of Keras and TF to the coverage map.
    #[arg(long)]
    pub python_coverage: bool,
    /// Seconds one case may run; one that runs past it runs again with 3 times as long, and
    /// only a case that times out twice counts as a hang.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Worker memory (MiB) above which a case counts as a memory blow-up. With several
    /// --backends, each backend's worker (and its spare) may grow to it.
    #[arg(long, default_value_t = 4096)]
    pub memory_mib: u64,
    /// No status line (findings and the summary are still printed).
    #[arg(long)]
    pub no_status: bool,
}

impl FuzzArgs {
    /// The modes given, else the backend's default ones for fuzzing.
    pub fn modes(&self) -> Vec<harness_py::Mode> {
        self.modes_of(self.python.backend)
    }

    /// The backends the campaign runs cases on (--backends, else --backend), each once.
    pub fn backends(&self) -> Vec<harness_py::Backend> {
        let mut all = self
            .backends
            .clone()
            .unwrap_or_else(|| vec![self.python.backend]);
        let mut seen = std::collections::HashSet::new();
        all.retain(|b| seen.insert(*b));
        all
    }

    /// The modes `backend` runs: those of --modes that are its own, else its defaults.
    pub fn modes_of(&self, backend: harness_py::Backend) -> Vec<harness_py::Mode> {
        match &self.modes {
            Some(m) if self.backends.is_some() => m
                .iter()
                .copied()
                .filter(|m| harness_py::Mode::of(backend).contains(m))
                .collect(),
            Some(m) => m.clone(),
            None => harness_py::Mode::fuzz_default(backend),
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Case files (*.case.json) or Keras files (*.keras: the model and weights of the file,
    /// inputs from --inputs or --seed).
    #[arg(required = true, value_name = "CASE")]
    pub cases: Vec<PathBuf>,
    /// The inputs of the one .keras file given: an .npz with one array per model input,
    /// named by its input layer or `arr_0`, `arr_1`, ... in `model.inputs` order.
    #[arg(long, value_name = "NPZ", conflicts_with = "seed")]
    pub inputs: Option<PathBuf>,
    /// Draw the inputs of .keras files from this seed (default 0): deterministic, the
    /// generators' value distributions without NaN or infinity, batch 2 where open.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Only evaluate the reference oracle; do not start TensorFlow.
    #[arg(long)]
    pub reference_only: bool,
    /// Execution modes, comma-separated: eager on every backend; graph and xla on
    /// tensorflow, jit on jax, compile on torch.
    #[arg(long, value_delimiter = ',', default_value = "eager")]
    pub modes: Vec<harness_py::Mode>,
    /// Run in this compute dtype instead of the case's own.
    #[arg(long, value_parser = parse_dtype)]
    pub dtype: Option<oracle::DType>,
    /// Seconds one case may take in TensorFlow; one that takes longer runs again with 3 times
    /// as long, and only a case that times out twice counts as a hang.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Resident memory (MiB) of the TensorFlow worker beyond which a case counts as out-of-memory.
    #[arg(long, default_value_t = 4096)]
    pub memory_mib: u64,
    /// One JSON object per case on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub python: PythonArgs,
    #[command(flatten)]
    pub suppressions: SuppressionArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A .keras file, a Keras model JSON, or a case file.
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    /// Check with this input layer's shape instead (batch axis included), e.g.
    /// `input_1=None,32,32,3` or `input_1=1,224,224,3`. Repeatable.
    #[arg(long = "input-shape", value_name = "NAME=DIMS", value_parser = crate::commands::check::args::parse_input_shape)]
    pub input_shapes: Vec<crate::commands::check::args::InputShape>,
    /// The range every input value lies in, for the numeric-hazard analysis (interval
    /// propagation from the inputs, with the model's weights, or its initializers' ranges when
    /// it has none).
    #[arg(long = "input-range", value_name = "LO,HI", default_value = "-1,1", allow_hyphen_values = true,
          value_parser = crate::commands::check::args::parse_range)]
    pub input_range: (f64, f64),
    /// Check with one layer argument changed: `LAYER.ARG=VALUE`, VALUE as JSON (`3`,
    /// `[3,3]`, `"same"`) or a bare word (`same`); a layer inside a nested model by its path
    /// (`backbone/conv1.padding=same`). An integer range `conv1.kernel_size=1..9` reports
    /// which values are valid; several ranges, which combinations are (at most 1024).
    /// Repeatable.
    #[arg(long = "set", value_name = "LAYER.ARG=VALUE", value_parser = crate::commands::check::args::parse_set)]
    pub set: Vec<crate::commands::check::args::Setting>,
    /// Also build and run the model in TensorFlow (through the worker) and show side by side
    /// whether and where TF rejects it, with TF's message.
    #[arg(long)]
    pub compare: bool,
    #[command(flatten)]
    pub python: PythonArgs,
    /// One JSON report on stdout: `{"valid", "violations", "warnings", "hazards", ...}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// How many cases.
    #[arg(long, default_value_t = 10)]
    pub count: usize,
    /// Random seed (the same seed writes the same cases).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output directory.
    #[arg(long, short, default_value = "cases")]
    pub out: PathBuf,
    /// Layers per model (input layers not counted).
    #[arg(long, default_value_t = 10)]
    pub layers: usize,
    /// The models' compute dtype.
    #[arg(long, value_parser = parse_dtype, default_value = "float64")]
    pub dtype: oracle::DType,
    /// `case` (semfuzz case files), `py` (standalone Keras scripts) or `keras` (.keras files
    /// saved by Keras, each with its inputs in an .npz beside it).
    #[arg(long, default_value = "case")]
    pub format: String,
    /// Write minimally-invalid models instead: each breaks exactly one precondition, which is
    /// written beside it (`.violation.json`).
    #[arg(long)]
    pub invalid: bool,
    /// Draw layers only from these classes (comma-separated Keras class names, as
    /// `semfuzz layers` lists them); repairs may still bring in other classes.
    #[arg(long, value_delimiter = ',', value_name = "CLASS,...")]
    pub classes: Vec<String>,
    /// Let models keep triggers of the framework bugs kept in `crashes/` (by default the
    /// repair steers them away).
    #[arg(long)]
    pub keep_known_bugs: bool,
    /// For `--format keras`: the environment whose Keras saves the files.
    #[command(flatten)]
    pub python: PythonArgs,
}

#[derive(Debug, Args)]
pub struct TriageArgs {
    /// Findings folders or folders of cases.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Minimise each reproducing finding while its signature persists; the result goes
    /// beside it, in `minimized/` (the original is never changed).
    #[arg(long)]
    pub minimize: bool,
    /// Replay each finding this many times (more than once tells flaky ones apart).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub replays: u32,
    /// Where the Markdown report goes (default: `triage.md` in the first DIR).
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// Also write the report as a self-contained HTML page here, with a picture of each
    /// minimal model (an SVG semfuzz draws itself; no Graphviz needed).
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Minimisation time per finding, in seconds (a variant still running when the time is
    /// up is let finish; a crash switches to a warm spare worker).
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub time_per_finding: f64,
    /// The environment to replay in (default: $SEMFUZZ_PYTHON, else the project's .venv).
    /// Repeat it to replay every finding in each environment (another Keras release, the
    /// nightlies) and get a matrix of finding × environment: reproduces, no longer
    /// reproduces, unsupported. The report and minimisation follow the first.
    #[arg(long = "python", value_name = "PATH")]
    pub pythons: Vec<PathBuf>,
    /// The Keras backend to replay on (default: the one the findings record, in their
    /// `outcome.json`; findings of several backends need it said).
    #[arg(long)]
    pub backend: Option<harness_py::Backend>,
    #[command(flatten)]
    pub suppressions: SuppressionArgs,
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    /// Findings folders (a kept bug's folder in `crashes/` too) or case files.
    #[arg(required = true, value_name = "PATH")]
    pub targets: Vec<PathBuf>,
    /// The Keras releases: a range of minor releases (`3.0..3.15`, the last patch of each,
    /// from `python/targets.tsv`) or a list (`3.3.3,3.15.1`). Each gets its cached
    /// environment (`make setup KERAS=...`), made on first use.
    #[arg(long, value_name = "RANGE")]
    pub keras: String,
    /// Write the releases that show each kept bug into its `kept.json` (`from` the first,
    /// `before` the first later release that no longer shows it).
    #[arg(long)]
    pub write_releases: bool,
    /// Where the Markdown report goes (default: `bisect.md` in the current folder).
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LayersArgs {
    /// JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// List what this environment's Keras offers instead (its layer classes, each with its
    /// constructor's arguments and defaults, and whether the reference supports it).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// With it, list what Keras offers on this backend (tensorflow, jax or torch), in the
    /// environment of --python (default: $SEMFUZZ_PYTHON, else the project's .venv).
    #[arg(long)]
    pub backend: Option<harness_py::Backend>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The case to export.
    #[arg(value_name = "CASE")]
    pub case: PathBuf,
    /// `keras` (a .keras file) or `py` (a standalone script).
    #[arg(long, default_value = "py")]
    pub format: String,
    /// Where to write it (a `.keras` file's inputs go beside it, `NAME.npz`).
    #[arg(long, short)]
    pub output: PathBuf,
    /// For `--format py`, the verdict of the finding the script reproduces
    /// (`missing-validation`, `late-error`, `unclear-error`, ...): for a model the reference
    /// calls invalid, the script exits 1 exactly while the framework still does what that
    /// verdict says (takes the model; refuses it only with a kernel's or an internal error;
    /// refuses it with a message naming neither the layer nor the argument), 0 once not.
    /// Default: the `verdict` of the `outcome.json` beside the case (a findings or crashes/
    /// folder), else `missing-validation`'s rule. No effect on a valid model's script.
    #[arg(long, value_name = "KIND", value_parser = parse_verdict)]
    pub verdict: Option<judge::Kind>,
    /// For `--format py`, the modes the script runs the model in, each compared with the
    /// reference (`graph` or `xla` on tensorflow, `jit` on jax, `compile` on torch). Default:
    /// those of the finding in the `outcome.json` beside the case (its verdict's mode; every
    /// mode it ran for a `mode-mismatch`), else eager.
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<harness_py::Mode>,
    /// For `--format keras`: the environment whose Keras saves the file; for `--format py`,
    /// `--backend` is the backend the script sets before Keras is imported.
    #[command(flatten)]
    pub python: PythonArgs,
}

/// A verdict by its name (`late-error`), as findings folders and `outcome.json` name it.
pub fn parse_verdict(s: &str) -> Result<judge::Kind, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| format!("`{s}`: expected a verdict, e.g. missing-validation, late-error, unclear-error, mismatch"))
}

fn parse_dtype(s: &str) -> Result<oracle::DType, String> {
    match s {
        "float32" => Ok(oracle::DType::Float32),
        "float64" => Ok(oracle::DType::Float64),
        _ => Err(format!("`{s}`: expected float32 or float64")),
    }
}

#[derive(Debug, Args)]
pub struct FuzzSelfArgs {
    /// Minutes for all the targets together (shared equally).
    #[arg(long, default_value_t = 1.0)]
    pub minutes: f64,
    /// Executions per target instead of a time (reproducible with --seed).
    #[arg(long)]
    pub runs: Option<u64>,
    /// The seed of the mutations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The readers to fuzz (default: all). Repeatable.
    #[arg(long, value_enum)]
    pub target: Vec<crate::commands::fuzz_self::targets::Target>,
    /// Run each file of this folder once instead of fuzzing (regression inputs).
    #[arg(long, value_name = "DIR")]
    pub inputs: Option<PathBuf>,
    /// Where findings go: `<out>/<target>/findings/`.
    #[arg(long, default_value = "target/fuzz-self")]
    pub out: PathBuf,
    /// The address space one target's process may take, in MiB: an input that makes a
    /// reader allocate past it is a finding.
    #[arg(long, default_value_t = 1024)]
    pub memory_mib: u64,
    /// Seconds one execution may take before it counts as a hang.
    #[arg(long, default_value_t = 5.0)]
    pub hang_secs: f64,
    /// Run as one target's process (started by fuzz-self itself).
    #[arg(long, hide = true)]
    pub child: bool,
}

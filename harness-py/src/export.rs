//! A case as a standalone Python script: plain Keras constructor calls, the weights and inputs
//! inline, the backend's outputs printed next to the reference's, and an exit status that
//! says whether they agree (0) or not (1). For a case the reference calls invalid, the
//! status follows the finding's verdict instead: 1 while the framework still does what the
//! verdict describes (takes the model, refuses it only inside a kernel, or with a message that
//! names neither the layer nor the argument), 0 once it does not. It needs only the
//! backend's framework, Keras and NumPy.

use std::fmt::Write as _;

use judge::verdict::INTERNAL_MESSAGES;
use judge::{Kind, Mode};
use ndarray::ArrayD;
use oracle::case::{Arg, Layer, ModelKind, TensorRef};
use oracle::check::{CheckError, check, eval};
use oracle::{Case, DType};
use serde_json::Value;

/// Config keys a constructor call leaves out: bookkeeping and training-time objects.
fn inert(key: &str, value: &Value) -> bool {
    matches!(key, "name" | "trainable" | "dtype" | "activity_regularizer")
        || key.ends_with("_initializer")
        || key.ends_with("_regularizer")
        || key.ends_with("_constraint")
        || (key == "quantization_config" && value.is_null())
}

/// A JSON value as a Python literal.
fn py(v: &Value) -> String {
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("{}", Value::String(s.clone())),
        Value::Array(a) => format!("[{}]", a.iter().map(py).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), py(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A Python identifier for a layer name.
fn ident(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        s.insert(0, 'l');
    }
    format!("{s}_")
}

fn tensor_var(t: &TensorRef, multi: &dyn Fn(&str) -> bool) -> String {
    let base = format!("{}{}", ident(&t.layer), t.node);
    if multi(&t.layer) {
        format!("{base}[{}]", t.index)
    } else {
        base
    }
}

fn arg(a: &Arg, multi: &dyn Fn(&str) -> bool) -> String {
    match a {
        Arg::Tensor { source, .. } => tensor_var(source, multi),
        Arg::List(v) => format!(
            "[{}]",
            v.iter()
                .map(|x| arg(x, multi))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Arg::Object(v) => format!(
            "{{{}}}",
            v.iter()
                .map(|(k, x)| format!("{}: {}", Value::String(k.clone()), arg(x, multi)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Arg::Literal(v) => py(v),
    }
}

/// A float as a Python expression (NumPy's names for the special values).
fn py_float(x: f64) -> String {
    if x.is_nan() {
        "np.nan".to_owned()
    } else if x.is_infinite() {
        if x > 0.0 {
            "np.inf".to_owned()
        } else {
            "-np.inf".to_owned()
        }
    } else {
        format!("{x:?}")
    }
}

fn array(a: &ArrayD<f64>, dtype: &str) -> String {
    let data: Vec<String> = a.iter().map(|&x| py_float(x)).collect();
    format!(
        "np.array([{}], dtype=\"{dtype}\").reshape({:?})",
        data.join(", "),
        a.shape()
    )
}

/// A constructor argument as Python: a serialized Keras object (a wrapper's `layer`, an
/// `RNN`'s `cell`, each of a list of cells) is deserialized into the object the constructor
/// wants; anything else is a literal.
fn kwarg(v: &Value) -> String {
    match v {
        Value::Object(o) if o.contains_key("class_name") && o.contains_key("config") => {
            format!("keras.saving.deserialize_keras_object({})", py(v))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(kwarg).collect::<Vec<_>>().join(", ")),
        _ => py(v),
    }
}

/// The constructor (or operation) call of one layer entry.
fn constructor(l: &Layer) -> String {
    if l.nested.is_some()
        || l.module
            .as_deref()
            .is_some_and(|m| m.starts_with("keras.src.models"))
        || l.class_name == "Sequential"
    {
        let mut entry = serde_json::Map::new();
        entry.insert(
            "module".into(),
            l.module.clone().map_or(Value::Null, Value::String),
        );
        entry.insert("class_name".into(), Value::String(l.class_name.clone()));
        entry.insert(
            "config".into(),
            l.nested
                .as_ref()
                .map(|m| m.to_json(&oracle::case::DeclaredInputShapes, &[]))
                .unwrap_or(Value::Object(l.config.clone())),
        );
        entry.insert("registered_name".into(), l.registered_name.clone());
        return format!(
            "keras.saving.deserialize_keras_object({})",
            py(&Value::Object(entry))
        );
    }
    let kwargs: Vec<String> = l
        .config
        .iter()
        .filter(|(k, v)| !inert(k, v))
        .map(|(k, v)| format!("{k}={}", kwarg(v)))
        .collect();
    let mut all = kwargs;
    all.push(format!("name={}", Value::String(l.name.clone())));
    format!("layers.{}({})", l.class_name, all.join(", "))
}

/// The error types semfuzz's judge takes, on `backend`, for a refusal from inside a kernel or
/// by an accident of Keras's code: a `late-error`.
fn late_error_types(backend: judge::Backend) -> Vec<&'static str> {
    judge::verdict::kernel_error_types(backend)
        .iter()
        .chain(&judge::verdict::INTERNAL_ERRORS)
        .copied()
        .collect()
}

/// How the script of a case the reference calls invalid ends.
struct InvalidEnding {
    /// The reference's objection, on one line.
    violation: String,
    /// What the docstring says of the exit status.
    doc: String,
    /// The Python that exits, given `error` (what building or running the model raised, or
    /// `None`) and `message` (its text, as semfuzz's worker keeps it).
    code: String,
}

/// The exit status of an invalid case's script, by the finding's verdict (`None`, or a verdict
/// about a valid model: as for `missing-validation`). Each is 1 exactly while the framework
/// still does what the verdict says, by the judge's rules where the script can apply them:
/// - `late-error`: the error is of a type the judge calls a kernel's or an accident
///   ([`late_error_types`]), or its innermost message is an accident's
///   ([`INTERNAL_MESSAGES`], wrapped or not);
/// - `unclear-error`: the message names neither the layer (quoted, as a variable path, or by
///   its class) nor the argument, as `judge::verdict::ProblemNames` reads it;
/// - `missing-validation`: the model builds and runs, or a layer built after the invalid
///   one refuses while the model is built (every call of the invalid layer was made: Keras
///   builds layers in order, so it took the violation). A refusal while the model runs is
///   taken as the invalid layer's (the script cannot locate it as the worker does).
fn invalid_ending(
    case: &Case,
    v: &oracle::Violation,
    verdict: Option<Kind>,
    backend: judge::Backend,
) -> InvalidEnding {
    let framework = judge::verdict::Framework::of(backend);
    let list = |xs: &[String]| {
        let quoted: Vec<String> = xs.iter().map(|x| py(&Value::String(x.clone()))).collect();
        format!("[{}]", quoted.join(", "))
    };
    let message = "message = \"\" if error is None else str(error)[:2000]  # as semfuzz keeps it\n";
    let (doc, code) = match verdict {
        Some(Kind::LateError) => {
            let types: Vec<String> = late_error_types(backend)
                .into_iter()
                .map(str::to_owned)
                .collect();
            let internal: Vec<String> = INTERNAL_MESSAGES.iter().map(|m| m.to_string()).collect();
            (
                format!(
                    "The reference calls the model invalid and the finding is a late error: exits 1 while\n{framework} refuses it only with an error of its kernels or an internal Python error (one of\nLATE_ERRORS), 0 once Keras refuses it with its own error or the model runs."
                ),
                format!(
                    "# late-error: the error types semfuzz takes for a kernel's refusal or an accident of\n# Keras's code, and what Python says for such an accident (or a math function outside its\n# domain). semfuzz builds models from their config, where Keras wraps a failing\n# constructor's error (\"... Exception encountered: <message>\"); this script calls the\n# constructors, which raise it unwrapped.\nLATE_ERRORS = {}\nINTERNAL_MESSAGES = {}\n{message}inner = message.rsplit(\"Exception encountered: \", 1)[-1]\nlate = error is not None and (\n    type(error).__name__ in LATE_ERRORS or any(m in inner for m in INTERNAL_MESSAGES)\n)\nsys.exit(1 if late else 0)",
                    list(&types),
                    list(&internal)
                ),
            )
        }
        Some(Kind::UnclearError) => {
            let layer = &v.layer;
            let judge::verdict::ProblemNames { names, argument } =
                judge::verdict::ProblemNames::of(v);
            let param = argument.as_deref().unwrap_or(&v.parameter);
            let argument = argument
                .as_ref()
                .map_or("None".to_owned(), |p| py(&Value::String(p.clone())));
            (
                format!(
                    "The reference calls the model invalid and the finding is an unclear error: prints the\nerror's message and exits 1 while it names neither layer '{layer}' (quoted, or by its\nclass) nor the argument `{param}`, 0 once it names either or the model runs."
                ),
                format!(
                    "# unclear-error: what names the problem in a message (semfuzz's rule): the layer's name\n# quoted or as a variable path, its class, or the argument's name in any case.\nNAMES = {}\nARGUMENT = {argument}\n{message}named = any(n in message for n in NAMES) or (\n    ARGUMENT is not None and ARGUMENT.lower() in message.lower()\n)\nsys.exit(1 if error is not None and not named else 0)",
                    list(&names)
                ),
            )
        }
        _ => {
            // The variables the invalid layer's calls assign, in a functional model it is a
            // layer of.
            let calls: Vec<String> = match (&case.model.kind, case.model.layer(&v.layer)) {
                (ModelKind::Functional { .. }, Some(l)) => (0..l.nodes.len())
                    .map(|n| format!("{}{n}", ident(&l.name)))
                    .collect(),
                _ => Vec::new(),
            };
            let layer = &v.layer;
            let (doc, past) = if calls.is_empty() {
                (
                    format!(
                        "The reference calls the model invalid: exits 1 while {framework} runs it, 0 once building\nor running it refuses it."
                    ),
                    "False".to_owned(),
                )
            } else {
                (
                    format!(
                        "The reference calls the model invalid: exits 1 while {framework} takes it (runs it, or\nbuilds '{layer}' and only a later layer refuses while the model is built), 0 once it\nis refused at '{layer}' (or before), built or run."
                    ),
                    format!(
                        "\"model\" not in globals() and all(c in globals() for c in {})",
                        list(&calls)
                    ),
                )
            };
            (
                doc,
                format!(
                    "# missing-validation: whether every call of the invalid layer was made when a later layer\n# refused, while the model was built.\npast = {past}\nsys.exit(1 if error is None or past else 0)"
                ),
            )
        }
    };
    InvalidEnding {
        violation: v.to_string().replace('\n', " "),
        doc,
        code,
    }
}

/// The repro of a `backend-mismatch`: runs `repro-<a>.py` and `repro-<b>.py` (the case's
/// script for each backend, beside it) in a process each, since a process's Keras runs on
/// one backend, and compares their outputs with the scripts' own tolerance. Exits 1 while
/// the two backends differ, 0 when they agree, 2 when a script does not reach its outputs.
pub fn backend_pair_script(source: &str, a: judge::Backend, b: judge::Backend) -> String {
    format!(
        r#""""Repro of a difference between the {a} and {b} backends on the semfuzz case {source}.

Runs repro-{a}.py and repro-{b}.py (the same model, weights and inputs; one process each,
as Keras picks its backend once per process), and compares their outputs with the
tolerance the scripts carry. Exits 1 while the backends differ, 0 when they agree, 2
when a backend's script does not get as far as its outputs. Needs Keras, NumPy and both
backends' frameworks.
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BACKENDS = ["{a}", "{b}"]

# Runs one backend's script up to its outputs (it exits after comparing them with the
# reference; that verdict is not this repro's) and saves them with its tolerance.
RUNNER = """
import sys
import numpy as np
script, out = sys.argv[1], sys.argv[2]
g = {{"__name__": "__main__", "__file__": script}}
try:
    exec(compile(open(script).read(), script, "exec"), g)
except SystemExit:
    pass
actual = [np.asarray(g["ops"].convert_to_numpy(a), dtype=np.float64) for a in g["actual"]]
np.savez(out, *actual, tolerance=np.array([g["ATOL"], g["RTOL"]]))
"""

results = {{}}
with tempfile.TemporaryDirectory() as tmp:
    for backend in BACKENDS:
        out = os.path.join(tmp, backend + ".npz")
        script = os.path.join(HERE, "repro-" + backend + ".py")
        ran = subprocess.run([sys.executable, "-c", RUNNER, script, out], stdout=subprocess.DEVNULL)
        if ran.returncode != 0:
            print(f"repro-{{backend}}.py did not run to its outputs (exit {{ran.returncode}})")
            sys.exit(2)
        with np.load(out) as f:
            results[backend] = [f["arr_%d" % i] for i in range(len(f.files) - 1)], f["tolerance"]

(xs, (atol, rtol)), (ys, _) = results[BACKENDS[0]], results[BACKENDS[1]]
ok = True
for i, (x, y) in enumerate(zip(xs, ys)):
    print(f"output {{i}}: {{BACKENDS[0]}} {{x.tolist()}}")
    print(f"output {{i}}: {{BACKENDS[1]}} {{y.tolist()}}")
    if x.shape != y.shape or not np.allclose(y, x, rtol=rtol, atol=atol, equal_nan=True):
        print(f"output {{i}} DIFFERS between {{BACKENDS[0]}} and {{BACKENDS[1]}}")
        ok = False
sys.exit(0 if ok else 1)
"#
    )
}

/// The script for a case (for an invalid one: exit 1 while the framework takes the model, as
/// for a `missing-validation`).
pub fn python_script(case: &Case, source: &str, backend: judge::Backend) -> String {
    finding_script(case, source, backend, None, &[])
}

/// The script for a case whose finding has the verdict `verdict`: for a case the reference
/// calls invalid, it exits 1 exactly while the framework still does what that verdict
/// describes (see [`invalid_ending`]); for a valid one the verdict changes nothing. The model
/// runs in each of `modes` (the modes the finding showed in; eager where none is given), and
/// a valid case's script exits 1 where any of them disagrees with the reference; an invalid
/// one's runs the first.
pub fn finding_script(
    case: &Case,
    source: &str,
    backend: judge::Backend,
    verdict: Option<Kind>,
    modes: &[Mode],
) -> String {
    let modes = if modes.is_empty() {
        &[Mode::Eager][..]
    } else {
        modes
    };
    oracle::backend::with(backend, || {
        script_for(case, source, backend, verdict, modes)
    })
}

/// The modes a finding's script runs the model in: for a `mode-mismatch`, every mode the case
/// ran in (`ran`; which one is wrong is the reference's call); otherwise the verdict's own
/// mode, if it has one (eager where not).
pub fn finding_modes(kind: Option<Kind>, mode: Option<Mode>, ran: &[Mode]) -> Vec<Mode> {
    match (kind, mode) {
        (Some(Kind::ModeMismatch), _) if !ran.is_empty() => ran.to_vec(),
        (_, Some(mode)) => vec![mode],
        _ => Vec::new(),
    }
}

/// The definition of the function a script runs the model on `feed` with in `mode`
/// (`run_<mode>`).
fn mode_function(mode: Mode) -> &'static str {
    match mode {
        Mode::Eager => "def run_eager(feed):\n    return model(feed, training=False)\n",
        Mode::Graph => {
            "import tensorflow as tf  # noqa: E402\n\nrun_graph = tf.function(lambda feed: model(feed, training=False))\n"
        }
        Mode::Xla => {
            "import tensorflow as tf  # noqa: E402\n\nrun_xla = tf.function(lambda feed: model(feed, training=False), jit_compile=True)\n"
        }
        Mode::Jit => {
            "# jax.jit of the model's stateless call, the weights passed as arguments.\njitted = jax.jit(lambda trainable, fixed, feed: model.stateless_call(trainable, fixed, feed, training=False)[0])\n\n\ndef run_jit(feed):\n    trainable = [v.value for v in model.trainable_variables]\n    fixed = [v.value for v in model.non_trainable_variables]\n    return jitted(trainable, fixed, feed)\n"
        }
        Mode::Compile => {
            "import torch  # noqa: E402\n\nrun_compile = torch.compile(lambda feed: model(feed, training=False))\n"
        }
    }
}

/// [`finding_script`], the reference evaluated for `backend`.
fn script_for(
    case: &Case,
    source: &str,
    backend: judge::Backend,
    verdict: Option<Kind>,
    modes: &[Mode],
) -> String {
    let names: Vec<&str> = modes.iter().map(|m| m.name()).collect();
    let call = format!("run_{}(feed)", names[0]);
    let dtype = case.dtype.name();
    let oracle = check(case);
    let multi_outputs: std::collections::HashSet<String> = match &oracle {
        Ok(a) => a
            .calls
            .iter()
            .filter(|c| c.outputs.len() > 1)
            .map(|c| case.model.layers[c.layer].name.clone())
            .collect(),
        Err(_) => Default::default(),
    };
    let multi = |name: &str| multi_outputs.contains(name);
    let mut s = String::new();
    let _ = writeln!(s, "\"\"\"Standalone repro of the semfuzz case {source}.\n");
    let framework = judge::verdict::Framework::of(backend);
    let invalid = match &oracle {
        Err(CheckError::Invalid(v)) => Some(invalid_ending(case, v, verdict, backend)),
        _ => None,
    };
    match &invalid {
        Some(ending) => {
            let _ = writeln!(
                s,
                "Builds the model with plain Keras calls, sets the case's weights and inputs, and runs it in\n{framework} ({}).\n\n{}\n",
                names[0], ending.doc
            );
        }
        None => {
            let _ = writeln!(
                s,
                "Builds the model with plain Keras calls, sets the case's weights and inputs, runs it in\n{framework} ({}) and prints each model output next to semfuzz's reference output.\nExits 1 when they disagree, 0 when they agree.",
                names.join(", then ")
            );
        }
    }
    let _ = writeln!(s, "Needs only {framework}, Keras and NumPy.\n\"\"\"\n");
    if backend != judge::Backend::Tensorflow {
        let _ = writeln!(
            s,
            "import os\n\n# The backend, chosen before Keras is imported.\nos.environ[\"KERAS_BACKEND\"] = \"{backend}\""
        );
        if backend == judge::Backend::Jax {
            let _ = writeln!(
                s,
                "import jax  # noqa: E402\n\njax.config.update(\"jax_enable_x64\", True)  # float64 computed in float64"
            );
        }
    }
    let _ = writeln!(
        s,
        "import os\nimport sys\n\nos.environ.setdefault(\"TF_CPP_MIN_LOG_LEVEL\", \"3\")\n# TensorFlow's oneDNN CPU kernels, as semfuzz runs them (TF enables them itself only on\n# some CPUs).\nos.environ.setdefault(\"TF_ENABLE_ONEDNN_OPTS\", \"1\")\n\nimport numpy as np  # noqa: E402\nimport keras  # noqa: E402\nfrom keras import layers, ops  # noqa: E402,F401\n"
    );
    let _ = writeln!(
        s,
        "keras.config.set_floatx(\"{dtype}\")\nkeras.config.set_dtype_policy(\"{dtype}\")\n"
    );

    // The model, its weights and its inputs: at the top level, or inside a `try` where the
    // reference calls the model invalid (building it may be where the framework refuses it).
    let mut b = String::new();
    let model = &case.model;
    let input_refs = model.input_refs();
    if matches!(model.kind, ModelKind::Sequential) {
        let _ = writeln!(b, "model = keras.Sequential([");
        for l in &model.layers {
            if l.is_input() {
                let shape = l.input_batch_shape().unwrap_or_default();
                let _ = writeln!(
                    b,
                    "    keras.Input(batch_shape={}),",
                    py(&serde_json::json!(shape))
                        .replace('[', "(")
                        .replace(']', ",)")
                );
            } else {
                let _ = writeln!(b, "    {},", constructor(l));
            }
        }
        let _ = writeln!(b, "])");
    } else {
        let order = oracle::case::graph::topological_order(model).unwrap_or_default();
        let mut declared = std::collections::HashSet::new();
        for (li, n) in order {
            let l = &model.layers[li];
            let var = ident(&l.name);
            if l.is_input() {
                let shape = l.input_batch_shape().unwrap_or_default();
                let in_dtype = input_refs
                    .iter()
                    .position(|r| r.layer == l.name)
                    .and_then(|p| case.inputs.get(p))
                    .and_then(|t| t.dtype)
                    .map_or(dtype, DType::name);
                let shape_py = format!(
                    "({},)",
                    shape
                        .iter()
                        .map(|d| d.map_or("None".to_owned(), |x| x.to_string()))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let _ = writeln!(
                    b,
                    "{var}0 = keras.Input(batch_shape={shape_py}, dtype=\"{in_dtype}\", name={})",
                    Value::String(l.name.clone())
                );
                continue;
            }
            let node = &l.nodes[n];
            let args: Vec<String> = node
                .args
                .iter()
                .map(|a| arg(a, &multi))
                .chain(
                    node.kwargs
                        .iter()
                        .map(|(k, a)| format!("{k}={}", arg(a, &multi))),
                )
                .collect();
            if l.module
                .as_deref()
                .is_some_and(|m| m.starts_with("keras.src.ops"))
            {
                // The operation's class, made from its config as `from_config` makes it:
                // `ops.add(...)` would name it anew, and an automatic name can clash with a
                // layer's ("The name \"add\" is used 2 times").
                let config: Vec<String> = l
                    .config
                    .iter()
                    .map(|(k, v)| format!("{k}={}", py(v)))
                    .collect();
                let _ = writeln!(
                    b,
                    "{var}{n} = {}.{}({})({})",
                    l.module.as_deref().unwrap_or_default(),
                    l.class_name,
                    config.join(", "),
                    args.join(", ")
                );
                continue;
            }
            if declared.insert(l.name.clone()) {
                let _ = writeln!(b, "{var} = {}", constructor(l));
            }
            let _ = writeln!(b, "{var}{n} = {var}({})", args.join(", "));
        }
        let ModelKind::Functional { inputs, outputs } = &model.kind else {
            unreachable!()
        };
        let ends = |e: &oracle::case::Endpoints| -> String {
            let refs = e.refs();
            let vars: Vec<String> = refs.iter().map(|r| tensor_var(r, &multi)).collect();
            if vars.len() == 1 {
                vars[0].clone()
            } else {
                format!("[{}]", vars.join(", "))
            }
        };
        let _ = writeln!(
            b,
            "model = keras.Model({}, {})",
            ends(inputs),
            ends(outputs)
        );
    }
    let _ = writeln!(b);
    for (name, ts) in &case.weights {
        let arrays: Vec<String> = ts
            .iter()
            .map(|t| array(&t.data, t.dtype_or(case.dtype).name()))
            .collect();
        let _ = writeln!(
            b,
            "model.get_layer({}).set_weights([{}])",
            Value::String(name.clone()),
            arrays.join(", ")
        );
    }
    let inputs: Vec<String> = case
        .inputs
        .iter()
        .map(|t| array(&t.data, t.dtype_or(case.dtype).name()))
        .collect();
    let _ = writeln!(b, "inputs = [{}]", inputs.join(", "));
    let _ = writeln!(b, "feed = inputs[0] if len(inputs) == 1 else inputs\n");
    for &mode in modes {
        let _ = writeln!(b, "{}", mode_function(mode));
    }

    if let Some(ending) = invalid {
        let indented: Vec<String> = b
            .trim_end()
            .lines()
            .map(|l| {
                if l.is_empty() {
                    String::new()
                } else {
                    format!("    {l}")
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "# The reference calls this model invalid: {}\nerror = None\ntry:\n{}\n    out = {call}\nexcept Exception as e:  # noqa: BLE001\n    error = e\nif error is None:\n    print(\"{framework} runs it:\", out)\nelse:\n    print(\"{framework} refuses it:\", type(error).__name__, error)\n{}",
            ending.violation,
            indented.join("\n"),
            ending.code
        );
        return s;
    }
    s.push_str(&b);
    match oracle.as_ref().map(|a| (a, eval(case, a))) {
        Ok((analysis, Ok(ev))) => {
            let expected: Vec<String> = ev
                .model_outputs
                .iter()
                .map(|a| array(a, "float64"))
                .collect();
            // One tolerance for the whole model: the loosest layer's, times the depth, since
            // differences of earlier layers carry through (semfuzz itself compares layer by
            // layer on TF's own inputs; this script only sees the model's outputs).
            let depth = analysis.calls.len().max(1) as f64;
            let (mut abs, mut rel) = (0.0f64, 0.0f64);
            for call in &analysis.calls {
                let layer = &case.model.layers[call.layer];
                if let (oracle::check::CallKind::Layer(spec), Some(args)) =
                    (&call.kind, ev.inputs_of(case, call))
                {
                    let w: Vec<&ArrayD<f64>> = case
                        .weights
                        .get(&layer.name)
                        .map(|ts| ts.iter().map(|t| &t.data).collect())
                        .unwrap_or_default();
                    let t = spec.tolerance(case.dtype, &args, &w);
                    abs = abs.max(t.abs);
                    rel = rel.max(t.rel);
                }
            }
            let _ = writeln!(
                s,
                "expected = [{}]  # semfuzz's reference (f64)",
                expected.join(", ")
            );
            let _ = writeln!(
                s,
                "ATOL, RTOL = {}, {}  # loosest layer tolerance x depth {depth}\n",
                py_float((abs * depth).max(1e-300)),
                py_float((rel * depth).max(f64::EPSILON))
            );
            let _ = writeln!(
                s,
                "ok = True\nfor mode, run in [{}]:\n    actual = run(feed)\n    actual = actual if isinstance(actual, (list, tuple)) else [actual]",
                names
                    .iter()
                    .map(|m| format!("(\"{m}\", run_{m})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let _ = writeln!(
                s,
                "    for i, (e, a) in enumerate(zip(expected, actual)):\n        a = np.asarray(ops.convert_to_numpy(a), dtype=np.float64)\n        print(f\"output {{i}} ({{mode}}): {framework} {{a.tolist()}}\")\n        print(f\"output {{i}} ({{mode}}): reference  {{e.tolist()}}\")\n        if a.shape != e.shape or not np.allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True):\n            print(f\"output {{i}} ({{mode}}) DISAGREES\")\n            ok = False\nsys.exit(0 if ok else 1)"
            );
        }
        Ok((_, Err(e))) => {
            let _ = writeln!(
                s,
                "# The reference could not evaluate this case: {e}\nprint({call})\nsys.exit(0)"
            );
        }
        Err(CheckError::Invalid(_)) => unreachable!("an invalid case's script ends above"),
        Err(CheckError::Unsupported(u)) => {
            let _ = writeln!(
                s,
                "# Not judged by the reference: {}\nprint({call})\nsys.exit(0)",
                u.to_string().replace('\n', " ")
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use judge::{Judge, PyError, Suppressions, Target, TfOutcome};

    /// A model the reference calls invalid (a repeated axis) that Keras builds.
    const INVALID: &str = r#"{"format": "semfuzz-case/1", "dtype": "float64",
      "model": {"name": "m", "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "name": "input_layer",
         "config": {"batch_shape": [null, 2, 3], "name": "input_layer"}, "inbound_nodes": []},
        {"module": "keras.layers", "class_name": "UnitNormalization", "name": "unit_normalization",
         "config": {"name": "unit_normalization", "axis": [2, -1]},
         "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__",
           "config": {"shape": [null, 2, 3], "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]}],
        "input_layers": ["input_layer", 0, 0], "output_layers": ["unit_normalization", 0, 0]},
      "weights": {}, "inputs": [{"shape": [1, 2, 3], "data": [1, 1, 1, 1, 1, 1]}]}"#;

    /// The judge's verdicts on `backend` refusing [`INVALID`] with an error `kind: message`.
    fn judged(backend: judge::Backend, kind: &str, message: &str) -> Vec<Kind> {
        let case = Case::from_json_str(INVALID, "invalid.case.json").unwrap();
        let mut oracle = None;
        oracle::backend::with(backend, || oracle = Some(check(&case)));
        let oracle = oracle.expect("checked");
        let mut target = Target::unknown_tensorflow();
        target.backend = backend;
        let error = PyError {
            kind: kind.to_owned(),
            message: message.to_owned(),
            phase: "call".to_owned(),
            traceback: String::new(),
            layer: None,
            constructor: false,
        };
        Judge::new(Suppressions::none(), target)
            .judge(&case, case.dtype, &oracle, &TfOutcome::Rejected(error))
            .iter()
            .map(|v| v.kind)
            .collect()
    }

    /// The scripts' rules are the judge's: each error type they take for a late error is
    /// one, and Keras's own errors are not; each name they look for names the problem.
    #[test]
    fn invalid_case_scripts_judge_errors_as_the_judge_does() {
        let case = Case::from_json_str(INVALID, "invalid.case.json").unwrap();
        let Err(CheckError::Invalid(v)) = check(&case) else {
            panic!("the case is invalid")
        };
        for backend in [
            judge::Backend::Tensorflow,
            judge::Backend::Torch,
            judge::Backend::Jax,
        ] {
            for kind in late_error_types(backend) {
                assert_eq!(
                    judged(backend, kind, "went wrong"),
                    [Kind::LateError],
                    "{backend} {kind}"
                );
            }
            for message in INTERNAL_MESSAGES {
                let wrapped = format!(
                    "<class 'X'> could not be deserialized properly. Exception encountered: {message}"
                );
                assert_eq!(
                    judged(backend, "TypeError", &wrapped),
                    [Kind::LateError],
                    "{message}"
                );
            }
            assert_eq!(
                judged(backend, "ValueError", "went wrong"),
                [Kind::UnclearError]
            );
            let judge::verdict::ProblemNames { names, argument } =
                judge::verdict::ProblemNames::of(&v);
            // The argument is named in any case.
            let argument = argument.map(|a| a.to_uppercase());
            for name in names.iter().chain(&argument) {
                let message = format!("went wrong with {name}");
                assert_eq!(
                    judged(backend, "ValueError", &message),
                    [Kind::Agree],
                    "{message}"
                );
            }
        }
    }
}

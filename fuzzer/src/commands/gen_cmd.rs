//! `semfuzz gen --count N --out DIR`: random valid models (or minimally-invalid ones), written
//! as case files, standalone Keras scripts or `.keras` files (saved by Keras through one
//! worker for the whole run, each with its inputs in an `.npz` beside it), with a summary of
//! what was generated.

use std::path::Path;
use std::time::Instant;

use generators::stats::Summary;
use generators::{GenOptions, generate};
use harness_py::keras_file::KERAS_FILE_LIMITS;
use harness_py::{Harness, KerasFileError, WorkerError};
use oracle::case::WriteOptions;
use oracle::check::CheckedShapes;

use crate::cli::GenArgs;
use crate::exit::{Failure, Outcome};

/// Models regenerated at most per written one, when repair leaves a model invalid.
const ATTEMPTS: usize = 20;

/// What `gen` writes, parsed from `--format`.
enum Format {
    Case,
    Py,
    /// `.keras` files, saved through this harness's worker.
    Keras(Box<Harness>),
}

impl Format {
    fn extension(&self) -> &'static str {
        match self {
            Format::Case => "case.json",
            Format::Py => "py",
            Format::Keras(_) => "keras",
        }
    }

    /// Writes one case. `Ok(false)`: Keras could not build or save this case (it is
    /// skipped); an error stops the run.
    fn write(&mut self, case: &oracle::Case, path: &Path) -> Result<bool, Failure> {
        let cannot = |e: &dyn std::fmt::Display| {
            Failure::failed(format!("{}: cannot write: {e}", path.display()))
        };
        match self {
            Format::Case => case
                .write(path, &CheckedShapes::of(case), WriteOptions::default())
                .map_err(|e| cannot(&e))?,
            Format::Py => {
                let script = harness_py::export::python_script(
                    case,
                    &path.display().to_string(),
                    harness_py::Backend::Tensorflow,
                );
                std::fs::write(path, script).map_err(|e| cannot(&e))?
            }
            Format::Keras(harness) => {
                match harness.save_keras(case, path, KERAS_FILE_LIMITS) {
                    Ok(()) => {}
                    // TF refused the model, or died, hung or blew its memory on it: that case
                    // is skipped, the next one gets a worker.
                    Err(
                        e @ (KerasFileError::Keras { .. }
                        | KerasFileError::Worker {
                            source:
                                WorkerError::Died { .. }
                                | WorkerError::Timeout { .. }
                                | WorkerError::OutOfMemory { .. },
                            ..
                        }),
                    ) => {
                        tracing::warn!("not written: {e}");
                        return Ok(false);
                    }
                    Err(e) => return Err(super::keras_failure(e)),
                }
                crate::keras_case::write_inputs_beside(path, case).map_err(|e| cannot(&e))?;
            }
        }
        Ok(true)
    }
}

pub fn run(args: &GenArgs) -> Result<Outcome, Failure> {
    let mut format = match args.format.as_str() {
        "case" => Format::Case,
        "py" => Format::Py,
        "keras" if args.invalid => {
            return Err(Failure::usage(
                "--invalid --format keras: Keras refuses to build most invalid models; write them as `case` or `py`",
            ));
        }
        "keras" => Format::Keras(Box::new(super::harness(&args.python)?)),
        other => {
            return Err(Failure::usage(format!(
                "--format {other}: expected `case`, `py` or `keras`"
            )));
        }
    };
    if args.layers == 0 {
        return Err(Failure::usage(
            "--layers 0: a model needs at least one layer",
        ));
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Failure::failed(format!("{}: cannot create: {e}", args.out.display())))?;
    // With an environment named, the models are written for its Keras: only the classes,
    // arguments and activations it has.
    let builtin = judge::Suppressions::builtin().map_err(|e| Failure::failed(e.to_string()))?;
    // The release the models are for: the environment's, else the one the cases are
    // written for.
    let for_release = if args.python.python.is_some() {
        let env = super::python_env(&args.python)?;
        let command = super::worker_command(&args.python)?;
        let target = super::target_info(&command, &env)?;
        super::restrict_generation(&target);
        let target = super::target(&target.versions);
        if !args.keep_known_bugs {
            super::avoid_refusals(builtin.clone(), vec![target.clone()]);
        }
        target
    } else {
        judge::Target {
            keras: Some(harness_py::target::CASE_KERAS.to_owned()),
            tensorflow: None,
            backend: args.python.backend,
            onednn: None,
        }
    };
    let mut classes = generators::generate::classes_for(args.dtype);
    if !args.classes.is_empty() {
        for name in &args.classes {
            if !classes.iter().any(|k| k.class_name() == name) {
                return Err(Failure::usage(format!(
                    "--classes {name}: not a class generated in {} (see `semfuzz layers`)",
                    args.dtype.name()
                )));
            }
        }
        classes.retain(|k| args.classes.iter().any(|n| n == k.class_name()));
    }
    let opts = GenOptions {
        layers: args.layers,
        dtype: args.dtype,
        classes,
        balance: generators::ClassBalance::default(),
        repair: generators::RepairOptions {
            avoid: if args.keep_known_bugs {
                oracle::triggers::TriggerSet::none()
            } else {
                // The triggers the built-in entries name, on the release the models are for.
                builtin.triggers_for(&[for_release])
            },
            ..Default::default()
        },
        ..GenOptions::default()
    };
    let mut rng = generators::rng(args.seed);
    let mut summary = Summary::default();
    let started = Instant::now();
    let mut written = 0;
    let mut gave_up = 0;
    let mut refused = 0;
    for i in 0..args.count {
        let mut chosen = None;
        for _ in 0..ATTEMPTS {
            let g = generate(&opts, &mut rng);
            summary.add(&g.case, &g.repair);
            if !g.repair.valid {
                continue;
            }
            if args.invalid {
                match generators::invalid::make_minimally_invalid(&g.case, &opts.balance, &mut rng)
                {
                    Ok((case, violation)) => chosen = Some((case, Some(violation))),
                    Err(_) => continue,
                }
            } else {
                chosen = Some((g.case, None));
            }
            break;
        }
        let Some((case, violation)) = chosen else {
            gave_up += 1;
            continue;
        };
        let stem = format!("gen-{i:06}");
        let path = args.out.join(format!("{stem}.{}", format.extension()));
        if !format.write(&case, &path)? {
            refused += 1;
            continue;
        }
        if let Some(v) = violation {
            let path = args.out.join(format!("{stem}.violation.json"));
            let text = serde_json::to_string_pretty(&crate::commands::check::violation_json(&v))
                .expect("JSON values serialise");
            std::fs::write(&path, text + "\n")
                .map_err(|e| Failure::failed(format!("{}: cannot write: {e}", path.display())))?;
        }
        written += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut report = summary.to_json();
    report["written"] = written.into();
    report["gave_up"] = gave_up.into();
    if matches!(format, Format::Keras(_)) {
        report["keras_refused"] = refused.into();
    }
    report["seconds"] = seconds.into();
    report["seed"] = args.seed.into();
    report["keep_known_bugs"] = args.keep_known_bugs.into();
    let path = args.out.join("summary.json");
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&report).expect("JSON values serialise") + "\n",
    )
    .map_err(|e| Failure::failed(format!("{}: cannot write: {e}", path.display())))?;
    println!(
        "wrote {written} {} model(s) to {} in {seconds:.2} s",
        if args.invalid {
            "minimally-invalid"
        } else {
            "valid"
        },
        args.out.display()
    );
    print!("{}", summary.to_text());
    if gave_up > 0 {
        println!("{gave_up} model(s) not written: no valid model in {ATTEMPTS} attempts");
    }
    if refused > 0 {
        println!("{refused} model(s) not written: Keras could not build or save them");
    }
    Ok(Outcome::Clean)
}

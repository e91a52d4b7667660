//! `semfuzz`: the command-line entry point. Parses arguments, sets up logging, runs one
//! subcommand and turns its outcome into an exit code; only this binary prints to the user.

/// `println!` for the whole binary: where standard output has been closed early
/// (`semfuzz run --json CASE | head -c 100`), semfuzz stops quietly, as if done, instead of
/// panicking (see [`output`]).
macro_rules! println {
    () => {
        $crate::output::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` likewise.
macro_rules! print {
    ($($arg:tt)*) => {
        $crate::output::write(format_args!($($arg)*))
    };
}

mod cli;
mod commands;
mod exit;
mod fuzz;
mod isolated;
mod keras_case;
mod output;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command, KnownCommand};
use exit::Outcome;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Outcome::Usage.code()
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    if let Command::Worker = cli.command {
        return harness_py::worker::main();
    }
    init_logging(cli.verbose, cli.quiet);
    let outcome = match cli.command {
        Command::Version(args) => commands::version::run(&args),
        Command::Run(args) => commands::run::run(&args),
        Command::Check(args) => commands::check::run(&args),
        Command::Fuzz(args) => fuzz::run(&args),
        Command::Gen(args) => commands::gen_cmd::run(&args),
        Command::Triage(args) => commands::triage::run(&args),
        Command::Bisect(args) => commands::triage::bisect::run(&args),
        Command::Layers(args) => commands::layers::run(&args),
        Command::Export(args) => commands::export::run(&args),
        Command::FuzzSelf(args) => commands::fuzz_self::run(&args),
        Command::Known(KnownCommand::List(args)) => commands::known::list(&args),
        Command::Known(KnownCommand::Explain(args)) => commands::run::explain(&args),
        Command::Worker => unreachable!("handled above"),
    };
    match outcome {
        Ok(o) => o.code(),
        Err(e) => {
            eprintln!("semfuzz: {}", e.message);
            e.outcome.code()
        }
    }
}

fn init_logging(verbose: u8, quiet: bool) {
    use tracing_subscriber::EnvFilter;
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

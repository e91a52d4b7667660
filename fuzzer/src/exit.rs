//! Exit codes, the same for every subcommand.

use std::process::ExitCode;

/// How a subcommand ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done, nothing found.
    Clean,
    /// Done, something found (a finding, an invalid model).
    Found,
    /// Bad usage or unreadable input.
    Usage,
    /// The subcommand is not built yet (exit code 3 stays reserved for what is not built,
    /// though every subcommand is built now).
    #[allow(dead_code)]
    NotBuilt,
    /// semfuzz itself failed (the worker could not start, an I/O error).
    Failed,
}

impl Outcome {
    pub fn code(self) -> ExitCode {
        ExitCode::from(match self {
            Outcome::Clean => 0,
            Outcome::Found => 1,
            Outcome::Usage => 2,
            Outcome::NotBuilt => 3,
            Outcome::Failed => 4,
        })
    }

    #[allow(dead_code)]
    pub fn not_built(command: &str) -> Result<Outcome, Failure> {
        Err(Failure {
            outcome: Outcome::NotBuilt,
            message: format!("`{command}` is not built yet"),
        })
    }
}

/// A subcommand that could not do its job: the message for the user and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub outcome: Outcome,
    pub message: String,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            outcome: Outcome::Usage,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Failure {
            outcome: Outcome::Failed,
            message: message.into(),
        }
    }
}

//! Exit codes, a contract with scripts (documented in `docs/cli.md`).

use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: success.
    Ok,
    /// 1: the input was examined and found wrong (invalid configuration or expression, an
    /// evaluation error), or could not be read.
    Failure,
    /// 2: the command line itself is wrong.
    Usage,
    /// 3: this host cannot run the OOM handler (no cgroup v2 memory controller; `run` also: no PSI while its policy reads PSI).
    Unsupported,
    /// 4: `replay` only: the recording was cut short; its complete cycles were replayed and
    /// reported, the last (possibly incomplete) one left out.
    Truncated,
    /// 5: `doctor` only: warnings, no error (something may get in the way; look at it).
    DoctorWarnings,
    /// 6: `doctor` only: at least one error (something gets in the way of OOM handling).
    DoctorErrors,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        match e {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::Failure => ExitCode::from(1),
            Exit::Usage => ExitCode::from(2),
            Exit::Unsupported => ExitCode::from(3),
            Exit::Truncated => ExitCode::from(4),
            Exit::DoctorWarnings => ExitCode::from(5),
            Exit::DoctorErrors => ExitCode::from(6),
        }
    }
}

/// A command that ends with a message and an exit code other than 0. Commands return it as
/// their error (`Err(Fail::usage(…).into())`); `finish` in `main.rs`, the one place errors
/// become exit codes, writes the message on stderr and exits with the code.
#[derive(Debug)]
pub(crate) struct Fail {
    /// The exit code.
    pub(crate) exit: Exit,
    /// What is said on stderr, as it is (one or more lines, no newline at the end).
    pub(crate) message: String,
}

impl Fail {
    /// Exit 2: the command line is wrong.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Fail {
            exit: Exit::Usage,
            message: message.into(),
        }
    }

    /// Exit 1: the input was examined and found wrong, or could not be read.
    pub(crate) fn failure(message: impl Into<String>) -> Self {
        Fail {
            exit: Exit::Failure,
            message: message.into(),
        }
    }

    /// Exit 3: this host cannot run the OOM handler.
    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        Fail {
            exit: Exit::Unsupported,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Fail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {}

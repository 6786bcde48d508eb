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
    /// 3: this host cannot run the OOM handler (no cgroup v2 memory controller, no PSI).
    Unsupported,
    /// 4: `replay` only: the recording was cut short; its complete cycles were replayed and
    /// reported, the last (possibly incomplete) one left out.
    Truncated,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        match e {
            Exit::Ok => ExitCode::SUCCESS,
            Exit::Failure => ExitCode::from(1),
            Exit::Usage => ExitCode::from(2),
            Exit::Unsupported => ExitCode::from(3),
            Exit::Truncated => ExitCode::from(4),
        }
    }
}

//! The action API: a Unix socket, `<state-dir>/oomwarden.sock`, mode 0600 (root only: records
//! hold command lines), answering one request per connection with one JSON document:
//!
//! - `status\n` → [`Status`];
//! - `actions\n` → the records kept in memory (the last 50), oldest first;
//! - `actions since=N\n` → those with an id above N (for `oomwarden actions --follow`);
//! - `recording\n` → `{"recording": "<text>"}`: the flight recorder's window, a recording
//!   `oomwarden replay` reads (for `oomwarden record --from-daemon`).

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use oomwarden_model::ActionRecord;
use serde::{Deserialize, Serialize};

/// The socket's file name in the state directory.
pub const SOCKET_NAME: &str = "oomwarden.sock";

/// What `oomwarden status` shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// oomwarden's version.
    pub version: String,
    /// The daemon's PID.
    pub pid: u32,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// The configuration file, or `<defaults>`.
    pub config_file: String,
    /// The effective configuration, as `oomwarden check` prints it.
    pub configuration: String,
    /// The layout in use and why.
    pub layout: String,
    /// Why that layout.
    pub layout_reason: String,
    /// Cycles run.
    pub cycles: u64,
    /// When the last cycle ran (RFC 3339).
    pub last_cycle_at: Option<String>,
    /// How long it took, milliseconds.
    pub last_cycle_ms: Option<f64>,
    /// `quiet`, `skipped` or the last action's outcome.
    pub last_cycle_result: Option<String>,
    /// When the trigger last fired (RFC 3339).
    pub last_trigger_at: Option<String>,
    /// The last cycle error (a context or trigger evaluation failure), with its time.
    pub last_error: Option<String>,
    /// Cycles that failed.
    pub errors: u64,
}

/// What the API serves; the run loop updates it after every cycle.
#[derive(Debug, Default)]
pub struct Shared {
    /// The status.
    pub status: Status,
    /// The records in memory, oldest first.
    pub records: Vec<ActionRecord>,
    /// The flight recorder, when it is on.
    pub flight_recorder: Option<Arc<Mutex<oomwarden_recording::Recorder>>>,
}

/// The shared state, locked briefly by the loop and by each request.
pub type SharedState = Arc<Mutex<Shared>>;

/// Why the API could not start.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// Another daemon answers on the socket.
    #[error("another oomwarden is running: {0} answers")]
    Running(PathBuf),
    /// The socket could not be created.
    #[error("cannot serve the action API on {path}: {source}")]
    Io {
        /// The socket path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Binds `<state_dir>/oomwarden.sock` (replacing a stale one left by a crash; refusing when
/// another daemon answers), makes it 0600, and serves it from a thread.
pub fn serve(state_dir: &Path, shared: SharedState) -> Result<PathBuf, ApiError> {
    let path = state_dir.join(SOCKET_NAME);
    let io = |source| ApiError::Io {
        path: path.clone(),
        source,
    };
    if path.exists() {
        if UnixStream::connect(&path).is_ok() {
            return Err(ApiError::Running(path));
        }
        std::fs::remove_file(&path).map_err(io)?;
    }
    let listener = UnixListener::bind(&path).map_err(io)?;
    // The state directory is 0700 already; the socket itself is root-only too.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    std::thread::Builder::new()
        .name("api".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                // One slow or silent client must not hold the others up for long: the
                // request has CLIENT_TIME in all, however slowly it trickles in, and so has
                // the answer.
                let _ = stream.set_write_timeout(Some(CLIENT_TIME));
                let _ = answer(stream, &shared);
            }
        })
        .map_err(io)?;
    Ok(path)
}

/// The time a client has to send its request line (and, separately, to take the answer).
pub const CLIENT_TIME: Duration = Duration::from_secs(2);
/// The longest request line read.
pub const MAX_REQUEST_BYTES: usize = 1024;

/// Reads one request line within [`CLIENT_TIME`] in all (a per-read timeout alone would let a
/// client that sends a byte a second hold the socket for minutes).
fn read_request(mut stream: &UnixStream) -> std::io::Result<String> {
    let deadline = std::time::Instant::now() + CLIENT_TIME;
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    while !line.contains(&b'\n') && line.len() < MAX_REQUEST_BYTES {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        line.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    line.truncate(MAX_REQUEST_BYTES);
    let end = line.iter().position(|b| *b == b'\n').unwrap_or(line.len());
    line.truncate(end);
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn answer(stream: UnixStream, shared: &SharedState) -> std::io::Result<()> {
    let line = read_request(&stream)?;
    let body = {
        let state = shared.lock().unwrap_or_else(PoisonError::into_inner);
        match parse_request(line.trim()) {
            Ok(Request::Status) => serde_json::to_string(&state.status),
            Ok(Request::Actions { since }) => {
                let records: Vec<&ActionRecord> = state
                    .records
                    .iter()
                    .filter(|r| since.is_none_or(|s| r.id > s))
                    .collect();
                serde_json::to_string(&records)
            }
            Ok(Request::Recording) => match &state.flight_recorder {
                Some(recorder) => {
                    let text = recorder.lock().unwrap_or_else(PoisonError::into_inner).window();
                    serde_json::to_string(&serde_json::json!({ "recording": text }))
                }
                None => serde_json::to_string(&serde_json::json!({
                    "error": "the flight recorder is off; enable flightRecorder in the OOMWardenConfig document"
                })),
            },
            Err(message) => serde_json::to_string(&serde_json::json!({ "error": message })),
        }
    }
    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    let mut stream = stream;
    stream.write_all(body.as_bytes())?;
    stream.write_all(b"\n")
}

/// A request line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `status`.
    Status,
    /// `actions` or `actions since=N`.
    Actions {
        /// Only records with a larger id.
        since: Option<u64>,
    },
    /// `recording`.
    Recording,
}

/// Parses a request line.
pub fn parse_request(line: &str) -> Result<Request, String> {
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("status"), None, _) => Ok(Request::Status),
        (Some("recording"), None, _) => Ok(Request::Recording),
        (Some("actions"), None, _) => Ok(Request::Actions { since: None }),
        (Some("actions"), Some(arg), None) => arg
            .strip_prefix("since=")
            .and_then(|n| n.parse().ok())
            .map(|since| Request::Actions { since: Some(since) })
            .ok_or_else(|| format!("bad argument {arg:?}; expected since=ID")),
        _ => Err(format!(
            "unknown request {line:?}; expected status, actions, actions since=ID or recording"
        )),
    }
}

/// Sends one request to the daemon's socket and returns its answer (one JSON document).
pub fn request(state_dir: &Path, line: &str) -> std::io::Result<String> {
    let mut stream = UnixStream::connect(state_dir.join(SOCKET_NAME))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(line.as_bytes())?;
    stream.write_all(b"\n")?;
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer)?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests() {
        assert_eq!(parse_request("status"), Ok(Request::Status));
        assert_eq!(parse_request("recording"), Ok(Request::Recording));
        assert_eq!(
            parse_request("actions"),
            Ok(Request::Actions { since: None })
        );
        assert_eq!(
            parse_request("actions since=7"),
            Ok(Request::Actions { since: Some(7) })
        );
        for bad in ["", "actions since=x", "actions 3", "kill", "status now"] {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
    }
}

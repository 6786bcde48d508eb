//! The action API: a Unix socket, `<state-dir>/oomwarden.sock`, mode 0600 (root only: records
//! hold command lines), answering one request per connection with one JSON document:
//!
//! - `status\n` → [`Status`];
//! - `actions\n` → the records kept in memory (the last 50), oldest first;
//! - `actions since=N\n` → those with an id above N (for `oomwarden actions --follow`);
//! - `recording\n` → `{"recording": "<text>"}`: the flight recorder's window, a recording
//!   `oomwarden replay` reads (for `oomwarden record --from-daemon`);
//! - `usage\n` → the usage history as `<stateDir>/usage.json` holds it (for
//!   `oomwarden rightsize`).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use oomwarden_model::ActionRecord;

use crate::metrics::{Bound, Metrics};
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
    /// OOM kills the kernel did since the daemon started (records of `kind: kernel-oom`);
    /// `null` when the watch is off (`kernelOomWatch.enabled: false`).
    #[serde(default)]
    pub kernel_oom_kills: Option<u64>,
    /// Who the pods are, as the ranking sees them; `null` before the first cycle.
    #[serde(default)]
    pub pod_identity: Option<PodIdentityStatus>,
}

/// The pod identity cache, as `status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodIdentityStatus {
    /// Where the identities in use came from: `cri`, `pod-logs` or `path`.
    pub source: String,
    /// Whether the container runtime answered the last refresh.
    pub runtime_up: bool,
    /// Pods known.
    pub pods: u64,
    /// How old the identities are, in milliseconds (the time since the runtime last
    /// answered); `null` before it has.
    pub age_ms: Option<u64>,
    /// Why the last refresh could not use the runtime.
    pub last_error: Option<String>,
}

impl PodIdentityStatus {
    /// The cache's state now.
    pub fn of(status: &oomwarden_identity::CacheStatus) -> Self {
        PodIdentityStatus {
            source: status.source.name().to_owned(),
            runtime_up: status.runtime_up,
            pods: u64::try_from(status.pods).unwrap_or(u64::MAX),
            age_ms: status
                .age()
                .map(|a| u64::try_from(a.as_millis()).unwrap_or(u64::MAX)),
            last_error: status.last_error.clone(),
        }
    }
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
    /// The usage history, when it is kept.
    pub usage: Option<crate::usage::SharedUsage>,
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

/// At most this many clients are served at once; a new one past that closes the one that has
/// waited longest (counted as `api_connections`), so silent clients cannot lock out
/// `oomwarden status`.
pub const MAX_API_CONNECTIONS: usize = 64;
/// The time a client has to send its request line (and, separately, to take the answer).
pub const CLIENT_TIME: Duration = Duration::from_secs(2);
/// The longest request line read.
pub const MAX_REQUEST_BYTES: usize = 1024;

/// Binds `<state_dir>/oomwarden.sock` (replacing a stale one left by a crash; refusing when
/// another daemon answers), makes it 0600, and serves it from a thread.
pub fn serve(state_dir: &Path, shared: SharedState) -> Result<PathBuf, ApiError> {
    serve_counted(state_dir, shared, None)
}

/// [`serve`], counting the bounds hit in `metrics`.
///
/// One tokio thread serves every client: [`MAX_API_CONNECTIONS`] at once (the oldest makes
/// room), [`CLIENT_TIME`] for the request line however slowly it trickles in, and as much
/// for the answer, [`MAX_REQUEST_BYTES`] of request. The shared state is locked only while an
/// answer is built.
pub fn serve_counted(
    state_dir: &Path,
    shared: SharedState,
    metrics: Option<Arc<Metrics>>,
) -> Result<PathBuf, ApiError> {
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
    listener.set_nonblocking(true).map_err(io)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(io)?;
    std::thread::Builder::new()
        .name("api".into())
        .spawn(move || runtime.block_on(accept_loop(listener, shared, metrics)))
        .map_err(io)?;
    Ok(path)
}

async fn accept_loop(listener: UnixListener, shared: SharedState, metrics: Option<Arc<Metrics>>) {
    let listener = match tokio::net::UnixListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "the action API cannot serve");
            return;
        }
    };
    let count = |bound: Bound| {
        if let Some(m) = &metrics {
            m.bound_hit(bound);
        }
    };
    let mut slots = oomwarden_serve::Slots::new(MAX_API_CONNECTIONS);
    let mut logged_full = false;
    loop {
        let mut stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // EMFILE and friends: wait rather than spin; the loop's own reads come first.
                tracing::warn!(error = %e, "action API: cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if slots.make_room().await {
            count(Bound::ApiConnections);
            if !std::mem::replace(&mut logged_full, true) {
                tracing::warn!(
                    limit = MAX_API_CONNECTIONS,
                    "action API: too many clients; the oldest are closed to serve new ones (logged once)"
                );
            }
        }
        let shared = Arc::clone(&shared);
        let metrics = metrics.clone();
        let task = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let Ok(line) = tokio::time::timeout(CLIENT_TIME, read_request(&mut stream)).await
            else {
                if let Some(m) = &metrics {
                    m.bound_hit(Bound::ApiClientTime);
                }
                return;
            };
            let Ok(line) = line else { return };
            let mut body = answer(&line, &shared);
            body.push('\n');
            let _ = tokio::time::timeout(CLIENT_TIME, stream.write_all(body.as_bytes())).await;
        });
        slots.push(task.abort_handle());
    }
}

/// Reads one request line, at most [`MAX_REQUEST_BYTES`] (the caller bounds the time).
async fn read_request(stream: &mut tokio::net::UnixStream) -> std::io::Result<String> {
    use tokio::io::AsyncReadExt;
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    while !line.contains(&b'\n') && line.len() < MAX_REQUEST_BYTES {
        let n = stream.read(&mut buf).await?;
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

/// The answer to a request line: one JSON document. The shared state is locked only to copy
/// what the answer needs; serialising (a flight window is megabytes) happens without it, so
/// the loop never waits for a client.
fn answer(line: &str, shared: &SharedState) -> String {
    let lock = || shared.lock().unwrap_or_else(PoisonError::into_inner);
    match parse_request(line.trim()) {
        Ok(Request::Status) => {
            let status = lock().status.clone();
            serde_json::to_string(&status)
        }
        Ok(Request::Actions { since }) => {
            let records: Vec<ActionRecord> = lock()
                .records
                .iter()
                .filter(|r| since.is_none_or(|s| r.id > s))
                .cloned()
                .collect();
            serde_json::to_string(&records)
        }
        Ok(Request::Recording) => {
            let recorder = lock().flight_recorder.clone();
            match recorder {
                Some(recorder) => {
                    let text = recorder.lock().unwrap_or_else(PoisonError::into_inner).window();
                    serde_json::to_string(&serde_json::json!({ "recording": text }))
                }
                None => serde_json::to_string(&serde_json::json!({
                    "error": "the flight recorder is off; enable flightRecorder in the OOMWardenConfig document"
                })),
            }
        }
        Ok(Request::Usage) => {
            let usage = lock().usage.clone();
            match usage {
                Some(usage) => {
                    let state = usage.lock().unwrap_or_else(PoisonError::into_inner);
                    let now = chrono::Utc::now().timestamp();
                    return oomwarden_usage::to_json(&state.history, &state.params, now)
                        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
                }
                None => serde_json::to_string(&serde_json::json!({
                    "error": "the usage history is off; usageHistory.enabled is false in the OOMWardenConfig document"
                })),
            }
        }
        Err(message) => serde_json::to_string(&serde_json::json!({ "error": message })),
    }
    .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
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
    /// `usage`.
    Usage,
}

/// Parses a request line.
pub fn parse_request(line: &str) -> Result<Request, String> {
    let mut words = line.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("status"), None, _) => Ok(Request::Status),
        (Some("recording"), None, _) => Ok(Request::Recording),
        (Some("usage"), None, _) => Ok(Request::Usage),
        (Some("actions"), None, _) => Ok(Request::Actions { since: None }),
        (Some("actions"), Some(arg), None) => arg
            .strip_prefix("since=")
            .and_then(|n| n.parse().ok())
            .map(|since| Request::Actions { since: Some(since) })
            .ok_or_else(|| format!("bad argument {arg:?}; expected since=ID")),
        _ => Err(format!(
            "unknown request {line:?}; expected status, actions, actions since=ID, recording or usage"
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
        assert_eq!(parse_request("usage"), Ok(Request::Usage));
        assert_eq!(
            parse_request("actions"),
            Ok(Request::Actions { since: None })
        );
        assert_eq!(
            parse_request("actions since=7"),
            Ok(Request::Actions { since: Some(7) })
        );
        for bad in [
            "",
            "actions since=x",
            "actions 3",
            "kill",
            "status now",
            "usage now",
        ] {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
    }
}

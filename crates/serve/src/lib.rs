//! The one HTTP server of oomwarden's side services: the daemon's metrics endpoint (with its
//! probes) and the limits controller's. Bounded so that nothing a client does can take what
//! the process's main work needs: at most [`Limits::connections`] connections (a new one
//! closes the one open longest), a request head of at most [`Limits::head_bytes`] sent within
//! [`Limits::header_timeout`], a connection's whole life within [`Limits::connection_timeout`],
//! no keep-alive, and an accept that fails (out of descriptors) waits before it is tried again
//! instead of spinning. What a route answers is the caller's ([`Respond`]); what a bound does
//! is told to the caller's [`Observer`] (metrics, logs).

mod slots;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;

pub use slots::Slots;

/// The bounds of one server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; a new one closes the one open longest.
    pub connections: usize,
    /// The most a request may send before its headers end (hyper's read buffer; 8 KiB
    /// minimum).
    pub head_bytes: usize,
    /// Time to send the request head.
    pub header_timeout: Duration,
    /// A connection's whole life.
    pub connection_timeout: Duration,
}

impl Default for Limits {
    /// 32 connections, 16 KiB of head sent within 5 s, 10 s a connection.
    fn default() -> Self {
        Limits {
            connections: 32,
            head_bytes: 16 * 1024,
            header_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(10),
        }
    }
}

/// A bound that was hit, told to the [`Observer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// A connection was closed to make room for a new one.
    Connections,
    /// A request head was larger than [`Limits::head_bytes`].
    RequestHead,
    /// A request head did not come within [`Limits::header_timeout`].
    HeaderTimeout,
    /// A connection outlived [`Limits::connection_timeout`].
    ConnectionTime,
}

/// What a server tells its owner.
pub trait Observer: Send + Sync {
    /// A bound was hit.
    fn hit(&self, hit: Hit);
    /// A connection opened (`true`) or closed (`false`).
    fn connection(&self, open: bool) {
        let _ = open;
    }
}

/// An observer that only logs each kind of bound the first time it is hit.
#[derive(Debug, Default)]
pub struct LogOnce {
    said: std::sync::Mutex<Vec<Hit>>,
}

impl Observer for LogOnce {
    fn hit(&self, hit: Hit) {
        let mut said = self
            .said
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !said.contains(&hit) {
            said.push(hit);
            tracing::warn!(?hit, "metrics endpoint: a bound was hit (said once)");
        }
    }
}

/// An answer: its status, its content type, its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl Answer {
    /// `text/plain` with `status`.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Answer {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }

    /// `404 not found`.
    pub fn not_found() -> Self {
        Answer::text(404, "not found\n")
    }
}

/// What a route answers: the method and the path in, the answer out.
pub type Respond = Arc<dyn Fn(&hyper::Method, &str) -> Answer + Send + Sync>;

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve on {addr}: {source}")]
pub struct ServeError {
    /// The address asked for.
    pub addr: SocketAddr,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// Binds `addr` (non-blocking, for a tokio runtime); the listener and the address bound (the
/// port chosen when `addr` has port 0).
pub fn bind(addr: SocketAddr) -> Result<(std::net::TcpListener, SocketAddr), ServeError> {
    let err = |source| ServeError { addr, source };
    let listener = std::net::TcpListener::bind(addr).map_err(err)?;
    listener.set_nonblocking(true).map_err(err)?;
    let bound = listener.local_addr().map_err(err)?;
    Ok((listener, bound))
}

/// Serves `respond` on `addr` from a thread of its own (a one-thread tokio runtime): what the
/// daemon does, so that no client ever touches its loop's thread. The address bound.
pub fn serve_on_thread(
    addr: SocketAddr,
    name: &str,
    limits: Limits,
    respond: Respond,
    observer: Arc<dyn Observer>,
) -> Result<SocketAddr, ServeError> {
    let (listener, bound) = bind(addr)?;
    let err = |source| ServeError { addr, source };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(err)?;
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || runtime.block_on(accept_loop(listener, limits, respond, observer)))
        .map_err(err)?;
    Ok(bound)
}

/// Accepts and serves connections for ever, within `limits`.
pub async fn accept_loop(
    listener: std::net::TcpListener,
    limits: Limits,
    respond: Respond,
    observer: Arc<dyn Observer>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "the metrics endpoint cannot serve");
            return;
        }
    };
    let mut slots = Slots::new(limits.connections);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // EMFILE and friends: wait rather than spin; the process's own work comes
                // first.
                tracing::warn!(error = %e, "metrics endpoint: cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if slots.make_room().await {
            observer.hit(Hit::Connections);
        }
        let observer = Arc::clone(&observer);
        let respond = Arc::clone(&respond);
        let task = tokio::spawn(async move {
            // Counted while its task lives (also when it is closed to make room).
            let _open = Open::new(Arc::clone(&observer));
            let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                let answer = respond(request.method(), request.uri().path());
                async move { Ok::<_, std::convert::Infallible>(response(answer)) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(limits.head_bytes)
                .keep_alive(false);
            let connection =
                builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            match tokio::time::timeout(limits.connection_timeout, connection).await {
                Ok(Ok(())) => {}
                // Oversized heads, timeouts, resets: the client's problem, counted.
                Ok(Err(e)) => {
                    if e.is_parse_too_large() {
                        observer.hit(Hit::RequestHead);
                    } else if e.is_timeout() {
                        observer.hit(Hit::HeaderTimeout);
                    }
                }
                Err(_) => observer.hit(Hit::ConnectionTime),
            }
        });
        slots.push(task.abort_handle());
    }
}

/// One open connection told to the observer, for as long as it lives.
struct Open(Arc<dyn Observer>);

impl Open {
    fn new(observer: Arc<dyn Observer>) -> Self {
        observer.connection(true);
        Open(observer)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.connection(false);
    }
}

fn response(answer: Answer) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() = hyper::StatusCode::from_u16(answer.status)
        .unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = hyper::header::HeaderValue::from_str(answer.content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

    #[derive(Default)]
    struct Counting {
        full: AtomicU64,
        open: AtomicI64,
    }

    impl Observer for Counting {
        fn hit(&self, hit: Hit) {
            if hit == Hit::Connections {
                self.full.fetch_add(1, Ordering::Relaxed);
            }
        }
        fn connection(&self, open: bool) {
            self.open
                .fetch_add(if open { 1 } else { -1 }, Ordering::Relaxed);
        }
    }

    // Issue 56: the limits controller's server spawned a task per connection without bound;
    // idle clients cannot lock out a scrape, and hold no more than the bound.
    #[test]
    fn idle_clients_cannot_lock_out_a_request() {
        let counting = Arc::new(Counting::default());
        let limits = Limits {
            connections: 4,
            ..Limits::default()
        };
        let respond: Respond = Arc::new(|method, path| match (method, path) {
            (&hyper::Method::GET, "/metrics") => Answer::text(200, "x 1\n"),
            _ => Answer::not_found(),
        });
        let observer: Arc<dyn Observer> = counting.clone();
        let addr = serve_on_thread(
            "127.0.0.1:0".parse().unwrap_or_else(|e| panic!("{e}")),
            "test-serve",
            limits,
            respond,
            observer,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let idle: Vec<std::net::TcpStream> = (0..20)
            .map(|_| std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap_or_else(|e| panic!("{e}"));
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("x 1\n"), "{answer}");
        assert!(
            counting.full.load(Ordering::Relaxed) >= 17,
            "the oldest made room"
        );
        assert!(
            counting.open.load(Ordering::Relaxed) <= 5,
            "at most the bound (and one)"
        );
        drop(idle);
    }
}

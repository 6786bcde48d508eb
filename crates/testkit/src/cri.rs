//! A fake container runtime for the CRI's two list calls, over a unix socket: gRPC's unary
//! framing on HTTP/2, answers scripted per call (the message's bytes as a test encodes them,
//! a gRPC error, a delay). No containerd runs on the test machines outside the VM, and the
//! faults the identity cache must survive (a slow answer, an error, an answer over gRPC's
//! default 4 MiB, a string that is not UTF-8) cannot be asked of a real one.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

/// The CRI method `ListPodSandbox`.
pub const LIST_POD_SANDBOX: &str = "/runtime.v1.RuntimeService/ListPodSandbox";
/// The CRI method `ListContainers`.
pub const LIST_CONTAINERS: &str = "/runtime.v1.RuntimeService/ListContainers";

/// One answer of the fake.
#[derive(Debug, Clone)]
pub enum CriAnswer {
    /// The message (its protobuf bytes), after a delay.
    Message(Vec<u8>, Duration),
    /// A gRPC error: its code (13 is `INTERNAL`) and message.
    Error(u32, String),
}

#[derive(Debug, Default)]
struct State {
    /// Per method: scripted answers, then the standing one.
    scripts: Vec<(String, VecDeque<CriAnswer>)>,
    standing: Vec<(String, CriAnswer)>,
    calls: Vec<String>,
}

/// The running fake; it stops with the test process.
#[derive(Debug, Clone)]
pub struct FakeCri {
    socket: PathBuf,
    state: Arc<Mutex<State>>,
}

impl FakeCri {
    /// Listens on `dir/cri.sock` (its own thread and runtime). Every method answers an empty
    /// message until told otherwise.
    pub fn start(dir: &Path) -> Self {
        let socket = dir.join("cri.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::UnixListener::from_std(listener).unwrap();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let state = Arc::clone(&shared);
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let state = Arc::clone(&state);
                            async move { Ok::<_, std::convert::Infallible>(answer(req, &state).await) }
                        });
                        let _ = hyper::server::conn::http2::Builder::new(
                            hyper_util::rt::TokioExecutor::new(),
                        )
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                    });
                }
            });
        });
        FakeCri { socket, state }
    }

    /// The socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// What `method` answers from now on, after any scripted answers.
    pub fn set(&self, method: &str, answer: CriAnswer) {
        let mut s = self.state.lock().unwrap();
        s.standing.retain(|(m, _)| m != method);
        s.standing.push((method.to_owned(), answer));
    }

    /// The next answers of `method`, in order; then the standing one.
    pub fn script(&self, method: &str, answers: impl IntoIterator<Item = CriAnswer>) {
        let mut s = self.state.lock().unwrap();
        let answers: Vec<CriAnswer> = answers.into_iter().collect();
        match s.scripts.iter_mut().find(|(m, _)| m == method) {
            Some((_, queue)) => queue.extend(answers),
            None => s.scripts.push((method.to_owned(), answers.into())),
        }
    }

    /// The methods called so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.state.lock().unwrap().calls.clone()
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>;

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    state: &Mutex<State>,
) -> hyper::Response<Body> {
    let method = req.uri().path().to_owned();
    let _ = req.into_body().collect().await;
    let answer = {
        let mut s = state.lock().unwrap();
        s.calls.push(method.clone());
        let scripted = s
            .scripts
            .iter_mut()
            .find(|(m, _)| *m == method)
            .and_then(|(_, q)| q.pop_front());
        scripted
            .or_else(|| {
                s.standing
                    .iter()
                    .find(|(m, _)| *m == method)
                    .map(|(_, a)| a.clone())
            })
            .unwrap_or(CriAnswer::Message(Vec::new(), Duration::ZERO))
    };
    match answer {
        CriAnswer::Message(message, delay) => {
            tokio::time::sleep(delay).await;
            let len = u32::try_from(message.len()).unwrap();
            let mut framed = Vec::with_capacity(message.len() + 5);
            framed.push(0);
            framed.extend_from_slice(&len.to_be_bytes());
            framed.extend_from_slice(&message);
            let mut trailers = hyper::HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().unwrap());
            let body = Full::new(Bytes::from(framed))
                .with_trailers(async move { Some(Ok(trailers)) })
                .boxed();
            hyper::Response::builder()
                .header("content-type", "application/grpc")
                .body(body)
                .unwrap()
        }
        CriAnswer::Error(code, message) => hyper::Response::builder()
            .header("content-type", "application/grpc")
            .header("grpc-status", code.to_string())
            .header("grpc-message", message)
            .body(Full::new(Bytes::new()).boxed())
            .unwrap(),
    }
}

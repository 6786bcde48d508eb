//! What each pod and container on the node really used, and the requests and limits that fit
//! it (`oomwarden rightsize`, issue 38).
//!
//! The daemon reads every pod and container cgroup every [`Params::interval_s`] and hands the
//! readings to a [`History`]: per series, a decaying histogram of the unreclaimable usage (what
//! the request is fitted to), the kernel's high-water mark (`memory.peak`) per aggregation
//! interval (what the limit is fitted to: it sees spikes no reading does), and the OOM kills.
//! [`recommend`] turns a container's history into a [`Recommendation`] with its reason;
//! [`compare`] computes what VPA and the usual PromQL would from scraped samples.
//!
//! Pure: readings and times come in, nothing is read or written here.

mod histogram;
mod history;
mod params;
mod recommend;
mod store;

pub mod compare;

pub use histogram::{DecayingHistogram, HistogramOptions};
pub use history::{
    History, KilledBy, MAX_KILLS, Now, Observed, OomKill, Peak, PodRef, Reading, Seen, Series,
    SeriesKey, Window,
};
pub use params::Params;
pub use recommend::{Recommendation, Usage, mib, recommend, stamp, usages};
pub use store::{FILE_NAME, StoreError, Stored, VERSION, from_json, to_json};

//! Recordings of what the daemon reads, and their playback.
//!
//! ```text
//!  Disk ──▶ Tap ──▶ readers ──▶ collector ──▶ engine          (oomwarden record / run --record,
//!            │ every read, in order                             the flight recorder)
//!            ▼
//!        Recorder ──▶ "oomwarden-recording 2" text (delta-coded, in self-contained segments)
//!                                 │
//!                                 ▼ parse
//!                              Playback ──▶ readers ──▶ collector ──▶ engine   (oomwarden replay)
//! ```
//!
//! The unit recorded is the raw result of each read the readers make (file bytes, a directory
//! listing, an error number), so the replay runs the very parsers, collector and engine of the
//! daemon. The format is described in [`mod@format`]. This crate does no I/O and reads no clock:
//! the caller writes the text where it wants and passes the times in.

mod estimate;
pub mod format;
mod gzip;
mod playback;
mod recorder;
mod tap;

pub use format::{
    Cycle, END_LINE, FORMAT_NAME, FORMAT_VERSION, Kind, Meta, Observation, ParseError, Recording,
    Wakeup, parse,
};
pub use gzip::{MAX_RECORDING_BYTES, decode, gzip};
pub use playback::Playback;
pub use recorder::{Recorder, SEGMENT_NS};
pub use tap::Tap;

//! The history's file: one JSON document, versioned, written whole by the daemon (a temporary
//! file renamed over the last, so a crash or a full disk leaves the previous one).

use serde::{Deserialize, Serialize};

use crate::history::History;
use crate::params::Params;

/// The format's version; a file of another is refused (and kept aside by the daemon).
pub const VERSION: u32 = 1;

/// The file's name in the state directory.
pub const FILE_NAME: &str = "usage.json";

/// Why a history file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Not the JSON this writes.
    #[error("not a usage history: {0}")]
    Json(#[from] serde_json::Error),
    /// Another version.
    #[error("usage history version {found}, this oomwarden reads version {VERSION}")]
    Version {
        /// The file's.
        found: u32,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document<H> {
    /// [`VERSION`].
    version: u32,
    /// When it was written (Unix seconds).
    saved_at: i64,
    /// The parameters the recommendations are made with (the daemon's configuration).
    params: Params,
    history: H,
}

#[derive(Debug, Deserialize)]
struct VersionOnly {
    version: u32,
}

/// What a history file (or the daemon's answer) holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// When it was written (Unix seconds).
    pub saved_at: i64,
    /// The parameters of the daemon that kept it.
    pub params: Params,
    /// The history.
    pub history: History,
}

/// The history as the file holds it.
pub fn to_json(history: &History, params: &Params, saved_at: i64) -> Result<String, StoreError> {
    Ok(serde_json::to_string(&Document {
        version: VERSION,
        saved_at,
        params: *params,
        history,
    })?)
}

/// A history file read back.
pub fn from_json(text: &str) -> Result<Stored, StoreError> {
    let v: VersionOnly = serde_json::from_str(text)?;
    if v.version != VERSION {
        return Err(StoreError::Version { found: v.version });
    }
    let d: Document<History> = serde_json::from_str(text)?;
    Ok(Stored {
        saved_at: d.saved_at,
        params: d.params,
        history: d.history,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Peak, Reading, SeriesKey};
    use crate::params::Params;
    use proptest::prelude::*;

    #[test]
    fn a_history_survives_its_file_and_other_versions_are_refused() {
        let mut h = History::default();
        let r = Reading {
            key: SeriesKey {
                pod_uid: "u".into(),
                container: None,
            },
            cgroup: "kubepods/podu".into(),
            cgroup_id: 3,
            name: None,
            pod: None,
            at: 1_700_000_000,
            current: 5 << 20,
            peak: Some(Peak::SinceReset(6 << 20)),
            file: 0,
            shmem: 0,
            inactive_file: 0,
            swap: 0,
            max: Some(1 << 30),
            oom_kills: Some(0),
        };
        h.observe(&[r], &Params::default());
        let params = Params {
            request_percentile: 0.9,
            ..Params::default()
        };
        let text = to_json(&h, &params, 1_700_000_001).unwrap();
        let back = from_json(&text).unwrap();
        assert_eq!(back.history, h);
        assert_eq!(back.params, params);
        assert_eq!(back.saved_at, 1_700_000_001);
        let other = text.replacen("\"version\":1", "\"version\":2", 1);
        assert!(matches!(
            from_json(&other),
            Err(StoreError::Version { found: 2 })
        ));
        assert!(from_json("{").is_err());
    }

    proptest! {
        #[test]
        fn any_text_is_read_or_refused_without_panic(text in ".{0,200}") {
            let _ = from_json(&text);
        }

        #[test]
        fn any_json_shaped_text_is_read_or_refused_without_panic(
            version in 0u32..3,
            body in "\\{(\"series\":\\{\\}|\"x\":[0-9]{1,3})?\\}",
        ) {
            let _ = from_json(&format!("{{\"version\":{version},\"savedAt\":1,\"params\":{{}},\"history\":{body}}}"));
        }
    }
}

//! The two list answers the identity cache reads, decoded so that one malformed entry never
//! costs the whole answer.
//!
//! Protocol buffers' `string` and `bytes` share one wire encoding; prost refuses a whole
//! message when one `string` field is not UTF-8. These mirrors of `ListPodSandboxResponse` and
//! `ListContainersResponse` read every string as bytes (a map as its wire form, repeated
//! key/value entries), and [`sandboxes`]/[`containers`] turn them into the generated types,
//! each bad string made valid with U+FFFD and counted: a sandbox with a name that is not UTF-8
//! (found in the fault suite: it discarded every pod's labels) is one odd pod, not none.

use std::collections::HashMap;

use crate::v1;

/// A map entry as the wire carries it.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Entry {
    #[prost(bytes = "vec", tag = "1")]
    key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SandboxMetadata {
    #[prost(bytes = "vec", tag = "1")]
    name: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    uid: Vec<u8>,
    #[prost(bytes = "vec", tag = "3")]
    namespace: Vec<u8>,
    #[prost(uint32, tag = "4")]
    attempt: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Sandbox {
    #[prost(bytes = "vec", tag = "1")]
    id: Vec<u8>,
    #[prost(message, optional, tag = "2")]
    metadata: Option<SandboxMetadata>,
    #[prost(int32, tag = "3")]
    state: i32,
    #[prost(int64, tag = "4")]
    created_at: i64,
    #[prost(message, repeated, tag = "5")]
    labels: Vec<Entry>,
    #[prost(message, repeated, tag = "6")]
    annotations: Vec<Entry>,
    #[prost(bytes = "vec", tag = "7")]
    runtime_handler: Vec<u8>,
}

/// `ListPodSandboxResponse`, strings as bytes.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SandboxList {
    #[prost(message, repeated, tag = "1")]
    items: Vec<Sandbox>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ContainerMetadata {
    #[prost(bytes = "vec", tag = "1")]
    name: Vec<u8>,
    #[prost(uint32, tag = "2")]
    attempt: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Image {
    #[prost(bytes = "vec", tag = "1")]
    image: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Container {
    #[prost(bytes = "vec", tag = "1")]
    id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pod_sandbox_id: Vec<u8>,
    #[prost(message, optional, tag = "3")]
    metadata: Option<ContainerMetadata>,
    #[prost(message, optional, tag = "4")]
    image: Option<Image>,
    #[prost(bytes = "vec", tag = "5")]
    image_ref: Vec<u8>,
    #[prost(int32, tag = "6")]
    state: i32,
    #[prost(int64, tag = "7")]
    created_at: i64,
    #[prost(message, repeated, tag = "8")]
    labels: Vec<Entry>,
    #[prost(message, repeated, tag = "9")]
    annotations: Vec<Entry>,
    #[prost(bytes = "vec", tag = "10")]
    image_id: Vec<u8>,
}

/// `ListContainersResponse`, strings as bytes.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ContainerList {
    #[prost(message, repeated, tag = "1")]
    containers: Vec<Container>,
}

/// Turns bytes into text, counting the strings that were not UTF-8.
#[derive(Debug, Default)]
struct Text {
    not_utf8: u64,
}

impl Text {
    fn string(&mut self, bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap_or_else(|e| {
            self.not_utf8 += 1;
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        })
    }

    fn map(&mut self, entries: Vec<Entry>) -> HashMap<String, String> {
        // As prost decodes a map: a repeated key keeps its last value.
        entries
            .into_iter()
            .map(|e| (self.string(e.key), self.string(e.value)))
            .collect()
    }
}

/// The sandboxes of an answer, and how many of their strings were not UTF-8.
pub(crate) fn sandboxes(list: SandboxList) -> (Vec<v1::PodSandbox>, u64) {
    let mut t = Text::default();
    let items = list
        .items
        .into_iter()
        .map(|s| v1::PodSandbox {
            id: t.string(s.id),
            metadata: s.metadata.map(|m| v1::PodSandboxMetadata {
                name: t.string(m.name),
                uid: t.string(m.uid),
                namespace: t.string(m.namespace),
                attempt: m.attempt,
            }),
            state: s.state,
            created_at: s.created_at,
            labels: t.map(s.labels),
            annotations: t.map(s.annotations),
            runtime_handler: t.string(s.runtime_handler),
        })
        .collect();
    (items, t.not_utf8)
}

/// The containers of an answer, and how many of their strings were not UTF-8.
pub(crate) fn containers(list: ContainerList) -> (Vec<v1::Container>, u64) {
    let mut t = Text::default();
    let items = list
        .containers
        .into_iter()
        .map(|c| v1::Container {
            id: t.string(c.id),
            pod_sandbox_id: t.string(c.pod_sandbox_id),
            metadata: c.metadata.map(|m| v1::ContainerMetadata {
                name: t.string(m.name),
                attempt: m.attempt,
            }),
            image: c.image.map(|i| v1::ImageSpec {
                image: t.string(i.image),
                ..v1::ImageSpec::default()
            }),
            image_ref: t.string(c.image_ref),
            state: c.state,
            created_at: c.created_at,
            labels: t.map(c.labels),
            annotations: t.map(c.annotations),
            image_id: t.string(c.image_id),
        })
        .collect();
    (items, t.not_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    fn sandbox(name: &str) -> v1::PodSandbox {
        v1::PodSandbox {
            id: format!("s-{name}"),
            metadata: Some(v1::PodSandboxMetadata {
                name: name.to_owned(),
                uid: format!("uid-{name}"),
                namespace: "shop".to_owned(),
                attempt: 1,
            }),
            state: v1::PodSandboxState::SandboxReady as i32,
            created_at: 7,
            labels: [("app".to_owned(), name.to_owned())].into_iter().collect(),
            annotations: [("a".to_owned(), "b".to_owned())].into_iter().collect(),
            runtime_handler: "runc".to_owned(),
        }
    }

    /// What the generated types encode, the mirrors decode to the same values.
    #[test]
    fn the_mirrors_read_what_the_generated_types_write() {
        let answer = v1::ListPodSandboxResponse {
            items: vec![sandbox("web"), sandbox("db")],
        };
        let decoded = SandboxList::decode(answer.encode_to_vec().as_slice())
            .map(sandboxes)
            .ok();
        assert_eq!(decoded, Some((answer.items, 0)));
        let containers_answer = v1::ListContainersResponse {
            containers: vec![v1::Container {
                id: "c1".to_owned(),
                pod_sandbox_id: "s-web".to_owned(),
                metadata: Some(v1::ContainerMetadata {
                    name: "nginx".to_owned(),
                    attempt: 2,
                }),
                image: Some(v1::ImageSpec {
                    image: "nginx:1".to_owned(),
                    ..v1::ImageSpec::default()
                }),
                image_ref: "sha256:ab".to_owned(),
                state: v1::ContainerState::ContainerRunning as i32,
                created_at: 9,
                labels: [("io.kubernetes.pod.uid".to_owned(), "uid-web".to_owned())]
                    .into_iter()
                    .collect(),
                annotations: HashMap::new(),
                image_id: "sha256:cd".to_owned(),
            }],
        };
        let decoded = ContainerList::decode(containers_answer.encode_to_vec().as_slice())
            .map(containers)
            .ok();
        assert_eq!(decoded, Some((containers_answer.containers, 0)));
    }

    /// One sandbox name that is not UTF-8: the generated type refuses the whole answer, the
    /// mirror keeps every sandbox and counts the one string.
    #[test]
    fn a_name_that_is_not_utf8_costs_one_string_not_the_answer() {
        let mut odd = sandbox("odd");
        if let Some(m) = odd.metadata.as_mut() {
            m.name = "XbadX".to_owned();
        }
        let answer = v1::ListPodSandboxResponse {
            items: vec![sandbox("web"), odd, sandbox("db")],
        };
        let mut bytes = answer.encode_to_vec();
        let at = bytes
            .windows(5)
            .position(|w| w == b"XbadX")
            .unwrap_or_else(|| panic!("no marker"));
        if let Some(b) = bytes.get_mut(at) {
            *b = 0xff;
        }
        assert!(
            v1::ListPodSandboxResponse::decode(bytes.as_slice()).is_err(),
            "prost refuses the whole answer"
        );
        let (items, not_utf8) = SandboxList::decode(bytes.as_slice())
            .map(sandboxes)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(not_utf8, 1);
        assert_eq!(items.len(), 3);
        let labels: Vec<_> = items
            .iter()
            .filter_map(|s| s.labels.get("app").cloned())
            .collect();
        assert_eq!(labels, ["web", "odd", "db"], "labels kept for every pod");
        assert_eq!(
            items
                .get(1)
                .and_then(|s| s.metadata.as_ref())
                .map(|m| m.name.as_str()),
            Some("\u{fffd}badX")
        );
    }
}

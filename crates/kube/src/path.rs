//! Pod and container identity from a cgroup path (`kube-semantics.md` §8).
//!
//! Matching is by path component, never by absolute prefix: nested environments put the
//! kubelet's tree below other directories (`/lxc.payload.x/kubepods.slice/…`).

use oomwarden_model::QosClass;

/// What a cgroup path says about the pod and container it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CgroupPathInfo {
    /// The pod's UID, with dashes (`6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f`), or the static pod
    /// hash (32 hex digits, no dashes).
    pub pod_uid: Option<String>,
    /// The pod's QoS class from its place in the tree (Besteffort, Burstable or Guaranteed).
    pub qos: Option<QosClass>,
    /// The container ID (64 hex digits) when the path is, or is below, a container cgroup.
    pub container_id: Option<String>,
}

/// A pod UID as the kubelet writes it: 36 characters with dashes, or a 32-digit static-pod
/// hash. Hex digits only besides the dashes.
fn is_pod_uid(s: &str) -> bool {
    let hex_or_dash = s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    hex_or_dash
        && ((s.len() == 36 && s.bytes().filter(|b| *b == b'-').count() == 4)
            || (s.len() == 32 && !s.contains('-')))
}

/// `pod<uid>` (cgroupfs driver) → uid.
fn cgroupfs_pod(component: &str) -> Option<String> {
    component
        .strip_prefix("pod")
        .filter(|u| is_pod_uid(u))
        .map(str::to_owned)
}

/// `kubepods[-system][-besteffort|-burstable]-pod<uid with _>.slice` (systemd driver; `-system`
/// in Kubernetes 1.37's node system partition, KEP-5894) → (uid, qos).
fn systemd_pod(component: &str) -> Option<(String, QosClass)> {
    let name = component.strip_suffix(".slice")?;
    // The partition's names are the legacy ones with `kubepods-system` for `kubepods`.
    let name = match name.strip_prefix("kubepods-system-") {
        Some(rest) => std::borrow::Cow::Owned(format!("kubepods-{rest}")),
        None => std::borrow::Cow::Borrowed(name),
    };
    let (qos, rest) = if let Some(r) = name.strip_prefix("kubepods-besteffort-pod") {
        (QosClass::Besteffort, r)
    } else if let Some(r) = name.strip_prefix("kubepods-burstable-pod") {
        (QosClass::Burstable, r)
    } else {
        (QosClass::Guaranteed, name.strip_prefix("kubepods-pod")?)
    };
    // systemd escaping: the kubelet turned every `-` of the UID into `_`.
    let uid = rest.replace('_', "-");
    is_pod_uid(&uid).then_some((uid, qos))
}

/// A container cgroup name → its 64-hex ID: `cri-containerd-<id>.scope`, `crio-<id>.scope`,
/// `docker-<id>.scope` (systemd driver), `crio-<id>` or a bare `<id>` (cgroupfs driver).
/// CRI-O's monitor (`crio-conmon-<id>`) and systemd mount units are not containers.
fn container_id(component: &str) -> Option<String> {
    if component.starts_with("crio-conmon-") || component.ends_with(".mount") {
        return None;
    }
    let name = component.strip_suffix(".scope").unwrap_or(component);
    let id = ["cri-containerd-", "crio-", "docker-"]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    (id.len() == 64
        && id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()))
    .then(|| id.to_owned())
}

/// Decodes the pod and container a cgroup path belongs to. Unknown paths give an empty
/// identity; the function never fails.
pub fn decode_cgroup_path(path: &str) -> CgroupPathInfo {
    let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let mut identity = CgroupPathInfo::default();
    for (i, component) in components.iter().enumerate() {
        let pod = match systemd_pod(component) {
            Some((uid, qos)) => Some((uid, qos)),
            None => cgroupfs_pod(component).map(|uid| {
                // cgroupfs: the parent directory names the class; none means Guaranteed.
                let parent = i.checked_sub(1).and_then(|p| components.get(p)).copied();
                let qos = match parent {
                    Some("besteffort") => QosClass::Besteffort,
                    Some("burstable") => QosClass::Burstable,
                    _ => QosClass::Guaranteed,
                };
                (uid, qos)
            }),
        };
        if let Some((uid, qos)) = pod {
            identity.pod_uid = Some(uid);
            identity.qos = Some(qos);
            identity.container_id = components.get(i + 1).and_then(|c| container_id(c));
            break;
        }
    }
    identity
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f";
    const ID: &str = "d4735e3a265e16eee03f59718b9b5d03019c07d8b6c51f90da3a666eec13ab35";

    fn id(pod: Option<&str>, qos: Option<QosClass>, ctr: Option<&str>) -> CgroupPathInfo {
        CgroupPathInfo {
            pod_uid: pod.map(str::to_owned),
            qos,
            container_id: ctr.map(str::to_owned),
        }
    }

    #[test]
    fn cgroupfs_driver_paths() {
        use QosClass::*;
        let cases = [
            (
                format!("/kubepods/burstable/pod{UID}"),
                id(Some(UID), Some(Burstable), None),
            ),
            (
                format!("/kubepods/besteffort/pod{UID}/{ID}"),
                id(Some(UID), Some(Besteffort), Some(ID)),
            ),
            (
                format!("/kubepods/pod{UID}/crio-{ID}"),
                id(Some(UID), Some(Guaranteed), Some(ID)),
            ),
            // Talos: relative to the cgroup root.
            (
                format!("kubepods/pod{UID}"),
                id(Some(UID), Some(Guaranteed), None),
            ),
            // Kubernetes 1.37's node system partition (KEP-5894): each pod in its class.
            (
                format!("kubepods/system/burstable/pod{UID}/{ID}"),
                id(Some(UID), Some(Burstable), Some(ID)),
            ),
            (
                format!("kubepods/system/besteffort/pod{UID}"),
                id(Some(UID), Some(Besteffort), None),
            ),
            (
                format!("kubepods/system/pod{UID}"),
                id(Some(UID), Some(Guaranteed), None),
            ),
            // A static pod: the UID is a 32-digit hash.
            (
                "/kubepods/burstable/pod1b2d3c4e5f60718293a4b5c6d7e8f901".to_owned(),
                id(
                    Some("1b2d3c4e5f60718293a4b5c6d7e8f901"),
                    Some(Burstable),
                    None,
                ),
            ),
        ];
        for (path, want) in cases {
            assert_eq!(decode_cgroup_path(&path), want, "{path}");
        }
    }

    #[test]
    fn systemd_driver_paths() {
        use QosClass::*;
        let escaped = UID.replace('-', "_");
        let cases = [
            (
                format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{escaped}.slice/cri-containerd-{ID}.scope"
                ),
                id(Some(UID), Some(Burstable), Some(ID)),
            ),
            (
                format!(
                    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{escaped}.slice"
                ),
                id(Some(UID), Some(Besteffort), None),
            ),
            (
                format!("/kubepods.slice/kubepods-pod{escaped}.slice/crio-{ID}.scope"),
                id(Some(UID), Some(Guaranteed), Some(ID)),
            ),
            (
                format!("/kubepods.slice/kubepods-pod{escaped}.slice/docker-{ID}.scope"),
                id(Some(UID), Some(Guaranteed), Some(ID)),
            ),
            // Nested below another tree: matched by component.
            (
                format!("/lxc.payload.node1/kubepods.slice/kubepods-pod{escaped}.slice"),
                id(Some(UID), Some(Guaranteed), None),
            ),
            // CRI-O's monitor is not a container.
            (
                format!("/kubepods.slice/kubepods-pod{escaped}.slice/crio-conmon-{ID}.scope"),
                id(Some(UID), Some(Guaranteed), None),
            ),
            // Kubernetes 1.37's node system partition (KEP-5894): each pod in its class.
            (
                format!(
                    "/kubepods.slice/kubepods-system.slice/kubepods-system-burstable.slice/kubepods-system-burstable-pod{escaped}.slice/cri-containerd-{ID}.scope"
                ),
                id(Some(UID), Some(Burstable), Some(ID)),
            ),
            (
                format!(
                    "/kubepods.slice/kubepods-system.slice/kubepods-system-besteffort.slice/kubepods-system-besteffort-pod{escaped}.slice"
                ),
                id(Some(UID), Some(Besteffort), None),
            ),
            (
                format!("/kubepods.slice/kubepods-system.slice/kubepods-system-pod{escaped}.slice"),
                id(Some(UID), Some(Guaranteed), None),
            ),
        ];
        for (path, want) in cases {
            assert_eq!(decode_cgroup_path(&path), want, "{path}");
        }
    }

    #[test]
    fn other_paths_have_no_identity() {
        for path in [
            "",
            "/",
            "/system.slice/kubelet.service",
            "/kubepods",
            "/kubepods/burstable",
            "/kubepods.slice/kubepods-burstable.slice",
            "/kubepods/podnot-a-uid",
            "/user.slice/user-1000.slice/session-2.scope",
            "/kubepods/burstable/pod6B86B273-FF34-4FCE-96E3-6B3E0E2D5A2Fx",
        ] {
            assert_eq!(
                decode_cgroup_path(path),
                CgroupPathInfo::default(),
                "{path}"
            );
        }
        // An upper-case or short container name is not an ID.
        let upper = format!("/kubepods/pod{UID}/{}", ID.to_uppercase());
        assert_eq!(decode_cgroup_path(&upper).container_id, None);
        assert_eq!(
            decode_cgroup_path(&format!("/kubepods/pod{UID}/abc")).container_id,
            None
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(path in "[/a-z0-9_.-]{0,200}") {
            let _ = decode_cgroup_path(&path);
        }

        #[test]
        fn systemd_and_cgroupfs_agree(uid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", ctr in "[0-9a-f]{64}", qos in 0usize..3) {
            let (dir, unit) = [("besteffort", "kubepods-besteffort"), ("burstable", "kubepods-burstable"), ("", "kubepods")][qos];
            let cgroupfs = if dir.is_empty() { format!("/kubepods/pod{uid}/{ctr}") } else { format!("/kubepods/{dir}/pod{uid}/{ctr}") };
            let systemd = if dir.is_empty() {
                format!("/kubepods.slice/{unit}-pod{}.slice/cri-containerd-{ctr}.scope", uid.replace('-', "_"))
            } else {
                format!("/kubepods.slice/{unit}.slice/{unit}-pod{}.slice/cri-containerd-{ctr}.scope", uid.replace('-', "_"))
            };
            let a = decode_cgroup_path(&cgroupfs);
            proptest::prop_assert_eq!(&a, &decode_cgroup_path(&systemd));
            proptest::prop_assert_eq!(a.pod_uid.as_deref(), Some(uid.as_str()));
            proptest::prop_assert_eq!(a.container_id.as_deref(), Some(ctr.as_str()));
        }
    }
}

//! The kubelet's pod-log directories, `<dir>/<namespace>_<name>_<uid>/<container>/`: a pod's
//! namespace, name and container names without a runtime to ask.

use std::path::{Path, PathBuf};

use oomwarden_model::{Identities, IdentitySource, PodIdentity};

use crate::MAX_PODS;

/// The directory could not be listed.
#[derive(Debug, thiserror::Error)]
#[error("cannot list {}: {source}", path.display())]
pub struct PodLogsError {
    /// The directory.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// `<namespace>_<name>_<uid>`: namespaces and pod names are DNS names (no `_`), so the
/// first `_` ends the namespace and the last one starts the UID.
fn parse(entry: &str) -> Option<(&str, &str, &str)> {
    let (namespace, rest) = entry.split_once('_')?;
    let (name, uid) = rest.rsplit_once('_')?;
    (!namespace.is_empty() && !name.is_empty() && !uid.is_empty()).then_some((namespace, name, uid))
}

/// The pods of the pod-log directory `dir` (the kubelet's is `/var/log/pods`). A directory
/// that vanishes while it is read is left out; one that cannot be listed at all is an error.
pub fn pod_logs(dir: &Path) -> Result<Identities, PodLogsError> {
    let entries = std::fs::read_dir(dir).map_err(|source| PodLogsError {
        path: dir.to_owned(),
        source,
    })?;
    let mut ids = Identities::default();
    for entry in entries.flatten() {
        if ids.pods.len() >= MAX_PODS {
            break;
        }
        let file_name = entry.file_name();
        let Some((namespace, name, uid)) = file_name.to_str().and_then(parse) else {
            continue;
        };
        let mut containers: Vec<String> = std::fs::read_dir(entry.path())
            .map(|children| {
                children
                    .flatten()
                    .filter(|c| c.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|c| c.file_name().to_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        containers.sort();
        ids.pods.insert(
            uid.to_owned(),
            PodIdentity {
                uid: uid.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                containers,
                source: IdentitySource::PodLogs,
                ..PodIdentity::default()
            },
        );
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pods_and_their_containers() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = root.path();
        oomwarden_testkit::write(
            dir,
            "kube-system_coredns-5d78c9869d-abcde_6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f/coredns/0.log",
            "",
        );
        oomwarden_testkit::write(
            dir,
            "shop_web_d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a/nginx/0.log",
            "",
        );
        oomwarden_testkit::write(
            dir,
            "shop_web_d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a/init/0.log",
            "",
        );
        oomwarden_testkit::write(dir, "not-a-pod/x.log", "");
        let ids = pod_logs(dir).unwrap_or_default();
        assert_eq!(ids.pods.len(), 2);
        let web = ids.pod("d4735e3a-265e-4ce8-a0f0-2c7a1b3e2f4a");
        assert_eq!(
            web.map(PodIdentity::qualified_name).as_deref(),
            Some("shop/web")
        );
        assert_eq!(
            web.map(|p| p.containers.clone()).unwrap_or_default(),
            ["init", "nginx"]
        );
        assert_eq!(web.map(|p| p.source), Some(IdentitySource::PodLogs));
        assert_eq!(
            ids.pod("6b86b273-ff34-4fce-96e3-6b3e0e2d5a2f")
                .map(PodIdentity::qualified_name)
                .as_deref(),
            Some("kube-system/coredns-5d78c9869d-abcde")
        );
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let e = pod_logs(Path::new("/nonexistent/pods"))
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.starts_with("cannot list /nonexistent/pods: ")),
            "{e:?}"
        );
    }

    proptest! {
        #[test]
        fn any_directory_name_parses_or_is_skipped(name in "\\PC{0,80}") {
            if let Some((ns, pod, uid)) = parse(&name) {
                prop_assert_eq!(format!("{ns}_{pod}_{uid}"), name.clone());
                prop_assert!(!ns.contains('_'));
            }
        }
    }
}

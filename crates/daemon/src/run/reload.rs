//! Reloading the configuration: a file watched for changes, SIGHUP, what a reload refuses and
//! what waits for the next start.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::engine::Engine;
use oomwarden_node::{
    Declared, SetupError, check_psi, load_for_reload, resolve_layout, unsafe_reload,
};

use super::options::RunOptions;
use super::setup::{restart_events, restart_identity};

/// How often the loop looks at the configuration file for a change. The kubelet takes up to a
/// minute to bring a ConfigMap update to the node; a path walk every cycle (two a second, each
/// through the volume's symlinks) bought nothing on top of that.
pub(super) const CONFIG_CHECK_EVERY: Duration = Duration::from_secs(1);

/// Notices a configuration file that changed on disk: what the path resolves to now (device,
/// inode, size, modification time, symlinks followed) against what was last loaded, looked at
/// at most once per `every`. A Kubernetes ConfigMap volume replaces its `..data` symlink
/// atomically, so the inode changes.
#[derive(Debug)]
pub(super) struct ConfigWatch {
    path: Option<PathBuf>,
    seen: Option<(u64, u64, u64, i64, i64)>,
    every: Duration,
    looked: Option<Instant>,
}

impl ConfigWatch {
    pub(super) fn new(path: Option<&Path>, every: Duration) -> Self {
        let mut w = ConfigWatch {
            path: path.map(Path::to_path_buf),
            seen: None,
            every,
            looked: None,
        };
        w.refresh();
        w
    }

    fn identity(&self) -> Option<(u64, u64, u64, i64, i64)> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(self.path.as_ref()?).ok()?;
        Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
    }

    /// Takes the file as it is now as the loaded one.
    pub(super) fn refresh(&mut self) {
        self.seen = self.identity();
    }

    /// Whether the file changed since it was last taken (a vanished file is no change: the
    /// running configuration stays until it is back).
    pub(super) fn changed(&mut self) -> bool {
        if self.path.is_none() || self.looked.is_some_and(|t| t.elapsed() < self.every) {
            return false;
        }
        self.looked = Some(Instant::now());
        let now = self.identity();
        if now.is_some() && now != self.seen {
            self.seen = now;
            return true;
        }
        false
    }
}

/// The settings a reload does not apply (what they set up is made once, at the start): each
/// one that changed, by its configuration key, to be said rather than silently kept.
pub(super) fn at_next_start(
    old: &oomwarden_config::WardenSettings,
    new: &oomwarden_config::WardenSettings,
) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if old.metrics != new.metrics {
        changed.push("metrics");
    }
    if old.flight_recorder != new.flight_recorder {
        changed.push("flightRecorder");
    }
    if old.psi_triggers != new.psi_triggers {
        changed.push("psiTriggers");
    }
    if old.state_dir != new.state_dir {
        changed.push("stateDir");
    }
    changed
}

pub(super) fn reload(
    engine: &mut Engine,
    options: &RunOptions,
    shared: Option<&crate::api::SharedState>,
    running: &mut Declared,
) {
    let file = options.config_file.as_deref();
    let loaded = load_for_reload(file, &options.overrides)
        .and_then(|(settings, declared)| {
            match unsafe_reload(engine.settings(), *running, &settings, declared) {
                Some(why) => Err(SetupError::Config(why)),
                None => Ok((settings, declared)),
            }
        })
        .and_then(|(settings, declared)| {
            // A node without PSI keeps a policy that reads none (the start's rule).
            let reads = settings.psi_reads();
            if !reads.is_empty() {
                let proc = oomwarden_procfs::ProcFs::new(&options.proc_root);
                if let Err(e) = check_psi(engine.cgroups(), &proc) {
                    return Err(SetupError::Config(format!(
                        "{e}; the new policy reads PSI ({})",
                        reads.join(", ")
                    )));
                }
            }
            Ok((settings, declared))
        })
        .and_then(|(settings, declared)| {
            let layout = resolve_layout(&settings, engine.cgroups())?;
            Ok((settings, declared, layout))
        });
    match loaded {
        Ok((settings, declared, (layout, why))) => {
            *running = declared;
            engine.metrics().reloaded(true);
            for setting in at_next_start(&engine.settings().warden, &settings.warden) {
                tracing::warn!(
                    setting,
                    "{setting} changed; it takes effect at the next start (the running daemon keeps the old one)"
                );
            }
            if layout.name != engine.layout_name() {
                tracing::info!(layout = %layout.name, layout_reason = %why, "layout changed");
            }
            engine.set_layout(layout);
            let runtime_changed =
                settings.warden.container_runtime != engine.settings().warden.container_runtime;
            let events_changed = settings.warden.events != engine.settings().warden.events;
            tracing::info!(
                file = %file.map_or("<defaults>".into(), |f| f.display().to_string()),
                sample_interval = ?settings.oom.sample_interval,
                "configuration reloaded"
            );
            if let Some(shared) = shared {
                let mut s = shared
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                s.status.configuration = settings.to_yaml();
                s.status.layout_reason = why;
            }
            engine.set_settings(settings);
            if runtime_changed {
                restart_identity(engine);
            }
            if events_changed {
                restart_events(engine);
            }
        }
        Err(e) => {
            engine.metrics().reloaded(false);
            tracing::error!(error = %e, "configuration reload rejected; the running configuration stays");
        }
    }
    engine.discard_reads();
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{ConfigWatch, at_next_start};

    // Found running the DaemonSet (S19): a ConfigMap update turning the flight recorder on
    // was taken in silence and did nothing.
    #[test]
    fn a_reload_names_what_waits_for_the_next_start() {
        let old = oomwarden_config::WardenSettings::default();
        let mut new = old.clone();
        assert!(at_next_start(&old, &new).is_empty());
        new.dry_run = !new.dry_run;
        assert!(at_next_start(&old, &new).is_empty(), "dryRun is reloaded");
        new.flight_recorder.enabled = !new.flight_recorder.enabled;
        new.psi_triggers.enabled = !new.psi_triggers.enabled;
        new.state_dir = "/elsewhere".into();
        new.metrics.enabled = !new.metrics.enabled;
        assert_eq!(
            at_next_start(&old, &new),
            ["metrics", "flightRecorder", "psiTriggers", "stateDir"]
        );
    }

    #[test]
    fn a_configmap_style_symlink_swap_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // The kubelet's layout: config.yaml -> ..data/config.yaml, ..data -> ..<timestamp>.
        std::fs::create_dir(d.join("..2026_1")).unwrap();
        std::fs::write(d.join("..2026_1/config.yaml"), "a").unwrap();
        std::os::unix::fs::symlink("..2026_1", d.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/config.yaml", d.join("config.yaml")).unwrap();
        let mut w = ConfigWatch::new(Some(&d.join("config.yaml")), Duration::ZERO);
        assert!(!w.changed());
        // The update: a new directory, a new ..data link renamed over the old one.
        std::fs::create_dir(d.join("..2026_2")).unwrap();
        std::fs::write(d.join("..2026_2/config.yaml"), "a").unwrap();
        std::os::unix::fs::symlink("..2026_2", d.join("..data_tmp")).unwrap();
        std::fs::rename(d.join("..data_tmp"), d.join("..data")).unwrap();
        assert!(w.changed(), "same content, new file: a change");
        assert!(!w.changed(), "noticed once");
        // A file that vanishes is no change; when it is back, it is one.
        std::fs::remove_file(d.join("config.yaml")).unwrap();
        assert!(!w.changed());
        std::fs::write(d.join("config.yaml"), "b").unwrap();
        assert!(w.changed());
        // No configuration file: never a change.
        assert!(!ConfigWatch::new(None, Duration::ZERO).changed());
    }

    #[test]
    fn the_configuration_file_is_looked_at_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "a").unwrap();
        let mut w = ConfigWatch::new(Some(&path), Duration::from_millis(300));
        assert!(!w.changed(), "looked at: no change");
        std::fs::write(&path, "bb").unwrap();
        assert!(!w.changed(), "not looked at again within the interval");
        std::thread::sleep(Duration::from_millis(350));
        assert!(w.changed(), "looked at after it");
    }
}

//! systemd-oomd's opt-in settings (`ManagedOOMMemoryPressure=`, `ManagedOOMSwap=`) on the units
//! that hold the kubelet, the container runtime or pods, read from the unit files and drop-ins
//! as systemd merges them (`systemctl set-property` writes to the `system.control`
//! directories, read too). Fedora's and CentOS's `systemd-oomd-defaults` set them on `-.slice`
//! and `system.slice` (systemd#42321).

use std::collections::BTreeMap;
use std::path::Path;

use crate::UnitOom;

/// The unit directories, most important first (systemd.unit(5), "Unit File Load Path").
const UNIT_DIRS: &[&str] = &[
    "etc/systemd/system.control",
    "run/systemd/system.control",
    "run/systemd/transient",
    "etc/systemd/system",
    "run/systemd/system",
    "usr/local/lib/systemd/system",
    "usr/lib/systemd/system",
    "lib/systemd/system",
];

/// The units that hold the node's agents or its pods, with what they hold.
const UNITS: &[(&str, &str)] = &[
    (
        "-.slice",
        "every cgroup of the node: the kubelet, the runtime and every pod",
    ),
    (
        "system.slice",
        "the node's services (the kubelet and the container runtime on kubeadm, k3s and most systemd hosts)",
    ),
    ("kubepods.slice", "every pod"),
    ("kubepods-burstable.slice", "the Burstable pods"),
    ("kubepods-besteffort.slice", "the BestEffort pods"),
    ("kubelet.service", "the kubelet"),
    ("containerd.service", "containerd"),
    ("crio.service", "CRI-O"),
    ("docker.service", "docker"),
    ("k3s.service", "k3s"),
    ("k3s-agent.service", "the k3s agent"),
    ("rke2-server.service", "rke2"),
    ("rke2-agent.service", "the rke2 agent"),
];

/// The two settings of one unit, each with its value and the files that assigned it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ManagedOom {
    /// `ManagedOOMMemoryPressure=`: the value in force and the files that set it.
    pub memory_pressure: Option<(String, Vec<String>)>,
    /// `ManagedOOMSwap=`.
    pub swap: Option<(String, Vec<String>)>,
}

/// The settings in force after applying `files` (path, text) in order: the last assignment
/// wins, an empty one resets to the default (`auto`). Comments (`#`, `;`), other keys and the
/// `[Unit]` and `[Install]` sections are ignored.
pub fn managed_oom_of(files: &[(String, String)]) -> ManagedOom {
    let mut out = ManagedOom::default();
    for (path, text) in files {
        let mut section = String::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                name.clone_into(&mut section);
                continue;
            }
            if section == "Unit" || section == "Install" {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let slot = match key.trim() {
                "ManagedOOMMemoryPressure" => &mut out.memory_pressure,
                "ManagedOOMSwap" => &mut out.swap,
                _ => continue,
            };
            let value = value.trim();
            if value.is_empty() {
                *slot = None;
            } else {
                let mut files = slot.take().map(|(_, f)| f).unwrap_or_default();
                files.push(path.clone());
                *slot = Some((value.to_owned(), files));
            }
        }
    }
    out
}

/// The drop-in directories of a unit, most specific last: the type's (`slice.d`), each
/// prefix of a dashed name (`kubepods-.slice.d` for `kubepods-burstable.slice`), its own.
fn dropin_names(unit: &str) -> Vec<String> {
    let Some((name, kind)) = unit.rsplit_once('.') else {
        return Vec::new();
    };
    let mut out = vec![format!("{kind}.d")];
    if name != "-" {
        let parts: Vec<&str> = name.split('-').collect();
        for i in 1..parts.len() {
            out.push(format!(
                "{}-.{kind}.d",
                parts.get(..i).unwrap_or_default().join("-")
            ));
        }
    }
    out.push(format!("{unit}.d"));
    out
}

/// The files systemd would merge for `unit` under `host`, in the order applied: the unit file
/// (the most important directory's), then the drop-ins by name (a drop-in in a more important
/// directory hides one of the same name in a less important one).
fn unit_files(host: &Path, unit: &str) -> Vec<(String, String)> {
    let read = |p: &Path| {
        oomwarden_cgroupfs::read_regular(p, 1 << 20).ok().map(|b| {
            (
                p.display().to_string(),
                String::from_utf8_lossy(&b).into_owned(),
            )
        })
    };
    let mut files = Vec::new();
    if let Some(main) = UNIT_DIRS
        .iter()
        .find_map(|d| read(&host.join(d).join(unit)))
    {
        files.push(main);
    }
    for dropin in dropin_names(unit) {
        // Name → the most important directory's file of that name.
        let mut by_name: BTreeMap<String, std::path::PathBuf> = BTreeMap::new();
        for dir in UNIT_DIRS.iter().rev() {
            let Ok(entries) = std::fs::read_dir(host.join(dir).join(&dropin)) else {
                continue;
            };
            for e in entries.flatten().take(1000) {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.ends_with(".conf") {
                    by_name.insert(name, e.path());
                }
            }
        }
        files.extend(by_name.values().filter_map(|p| read(p)));
    }
    files
}

/// How long `systemctl show` may take.
const SYSTEMCTL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The settings in force as systemd reports them, where it runs and `host` is this machine's
/// root (`/run/systemd/system` exists): `systemctl show` for every unit at once, each unit's
/// two settings (none for a unit systemctl could not answer for). Nothing where systemd does
/// not run, systemctl is missing, fails or takes over 5 s.
fn systemctl_show(host: &Path) -> Option<Vec<ManagedOom>> {
    use wait_timeout::ChildExt;
    if host != Path::new("/") || !Path::new("/run/systemd/system").is_dir() {
        return None;
    }
    let mut child = std::process::Command::new("systemctl")
        .args([
            "show",
            "--property=ManagedOOMMemoryPressure,ManagedOOMSwap",
            "--",
        ])
        .args(UNITS.iter().map(|(u, _)| *u))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // The answer is a few hundred bytes; read it on a thread so a hung systemctl is waited
    // for no longer than the timeout.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(
            &mut std::io::Read::take(&mut stdout, 1 << 20),
            &mut text,
        );
        text
    });
    match child.wait_timeout(SYSTEMCTL_TIMEOUT) {
        Ok(Some(status)) if status.success() => {}
        Ok(Some(_)) | Err(_) => return None,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
    }
    let text = reader.join().ok()?;
    Some(parse_systemctl_show(&text, UNITS.len()))
}

/// `systemctl show --property=…` of `units` units: one block of `Key=value` lines per unit,
/// blocks separated by an empty line, in the order asked. The source of each value is
/// `systemctl show <unit>`.
pub fn parse_systemctl_show(text: &str, units: usize) -> Vec<ManagedOom> {
    let mut out: Vec<ManagedOom> = text
        .split("\n\n")
        .map(|block| {
            let mut m = ManagedOom::default();
            for line in block.lines() {
                let Some((key, value)) = line.split_once('=') else {
                    continue;
                };
                let value = value.trim();
                let slot = match key.trim() {
                    "ManagedOOMMemoryPressure" => &mut m.memory_pressure,
                    "ManagedOOMSwap" => &mut m.swap,
                    _ => continue,
                };
                if !value.is_empty() {
                    *slot = Some((value.to_owned(), vec!["systemctl show".to_owned()]));
                }
            }
            m
        })
        .take(units)
        .collect();
    out.resize(units, ManagedOom::default());
    out
}

/// Every `kill` setting of systemd-oomd on the units that hold the node's agents or pods:
/// from `systemctl show` where systemd runs on this machine (the values in force, transient
/// and runtime settings included), with the files that set them; else from the files alone.
pub(crate) fn managed_oom_units(host: &Path) -> Vec<UnitOom> {
    let shown = systemctl_show(host);
    let mut out = Vec::new();
    for (i, (unit, holds)) in UNITS.iter().enumerate() {
        let files = unit_files(host, unit);
        let from_files = managed_oom_of(&files);
        let managed = match shown.as_ref().and_then(|s| s.get(i)) {
            // systemd's value, with the files that set it where they say the same.
            Some(live) => ManagedOom {
                memory_pressure: merge(&live.memory_pressure, &from_files.memory_pressure),
                swap: merge(&live.swap, &from_files.swap),
            },
            None if files.is_empty() => continue,
            None => from_files,
        };
        for (key, setting) in [
            ("ManagedOOMMemoryPressure", managed.memory_pressure),
            ("ManagedOOMSwap", managed.swap),
        ] {
            if let Some((value, files)) = setting
                && value == "kill"
            {
                out.push(UnitOom {
                    unit: (*unit).to_owned(),
                    key,
                    value,
                    holds,
                    files,
                });
            }
        }
    }
    out
}

/// systemd's value, named by the files that set it when they agree, else by `systemctl show`.
fn merge(
    live: &Option<(String, Vec<String>)>,
    files: &Option<(String, Vec<String>)>,
) -> Option<(String, Vec<String>)> {
    let (value, shown) = live.as_ref()?;
    match files {
        Some((v, f)) if v == value => Some((value.clone(), f.clone())),
        _ => Some((value.clone(), shown.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, text: &str) -> (String, String) {
        (path.to_owned(), text.to_owned())
    }

    #[test]
    fn the_last_assignment_wins_and_an_empty_one_resets() {
        let m = managed_oom_of(&[
            f(
                "/usr/lib/systemd/system/system.slice.d/10-oomd-per-slice-defaults.conf",
                "# Fedora\n[Slice]\nManagedOOMMemoryPressure=kill\nManagedOOMMemoryPressureLimit=80%\n",
            ),
            f(
                "/etc/systemd/system/-.slice.d/x.conf",
                "[Slice]\nManagedOOMSwap=kill\n",
            ),
        ]);
        assert_eq!(
            m.memory_pressure,
            Some((
                "kill".to_owned(),
                vec![
                    "/usr/lib/systemd/system/system.slice.d/10-oomd-per-slice-defaults.conf"
                        .to_owned()
                ]
            ))
        );
        assert_eq!(m.swap.map(|s| s.0), Some("kill".to_owned()));
        let reset = managed_oom_of(&[
            f("a", "[Slice]\nManagedOOMMemoryPressure=kill\n"),
            f("b", "[Slice]\nManagedOOMMemoryPressure=\n"),
        ]);
        assert_eq!(reset.memory_pressure, None);
        let ignored = managed_oom_of(&[f(
            "c",
            "[Unit]\nManagedOOMSwap=kill\n[Install]\nManagedOOMSwap=kill\n; ManagedOOMSwap=kill\nnot a line\n",
        )]);
        assert_eq!(ignored, ManagedOom::default());
    }

    #[test]
    fn systemctl_show_blocks_in_the_order_asked() {
        let text = "ManagedOOMSwap=kill\nManagedOOMMemoryPressure=auto\n\nManagedOOMSwap=auto\nManagedOOMMemoryPressure=kill\n";
        let shown = parse_systemctl_show(text, 3);
        assert_eq!(shown.len(), 3);
        assert_eq!(shown[0].swap.as_ref().map(|s| s.0.as_str()), Some("kill"));
        assert_eq!(
            shown[1].memory_pressure,
            Some(("kill".to_owned(), vec!["systemctl show".to_owned()]))
        );
        assert_eq!(shown[2], ManagedOom::default());
        // systemd's value wins; the files are named when they say the same.
        let files = Some(("kill".to_owned(), vec!["/etc/x.conf".to_owned()]));
        assert_eq!(merge(&shown[1].memory_pressure, &files), files);
        assert_eq!(
            merge(&shown[0].memory_pressure, &files).map(|m| m.0),
            Some("auto".to_owned())
        );
        assert_eq!(merge(&None, &files), None);
    }

    #[test]
    fn dropin_directories_in_systemds_order() {
        assert_eq!(
            dropin_names("kubepods-burstable.slice"),
            vec!["slice.d", "kubepods-.slice.d", "kubepods-burstable.slice.d"]
        );
        assert_eq!(dropin_names("-.slice"), vec!["slice.d", "-.slice.d"]);
        assert_eq!(
            dropin_names("kubelet.service"),
            vec!["service.d", "kubelet.service.d"]
        );
        assert_eq!(dropin_names("noext"), Vec::<String>::new());
    }

    #[test]
    fn a_dropin_in_etc_hides_the_same_name_in_usr_lib() {
        let host = tempfile::tempdir().unwrap();
        let w = |rel: &str, text: &str| {
            let p = host.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        w(
            "usr/lib/systemd/system/system.slice.d/10-oomd.conf",
            "[Slice]\nManagedOOMMemoryPressure=kill\n",
        );
        let units = managed_oom_units(host.path());
        assert_eq!(units.len(), 1);
        assert_eq!(units[0].unit, "system.slice");
        // The administrator's drop-in of the same name masks the vendor's.
        w(
            "etc/systemd/system/system.slice.d/10-oomd.conf",
            "[Slice]\nManagedOOMMemoryPressure=auto\n",
        );
        assert_eq!(managed_oom_units(host.path()), vec![]);
    }
}

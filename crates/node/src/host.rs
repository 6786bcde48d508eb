//! Whether this host can run the OOM handler at all: cgroup v2 with the memory controller, and
//! PSI.

use oomwarden_cgroupfs::CgroupFs;
use oomwarden_procfs::ProcFs;

use crate::SetupError;

/// Checks that the hierarchy has what the OOM handler needs: cgroup v2 with the memory
/// controller. The message says what is missing and how to point elsewhere. PSI is checked
/// apart ([`check_psi`]): only a policy that reads it needs it.
pub fn check_host(cgroups: &CgroupFs, proc: &ProcFs) -> Result<(), SetupError> {
    let root = cgroups.root().display().to_string();
    let hint = "oomwarden needs a cgroup v2 hierarchy with the memory controller; point --cgroup-root at its mount point (usually /sys/fs/cgroup, on hybrid hosts /sys/fs/cgroup/unified)";
    let controllers = match cgroups.cgroup_controllers("") {
        Ok(c) => c,
        Err(e) if e.is_not_found() => {
            return Err(SetupError::Host(format!(
                "{root} is not a cgroup v2 hierarchy: {root}/cgroup.controllers does not exist. {hint}."
            )));
        }
        Err(e) => {
            return Err(SetupError::Host(format!(
                "cannot read {root}/cgroup.controllers: {e}. {hint}."
            )));
        }
    };
    if !controllers.iter().any(|c| c == "memory") {
        let v1 = read_text(&proc.root().join("cgroups"))
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("memory\t"))
                    .map(|l| l.split('\t').nth(1).unwrap_or("0").to_owned())
            })
            .filter(|h| h != "0");
        let why = match v1 {
            Some(h) => format!(
                " The memory controller is bound to cgroup v1 (hierarchy {h} in {}/cgroups); boot with systemd.unified_cgroup_hierarchy=1 (or cgroup_no_v1=memory) to move it to v2.",
                proc.root().display()
            ),
            None => String::new(),
        };
        return Err(SetupError::Host(format!(
            "the memory controller is not available in the cgroup v2 hierarchy at {root} (cgroup.controllers: {:?}).{why} {hint}.",
            controllers.join(" ")
        )));
    }
    Ok(())
}

/// A small proc file's text: only a regular file, opened without blocking, at most 64 KiB (a
/// FIFO planted in a proc tree must not hang `doctor` or the start).
fn read_text(path: &std::path::Path) -> Option<String> {
    oomwarden_cgroupfs::read_regular(path, 64 << 10)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Checks that memory pressure (PSI) can be read: the root's `memory.pressure` or
/// `/proc/pressure/memory`. The message names `psi=0` when the kernel's command line holds it
/// (OpenShift 4.16.7 to 4.20 booted so), else says what else takes PSI away.
pub fn check_psi(cgroups: &CgroupFs, proc: &ProcFs) -> Result<(), SetupError> {
    if cgroups.memory_pressure("").is_ok() || proc.pressure_memory().is_ok() {
        return Ok(());
    }
    let root = cgroups.root().display();
    let cmdline = proc.root().join("cmdline");
    let why = match psi_off_on_cmdline(&read_text(&cmdline).unwrap_or_default()) {
        Some(word) => format!(
            "the kernel was booted with {word} ({}); remove it from the kernel command line (on OpenShift, the MachineConfig that sets it) and reboot",
            cmdline.display()
        ),
        None => "use a kernel built with CONFIG_PSI, and boot it with psi=1 where CONFIG_PSI_DEFAULT_DISABLED is set".to_owned(),
    };
    Err(SetupError::Host(format!(
        "memory pressure (PSI) is not available: neither {root}/memory.pressure nor {}/pressure/memory can be read: {why}",
        proc.root().display()
    )))
}

/// The `psi=` word of a kernel command line that turns PSI off (`kstrtobool`'s false words:
/// 0, n, N, off, false, …), the last one given winning as the kernel reads them.
pub fn psi_off_on_cmdline(cmdline: &str) -> Option<String> {
    let last = cmdline
        .split_whitespace()
        .rfind(|w| w.starts_with("psi="))?;
    let value = last.strip_prefix("psi=").unwrap_or("").to_ascii_lowercase();
    let off = value.starts_with('0')
        || value.starts_with('n')
        || value.starts_with('f')
        || value.starts_with("of");
    off.then(|| last.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_checks_name_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let proc = tempfile::tempdir().unwrap();
        let cg = CgroupFs::new(dir.path());
        let p = ProcFs::new(proc.path());
        let e = check_host(&cg, &p).unwrap_err().to_string();
        assert!(
            e.contains("is not a cgroup v2 hierarchy") && e.contains("--cgroup-root"),
            "{e}"
        );
        std::fs::write(
            dir.path().join("cgroup.controllers"),
            "cpuset cpu io pids\n",
        )
        .unwrap();
        std::fs::write(
            proc.path().join("cgroups"),
            "#subsys_name\thierarchy\tnum_cgroups\tenabled\nmemory\t4\t120\t1\n",
        )
        .unwrap();
        let e = check_host(&cg, &p).unwrap_err().to_string();
        assert!(
            e.contains("memory controller is not available")
                && e.contains("bound to cgroup v1 (hierarchy 4"),
            "{e}"
        );
        std::fs::write(dir.path().join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        // PSI is not the host check's: a policy without PSI variables runs without it.
        check_host(&cg, &p).unwrap();
        let e = check_psi(&cg, &p).unwrap_err().to_string();
        assert!(
            e.contains("PSI") && e.contains("CONFIG_PSI") && !e.contains("booted with"),
            "{e}"
        );
        std::fs::write(
            proc.path().join("cmdline"),
            "BOOT_IMAGE=/vmlinuz root=/dev/vda1 psi=0 quiet\n",
        )
        .unwrap();
        let e = check_psi(&cg, &p).unwrap_err().to_string();
        assert!(
            e.contains("booted with psi=0") && e.contains("cmdline"),
            "{e}"
        );
        std::fs::write(dir.path().join("memory.pressure"), "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").unwrap();
        check_psi(&cg, &p).unwrap();
    }

    #[test]
    fn psi_off_words_of_the_kernel_command_line() {
        for (cmdline, want) in [
            ("root=/dev/vda1 psi=0", Some("psi=0")),
            ("psi=off", Some("psi=off")),
            ("psi=N", Some("psi=N")),
            ("psi=false ro", Some("psi=false")),
            ("psi=0 psi=1", None),
            ("psi=1", None),
            ("psi=on", None),
            ("apsi=0 xpsi=0", None),
            ("", None),
            ("psi=", None),
        ] {
            assert_eq!(psi_off_on_cmdline(cmdline).as_deref(), want, "{cmdline}");
        }
    }

    #[test]
    fn this_host_is_judged_by_what_it_has() {
        // Both outcomes are asserted: refused with a clear message where the cgroup v2
        // memory controller or PSI is missing (this development machine: cgroup v1 memory),
        // accepted where both are there.
        let has_memory = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"));
        match check_host(&CgroupFs::new("/sys/fs/cgroup"), &ProcFs::new("/proc")) {
            Ok(()) => assert!(has_memory, "accepted without memory controller"),
            Err(e) => {
                assert!(!has_memory, "refused a host that has it: {e}");
                let text = e.to_string();
                assert!(text.contains("--cgroup-root"), "{text}");
            }
        }
    }
}

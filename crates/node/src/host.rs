//! Whether this host can run the OOM handler at all: cgroup v2 with the memory controller, and
//! PSI.

use oomwarden_cgroupfs::CgroupFs;
use oomwarden_procfs::ProcFs;

use crate::SetupError;

/// Checks that the hierarchy has what the OOM handler needs: cgroup v2 with the memory
/// controller, and PSI. The message says what is missing and how to point elsewhere.
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
        let v1 = std::fs::read_to_string(proc.root().join("cgroups"))
            .ok()
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
    let psi = cgroups.memory_pressure("").is_ok() || proc.pressure_memory().is_ok();
    if !psi {
        return Err(SetupError::Host(format!(
            "memory pressure (PSI) is not available: neither {root}/memory.pressure nor {}/pressure/memory can be read. Use a kernel with CONFIG_PSI and do not boot it with psi=0.",
            proc.root().display()
        )));
    }
    Ok(())
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
        let e = check_host(&cg, &p).unwrap_err().to_string();
        assert!(e.contains("PSI") && e.contains("psi=0"), "{e}");
        std::fs::write(dir.path().join("memory.pressure"), "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").unwrap();
        check_host(&cg, &p).unwrap();
    }

    #[test]
    fn this_host_is_judged_by_what_it_has() {
        // Both outcomes are asserted: refused with a clear message where the cgroup v2
        // memory controller or PSI is missing (this development machine: cgroup v1 memory),
        // accepted where both are there.
        let has_memory = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"));
        let has_psi = std::path::Path::new("/proc/pressure/memory").exists();
        match check_host(&CgroupFs::new("/sys/fs/cgroup"), &ProcFs::new("/proc")) {
            Ok(()) => assert!(
                has_memory && has_psi,
                "accepted without memory controller or PSI"
            ),
            Err(e) => {
                assert!(
                    !(has_memory && has_psi),
                    "refused a host that has both: {e}"
                );
                let text = e.to_string();
                assert!(text.contains("--cgroup-root"), "{text}");
            }
        }
    }
}

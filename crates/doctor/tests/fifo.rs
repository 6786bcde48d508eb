//! Issue 54 (6): `oomwarden doctor` hung on a FIFO planted where it reads a proc or cgroup
//! file (9 files). It opens nothing that is not a regular file, without blocking, and bounds
//! what it reads.

// Test code: unwrap on expected outcomes is the assertion.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use oomwarden_testkit::{fifo, write};

#[test]
fn a_fifo_anywhere_it_reads_never_blocks_the_doctor() {
    let cg = tempfile::tempdir().unwrap();
    let proc = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    // A process the doctor looks at further (a node agent), so its files are read too.
    write(proc.path(), "42/comm", "kubelet\n");
    std::fs::create_dir_all(cg.path().join("podruntime/kubelet")).unwrap();
    std::fs::create_dir_all(cg.path().join("kubepods")).unwrap();
    let planted: [(&Path, &str); 12] = [
        (cg.path(), "cgroup.controllers"),
        (cg.path(), "cgroup.stat"),
        (cg.path(), "memory.pressure"),
        (cg.path(), "podruntime/kubelet/memory.min"),
        (proc.path(), "meminfo"),
        (proc.path(), "pressure/memory"),
        (proc.path(), "cmdline"),
        (proc.path(), "sys/vm/panic_on_oom"),
        (proc.path(), "42/cmdline"),
        (proc.path(), "42/cgroup"),
        (proc.path(), "42/oom_score_adj"),
        (host.path(), "sys/kernel/mm/lru_gen/enabled"),
    ];
    for (root, rel) in planted {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        fifo(&path);
    }
    let roots = oomwarden_doctor::Roots {
        cgroup: cg.path().to_owned(),
        proc: proc.path().to_owned(),
        host: host.path().to_owned(),
    };
    let settings = oomwarden_config::Settings::defaults().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(oomwarden_doctor::examine(&roots, &settings));
    });
    // A blocked open would never end; a busy machine finishes in well under a second.
    let report = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the doctor blocked on a FIFO");
    // It still says what it could not read: the host check failed on the unreadable files.
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.severity == oomwarden_doctor::Severity::Error),
        "{:?}",
        report.findings.iter().map(|f| f.id).collect::<Vec<_>>()
    );
}

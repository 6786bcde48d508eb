//! Recordings shipped in the binary (`oomwarden replay --builtin NAME`), made from real VM
//! runs by `tests/vm/record-builtins.sh` (see `crates/cli/builtin/README.md`).

/// One built-in recording.
#[derive(Debug)]
pub(crate) struct Builtin {
    /// Its name.
    pub(crate) name: &'static str,
    /// One line on what happens in it.
    pub(crate) summary: &'static str,
    /// The recording (gzip).
    pub(crate) bytes: &'static [u8],
}

/// Every built-in recording.
pub(crate) const ALL: &[Builtin] = &[
    Builtin {
        name: "hog",
        summary: "a BestEffort pod takes most of RAM and leaks; the node's services stall; the default configuration kills it",
        bytes: include_bytes!("../../builtin/hog.rec.gz"),
    },
    Builtin {
        name: "page-cache",
        summary: "page-cache churn larger than RAM and a pod thrashing in its own limit: memory looks full, nothing must be killed",
        bytes: include_bytes!("../../builtin/page-cache.rec.gz"),
    },
    Builtin {
        name: "slow-leak",
        summary: "a Burstable pod without a limit leaks 4 MiB/s until the node's services stall; the default configuration kills it, then a steady pod",
        bytes: include_bytes!("../../builtin/slow-leak.rec.gz"),
    },
];

/// The recording called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.name == name)
}

/// Their names.
pub(crate) fn names() -> Vec<&'static str> {
    ALL.iter().map(|b| b.name).collect()
}

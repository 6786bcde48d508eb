//! Recordings shipped in the binary (`oomwarden replay --builtin NAME`), made from real VM
//! runs by `tests/vm/record-builtins.sh` (see `crates/cli/builtin/README.md`).

/// One built-in recording.
#[derive(Debug)]
pub(crate) struct Builtin {
    /// Its name.
    pub(crate) name: &'static str,
    /// One line on what happens in it.
    pub(crate) summary: &'static str,
    /// The recording.
    pub(crate) text: &'static str,
}

/// Every built-in recording.
pub(crate) const ALL: &[Builtin] = &[];

/// The recording called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Builtin> {
    ALL.iter().find(|b| b.name == name)
}

/// Their names.
pub(crate) fn names() -> Vec<&'static str> {
    ALL.iter().map(|b| b.name).collect()
}

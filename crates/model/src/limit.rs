//! Memory limits, never as sentinel numbers.

/// A memory limit: a number of bytes, or `max` (no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit.
    Max,
    /// A limit in bytes.
    Bytes(u64),
}

impl Limit {
    /// The limit in bytes, `None` for no limit.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Limit::Max => None,
            Limit::Bytes(b) => Some(b),
        }
    }
}

//! The constants both environments have besides the class constants: Talos's units.

/// The unit constants, all `uint` (Talos `celenv.go`).
pub(crate) const UNIT_CONSTANTS: [(&str, u64); 12] = [
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    ("PiB", 1 << 50),
    ("EiB", 1 << 60),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("PB", 1_000_000_000_000_000),
    ("EB", 1_000_000_000_000_000_000),
];

//! The memory estimate of a replay after a kill the recording did not have.
//!
//! After such a kill the recording's figures still hold the victim: its memory in
//! `MemAvailable` and in every parent's `memory.current`, growing as it really grew until its
//! recorded end. The estimate gives back what the recording says the victim held *in each
//! cycle*: its `memory.current` added to `MemAvailable` (capped at `MemTotal`) and taken out of
//! each parent's `memory.current`, its `memory.swap.current` added to `SwapFree` (capped at
//! `SwapTotal`) and taken out of each parent's `memory.swap.current`. Once the recording shows
//! the victim gone (its files unreadable), it gives back nothing: the recorded figures are
//! already without it. Nothing else changes: PSI (a stall that would have ended cannot be
//! known), reclaim and refault counters, `memory.stat`, peaks and events stay as recorded.

use std::path::{Path, PathBuf};

/// What one removed cgroup held in the current cycle, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    /// The removed cgroup's directory.
    pub dir: PathBuf,
    /// Its `memory.current` in bytes (0 when the recording has it gone).
    pub memory: u64,
    /// Its `memory.swap.current` in bytes (0 when absent).
    pub swap: u64,
}

/// A number file's value (`memory.current`): one decimal integer and a newline.
pub(crate) fn number(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// `bytes`, the contents of `path`, as the estimate gives them back; `None` leaves them as
/// recorded. `meminfo` is the path of the recording's `/proc/meminfo`.
pub(crate) fn adjust(path: &Path, bytes: &[u8], held: &[Held], meminfo: &Path) -> Option<Vec<u8>> {
    if held.iter().all(|h| h.memory == 0 && h.swap == 0) {
        return None;
    }
    if path == meminfo {
        let memory = held.iter().fold(0, |n, h| h.memory.saturating_add(n));
        let swap = held.iter().fold(0, |n, h| h.swap.saturating_add(n));
        return Some(meminfo_given_back(bytes, memory, swap));
    }
    let file = path.file_name()?.to_str()?;
    let dir = path.parent()?;
    let pick: fn(&Held) -> u64 = match file {
        "memory.current" => |h| h.memory,
        "memory.swap.current" => |h| h.swap,
        _ => return None,
    };
    let taken = held
        .iter()
        .filter(|h| h.dir != dir && h.dir.starts_with(dir))
        .fold(0, |n: u64, h| n.saturating_add(pick(h)));
    if taken == 0 {
        return None;
    }
    let recorded = number(bytes)?;
    Some(format!("{}\n", recorded.saturating_sub(taken)).into_bytes())
}

/// `/proc/meminfo` with `memory` bytes added to `MemAvailable` (at most `MemTotal`) and
/// `swap` bytes to `SwapFree` (at most `SwapTotal`); the other lines as recorded.
fn meminfo_given_back(bytes: &[u8], memory: u64, swap: u64) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return bytes.to_vec();
    };
    let kib = |line: &str, key: &str| -> Option<u64> {
        line.strip_prefix(key)?
            .strip_prefix(':')?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    };
    let field = |key: &str| text.lines().find_map(|l| kib(l, key));
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let given = [
            ("MemAvailable", "MemTotal", memory),
            ("SwapFree", "SwapTotal", swap),
        ]
        .into_iter()
        .find_map(|(key, cap, add)| {
            let value = kib(line, key)?;
            let new = value.saturating_add(add / 1024);
            Some((key, field(cap).map_or(new, |c| new.min(c.max(value)))))
        });
        match given {
            // The kernel's layout: the key and colon in 16 columns, the value in 8, " kB".
            Some((key, value)) => {
                let head = format!("{key}:");
                out.push_str(&format!("{head:<15} {value:>8} kB"));
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:        1000000 kB\nMemFree:           20000 kB\nMemAvailable:      50000 kB\nSwapTotal:         10000 kB\nSwapFree:           1000 kB\n";

    fn held(dir: &str, memory: u64, swap: u64) -> Held {
        Held {
            dir: PathBuf::from(dir),
            memory,
            swap,
        }
    }

    fn adjusted(path: &str, bytes: &str, held: &[Held]) -> Option<String> {
        adjust(
            Path::new(path),
            bytes.as_bytes(),
            held,
            Path::new("/proc/meminfo"),
        )
        .map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn the_victims_memory_goes_back_to_the_node_and_out_of_its_parents() {
        let hog = [held(
            "/cg/kubepods/besteffort/podhog",
            100 * 1024 * 1024,
            4096,
        )];
        let meminfo = adjusted("/proc/meminfo", MEMINFO, &hog).unwrap();
        assert!(
            meminfo.contains("MemAvailable:     152400 kB\n"),
            "{meminfo}"
        );
        assert!(
            meminfo.contains("SwapFree:           1004 kB\n"),
            "{meminfo}"
        );
        assert!(
            meminfo.contains("MemFree:           20000 kB\n"),
            "as recorded"
        );
        assert_eq!(
            adjusted(
                "/cg/kubepods/besteffort/memory.current",
                "204857600\n",
                &hog
            )
            .as_deref(),
            Some("100000000\n")
        );
        assert_eq!(
            adjusted("/cg/kubepods/memory.swap.current", "8192\n", &hog).as_deref(),
            Some("4096\n")
        );
        // Its own files, siblings, other files and other parents: as recorded.
        for path in [
            "/cg/kubepods/besteffort/podhog/memory.current",
            "/cg/kubepods/besteffort/podhogger/memory.current",
            "/cg/kubepods/burstable/memory.current",
            "/cg/kubepods/besteffort/memory.pressure",
            "/cg/kubepods/besteffort/memory.peak",
        ] {
            assert_eq!(adjusted(path, "5\n", &hog), None, "{path}");
        }
    }

    #[test]
    fn never_past_the_total_nor_below_zero() {
        let huge = [
            held("/cg/a/b", u64::MAX, u64::MAX),
            held("/cg/a/c", u64::MAX, 1),
        ];
        let meminfo = adjusted("/proc/meminfo", MEMINFO, &huge).unwrap();
        assert!(meminfo.contains("MemAvailable:    1000000 kB"), "{meminfo}");
        assert!(meminfo.contains("SwapFree:          10000 kB"), "{meminfo}");
        assert_eq!(
            adjusted("/cg/a/memory.current", "7\n", &huge).as_deref(),
            Some("0\n")
        );
    }

    #[test]
    fn nothing_held_changes_nothing() {
        let gone = [held("/cg/a/b", 0, 0)];
        assert_eq!(adjusted("/proc/meminfo", MEMINFO, &gone), None);
        assert_eq!(adjusted("/cg/a/memory.current", "7\n", &gone), None);
        // Unreadable contents stay as recorded.
        let hog = [held("/cg/a/b", 4096, 0)];
        assert_eq!(adjusted("/cg/a/memory.current", "max\n", &hog), None);
        assert_eq!(
            adjusted("/proc/meminfo", "garbage", &hog).as_deref(),
            Some("garbage")
        );
    }

    proptest::proptest! {
        /// Any recorded contents: no panic; lines other than the two given back stay as
        /// recorded, byte for byte.
        #[test]
        fn any_meminfo_keeps_its_other_lines(text in "(([A-Za-z]{1,12}: {0,9}[0-9]{0,12}( kB)?)?\n){0,8}", memory: u64, swap: u64) {
            let out = String::from_utf8(meminfo_given_back(text.as_bytes(), memory, swap)).unwrap();
            let changed = |l: &str| l.starts_with("MemAvailable:") || l.starts_with("SwapFree:");
            let before: Vec<&str> = text.lines().filter(|l| !changed(l)).collect();
            let after: Vec<&str> = out.lines().filter(|l| !changed(l)).collect();
            proptest::prop_assert_eq!(before, after);
            proptest::prop_assert_eq!(text.lines().count(), out.lines().count());
        }

        #[test]
        fn any_bytes_adjust_without_panic(bytes: Vec<u8>, memory: u64, swap: u64) {
            let held = [held("/cg/a/b", memory, swap)];
            for path in ["/proc/meminfo", "/cg/a/memory.current", "/cg/a/memory.swap.current"] {
                let _ = adjust(Path::new(path), &bytes, &held, Path::new("/proc/meminfo"));
            }
        }
    }
}

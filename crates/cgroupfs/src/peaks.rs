//! High-water marks per reader: since Linux 6.12 a write to `memory.peak` resets the mark
//! *for the descriptor written through* ("A write of any non-empty string to this file resets
//! it to the current memory usage for subsequent reads through the same file descriptor",
//! Documentation/admin-guide/cgroup-v2.rst). Every other reader, and the kernel, see nothing
//! change: like a PSI trigger it is a subscription, not a setting. Reading the mark and then
//! resetting it gives the highest usage between two readings, a spike of a millisecond
//! included.
//!
//! A kernel without it refuses the write; the mark is then read as it is (since the cgroup
//! was made) and [`Mark::SinceCreation`] says so.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};

use crate::{CgroupFs, ReadError, classify, parse};

/// A mark as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The highest usage since the last reading through this reader.
    SinceReset(u64),
    /// The highest usage since the cgroup was made (the kernel cannot reset it per reader).
    SinceCreation(u64),
}

/// Open `memory.peak` files, one per cgroup (at most `capacity`), each reset after it is read.
#[derive(Debug)]
pub struct PeakMarks {
    files: HashMap<String, Open>,
    capacity: usize,
}

#[derive(Debug)]
struct Open {
    file: File,
    id: u64,
    resets: bool,
}

impl PeakMarks {
    /// Keeps at most `capacity` files open.
    pub fn new(capacity: usize) -> Self {
        PeakMarks {
            files: HashMap::new(),
            capacity,
        }
    }

    /// Reads `cgroup`'s mark (whose id is `id`: another id is another cgroup at that path, whose
    /// file is opened anew) and resets it for the next reading. `Ok(None)`: the kernel has no
    /// `memory.peak` (before 5.19). The first reading through a new descriptor counts since
    /// the cgroup was made.
    pub fn read(
        &mut self,
        cgroups: &CgroupFs,
        cgroup: &str,
        id: u64,
    ) -> Result<Option<Mark>, ReadError> {
        let path = cgroups.dir(cgroup).join("memory.peak");
        let fresh = match self.files.get(cgroup) {
            Some(open) if open.id == id => false,
            _ => {
                if self.files.len() >= self.capacity && !self.files.contains_key(cgroup) {
                    // Full: read without keeping (counts since creation).
                    return match cgroups.memory_peak(cgroup) {
                        Ok(v) => Ok(Some(Mark::SinceCreation(v))),
                        Err(e) if e.is_not_found() => Ok(None),
                        Err(e) => Err(e),
                    };
                }
                let opened = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
                    .open(&path);
                let file = match opened {
                    Ok(f) => f,
                    Err(e) => {
                        // Read-only (an older kernel's mode 0444, or no write permission).
                        let e = classify(path.clone(), e);
                        if e.is_not_found() {
                            self.files.remove(cgroup);
                            return Ok(None);
                        }
                        return match cgroups.memory_peak(cgroup) {
                            Ok(v) => Ok(Some(Mark::SinceCreation(v))),
                            Err(e) if e.is_not_found() => Ok(None),
                            Err(e) => Err(e),
                        };
                    }
                };
                self.files.insert(
                    cgroup.to_owned(),
                    Open {
                        file,
                        id,
                        resets: true,
                    },
                );
                true
            }
        };
        let Some(open) = self.files.get_mut(cgroup) else {
            return Ok(None);
        };
        let mut buf = [0u8; 64];
        let n = match open.file.read_at(&mut buf, 0) {
            Ok(n) => n,
            Err(e) => {
                self.files.remove(cgroup);
                let e = classify(path, e);
                return if e.is_not_found() { Ok(None) } else { Err(e) };
            }
        };
        let text = String::from_utf8_lossy(buf.get(..n).unwrap_or_default());
        let value = parse::unsigned(&text).map_err(|source| ReadError::Parse {
            path: path.clone(),
            source,
        })?;
        let mark = if fresh || !open.resets {
            Mark::SinceCreation(value)
        } else {
            Mark::SinceReset(value)
        };
        if open.resets && open.file.write_at(b"reset\n", 0).is_err() {
            // The kernel keeps one mark for all (before 6.12): read it as it is from now on.
            open.resets = false;
        }
        Ok(Some(mark))
    }

    /// Keeps at most `capacity` files open from now on (those beyond are closed).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        while self.files.len() > capacity {
            let Some(k) = self.files.keys().next().cloned() else {
                break;
            };
            self.files.remove(&k);
        }
    }

    /// Closes the files of cgroups not in `keep` (gone, or no longer read).
    pub fn retain(&mut self, keep: &std::collections::HashSet<&str>) {
        self.files.retain(|k, _| keep.contains(k.as_str()));
    }

    /// Files open.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_reset_is_read_since_creation_and_a_gone_cgroup_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let cg = dir.path().join("pod");
        std::fs::create_dir(&cg).unwrap();
        std::fs::write(cg.join("memory.peak"), "4096\n").unwrap();
        let fs = CgroupFs::new(dir.path());
        let mut marks = PeakMarks::new(4);
        // The first reading through a new descriptor counts since creation.
        assert_eq!(
            marks.read(&fs, "pod", 1).unwrap(),
            Some(Mark::SinceCreation(4096))
        );
        // A regular file takes the write: the fixture stands for a 6.12 kernel, whose reset
        // is per descriptor (the VM scenario s27-rightsize checks the real one).
        std::fs::write(cg.join("memory.peak"), "8192\n").unwrap();
        let second = marks.read(&fs, "pod", 1).unwrap();
        assert!(matches!(second, Some(Mark::SinceReset(_))), "{second:?}");
        assert_eq!(marks.len(), 1);
        // Another cgroup id at the path: opened anew.
        std::fs::write(cg.join("memory.peak"), "8192\n").unwrap();
        assert!(matches!(
            marks.read(&fs, "pod", 2).unwrap(),
            Some(Mark::SinceCreation(_))
        ));
        assert_eq!(marks.read(&fs, "gone", 3).unwrap(), None);
        marks.retain(&std::collections::HashSet::new());
        assert!(marks.is_empty());
        // A full set reads without keeping.
        std::fs::write(cg.join("memory.peak"), "8192\n").unwrap();
        let mut small = PeakMarks::new(0);
        assert!(matches!(
            small.read(&fs, "pod", 1).unwrap(),
            Some(Mark::SinceCreation(_))
        ));
        assert!(small.is_empty());
    }
}

//! Files a user or another program names (a configuration, a kubeconfig and the certificates
//! it points to, a recording a record names), read so that nothing on the other end can hang
//! or bloat the reader: opened non-blocking (a FIFO with no writer returns at once), checked on
//! the open descriptor (`fstat`: a regular file, or a symlink to one, at most `max` bytes; a
//! FIFO or a device is refused), read to at most `max` bytes. The check is on what was opened,
//! so a file swapped between a `stat` and an `open` cannot slip through (found by the fault
//! suite: a FIFO swapped in between blocked the loop for 34 s).

use std::io::{self, Read};
use std::path::Path;

/// Reads the regular file at `path` (symlinks followed), at most `max` bytes; an error names
/// what was refused and why (the caller names the path).
pub fn read_regular(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = crate::files::open_regular(path)?;
    let size = file.metadata()?.len();
    if size > max {
        return Err(too_big(size, max));
    }
    let mut content = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max + 1).read_to_end(&mut content)?;
    let read = u64::try_from(content.len()).unwrap_or(u64::MAX);
    if read > max {
        return Err(too_big(read, max));
    }
    Ok(content)
}

fn too_big(size: u64, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{size} bytes or more; at most {max} are read"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_bounded_regular_file_is_read_and_nothing_blocks() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("f");
        std::fs::write(&file, "abc").unwrap_or_else(|e| panic!("{e}"));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read_regular(&link, 3).ok(), Some(b"abc".to_vec()));
        let e = read_regular(&file, 2).err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("3 bytes or more; at most 2 are read"));
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for refused in [fifo.as_path(), dir.path(), Path::new("/dev/zero")] {
            let e = read_regular(refused, 1 << 20).err().map(|e| e.to_string());
            assert!(
                e.as_deref()
                    .is_some_and(|e| e.contains("not a regular file")),
                "{}: {e:?}",
                refused.display()
            );
        }
    }
}

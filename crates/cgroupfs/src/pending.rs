//! The events an inotify descriptor holds, read without waiting: what `dirs` and `modified`
//! both need before they answer.

use std::ffi::OsString;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::inotify::{self, ReadFlags};
use rustix::io::Errno;

/// One pending event.
#[derive(Debug, PartialEq)]
pub(crate) enum Pending {
    /// The kernel's queue overflowed: events were lost, anything may have changed.
    Overflow,
    /// The watched file or directory is gone (removed, moved, unmounted, the watch dropped).
    Gone(i32),
    /// Something in or of it changed; the entry's name when the event names one.
    Changed(i32, Option<OsString>),
}

/// Every event pending on `fd`, in order; none when nothing is (the descriptor is
/// non-blocking: one `read` that answers `EAGAIN`).
pub(crate) fn pending(fd: &OwnedFd) -> Vec<Pending> {
    let mut buffer = [MaybeUninit::<u8>::uninit(); 4096];
    let mut reader = inotify::Reader::new(fd, &mut buffer);
    let mut events = Vec::new();
    loop {
        let event = match reader.next() {
            Ok(event) => event,
            Err(Errno::INTR) => continue,
            Err(_) => break, // EAGAIN: nothing more
        };
        let flags = event.events();
        events.push(if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            Pending::Overflow
        } else if flags.intersects(
            ReadFlags::IGNORED | ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::UNMOUNT,
        ) {
            Pending::Gone(event.wd())
        } else {
            Pending::Changed(
                event.wd(),
                event
                    .file_name()
                    .map(|n| std::ffi::OsStr::from_bytes(n.to_bytes()).to_owned()),
            )
        });
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::inotify::{CreateFlags, WatchFlags};

    fn ok<T, E: std::fmt::Display>(r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| panic!("{e}"))
    }

    // Nothing pending is no event; a file made, then the directory removed, are told in order.
    #[test]
    fn events_are_told_in_order() {
        let root = ok(tempfile::tempdir());
        let dir = root.path().join("d");
        ok(std::fs::create_dir(&dir));
        let fd = ok(inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK));
        let wd = ok(inotify::add_watch(
            &fd,
            &dir,
            WatchFlags::CREATE | WatchFlags::DELETE | WatchFlags::DELETE_SELF,
        ));
        assert!(pending(&fd).is_empty());
        ok(std::fs::write(dir.join("f"), ""));
        assert_eq!(
            pending(&fd),
            [Pending::Changed(wd, Some(OsString::from("f")))]
        );
        ok(std::fs::remove_dir_all(&dir));
        let told = pending(&fd);
        assert_eq!(
            told.first(),
            Some(&Pending::Changed(wd, Some(OsString::from("f"))))
        );
        assert!(told.contains(&Pending::Gone(wd)), "{told:?}");
    }
}

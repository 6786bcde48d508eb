//! Cgroup names that are not UTF-8. Anyone who can create a cgroup can name it with any bytes,
//! and such a cgroup must still be seen (a candidate like any other) and shown readably.
//!
//! Inside oomwarden a cgroup is a `&str` path. A byte that is not part of valid UTF-8 is
//! carried as the character U+10FF00 + byte (the last 256 code points of Unicode's
//! supplementary private use area B, which no system uses in names), turned back into the byte
//! when the path is opened ([`fs_path`]) and shown as `\xHH` ([`display`]). A real name
//! containing one of those 256 code points is read as the byte it stands for.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

const RAW_BASE: u32 = 0x10_FF00;

fn raw_byte(c: char) -> Option<u8> {
    u32::from(c)
        .checked_sub(RAW_BASE)
        .and_then(|b| u8::try_from(b).ok())
}

/// A directory name as oomwarden carries it.
pub fn from_os(name: &OsStr) -> String {
    let bytes = name.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.extend(char::from_u32(RAW_BASE + u32::from(*b)));
        }
    }
    out
}

/// The path as the filesystem knows it.
pub fn fs_path(carried: &str) -> Cow<'_, OsStr> {
    if !carried.chars().any(|c| raw_byte(c).is_some()) {
        return Cow::Borrowed(OsStr::new(carried));
    }
    let mut bytes = Vec::with_capacity(carried.len());
    let mut buf = [0u8; 4];
    for c in carried.chars() {
        match raw_byte(c) {
            Some(b) => bytes.push(b),
            None => bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes()),
        }
    }
    Cow::Owned(OsString::from_vec(bytes))
}

/// The path for people and records: raw bytes as `\xHH`.
pub fn display(carried: &str) -> Cow<'_, str> {
    if !carried.chars().any(|c| raw_byte(c).is_some()) {
        return Cow::Borrowed(carried);
    }
    let mut out = String::with_capacity(carried.len() + 8);
    for c in carried.chars() {
        match raw_byte(c) {
            Some(b) => out.push_str(&format!("\\x{b:02x}")),
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_name_with_invalid_bytes_round_trips_and_shows_escaped() {
        let raw = OsStr::from_bytes(b"pod\xff\xfe-\xc3\xa9-\xe2\x82");
        let carried = from_os(raw);
        assert_eq!(fs_path(&carried).as_bytes(), raw.as_bytes());
        assert_eq!(display(&carried), "pod\\xff\\xfe-é-\\xe2\\x82");
        assert!(matches!(display("pod-é"), Cow::Borrowed("pod-é")));
        assert!(matches!(fs_path("a/b"), Cow::Borrowed(_)));
    }

    proptest! {
        #[test]
        fn any_bytes_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let carried = from_os(OsStr::from_bytes(&bytes));
            let back = fs_path(&carried);
            prop_assert_eq!(back.as_bytes(), &bytes[..]);
            if let Ok(text) = std::str::from_utf8(&bytes)
                && !text.chars().any(|c| raw_byte(c).is_some())
            {
                prop_assert_eq!(&carried, text);
            }
        }
    }
}

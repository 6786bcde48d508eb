//! Compressed recordings: the line format compresses about 13 to 1 with gzip (most cycles
//! repeat `/proc/meminfo` with a few numbers changed). Files whose name ends in `.gz`, saved
//! flight-recorder windows and the built-in recordings are gzip; readers take either.

use std::io::{Read, Write};

use crate::format::ParseError;

const MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The most a recording may decompress to (a day of `run --record` at one cycle a second is
/// about 200 MB): a gzip bomb is an error, not a full memory.
pub const MAX_RECORDING_BYTES: u64 = 1 << 30;

/// How much is inflated before the first line is checked.
const PEEK: u64 = 4 << 10;

/// Compresses a recording.
pub fn gzip(text: &str) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(text.as_bytes());
    encoder.finish().unwrap_or_default()
}

/// The text of a recording, plain or gzip. A gzip stream cut short (a recorder that was
/// killed) gives its complete lines and a warning saying so; anything else unreadable is an
/// error.
pub fn decode(bytes: &[u8]) -> Result<(String, Option<String>), ParseError> {
    decode_capped(bytes, MAX_RECORDING_BYTES)
}

/// [`decode`], with at most `cap` bytes decompressed.
fn decode_capped(bytes: &[u8], cap: u64) -> Result<(String, Option<String>), ParseError> {
    let invalid = |reason: String| ParseError { line: 1, reason };
    if !bytes.starts_with(&MAGIC) {
        let text = String::from_utf8(bytes.to_vec()).map_err(|e| {
            invalid(format!(
                "not UTF-8 text (byte {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        return Ok((text, None));
    }
    // The header is checked before anything is inflated (RFC 1952: method 8, deflate; the
    // three high flag bits reserved).
    match (bytes.get(2), bytes.get(3)) {
        (Some(8), Some(flags)) if flags & 0xe0 == 0 => {}
        (Some(8), Some(_)) => {
            return Err(invalid(
                "not a gzip stream: reserved header flags are set".to_owned(),
            ));
        }
        (Some(method), _) => {
            return Err(invalid(format!(
                "not a gzip stream oomwarden reads: compression method {method} (only 8, deflate)"
            )));
        }
        (None, _) => return Err(invalid("a gzip header cut short".to_owned())),
    }
    let mut decoder = flate2::read::MultiGzDecoder::new(bytes);
    let mut out = Vec::new();
    // The first line is checked before more than a few KiB are inflated (found by the fault
    // suite: a gzip bomb cost 1 GB of memory before its first line was looked at).
    let head = (&mut decoder).take(PEEK.min(cap + 1)).read_to_end(&mut out);
    let magic = format!("{} ", crate::format::FORMAT_NAME);
    let compared = out.len().min(magic.len());
    if out.get(..compared) != magic.as_bytes().get(..compared) {
        return Err(invalid(format!(
            "not an oomwarden recording: its first line does not start with \"{}\"",
            magic.trim_end()
        )));
    }
    let read = head.and_then(|_| {
        decoder
            .take(cap + 1 - out.len() as u64)
            .read_to_end(&mut out)
    });
    if out.len() as u64 > cap {
        return Err(invalid(format!(
            "decompresses to more than {} MiB (oomwarden reads at most that)",
            cap >> 20
        )));
    }
    let warning = match read {
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => {
            // Keep whole lines only.
            let end = out.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            out.truncate(end);
            Some("the gzip stream ends early (the recorder was stopped abruptly?)".to_owned())
        }
        Err(e) => return Err(invalid(format!("cannot decompress: {e}"))),
    };
    let text = String::from_utf8(out).map_err(|e| {
        invalid(format!(
            "not UTF-8 text after decompressing (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok((text, warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_gzip_and_truncated() {
        let text = "oomwarden-recording 1\nmeta {}\nc 1 tick\nc 2 tick\n";
        assert_eq!(decode(text.as_bytes()).unwrap(), (text.to_owned(), None));
        let z = gzip(text);
        assert_eq!(decode(&z).unwrap(), (text.to_owned(), None));
        let big: String = std::iter::once("oomwarden-recording 1\n".to_owned())
            .chain((0..2000).map(|i| format!("c {i} tick\n")))
            .collect();
        let z = gzip(&big);
        let (cut, warning) = decode(&z[..z.len() / 2]).unwrap();
        assert!(warning.unwrap().contains("ends early"));
        assert!(big.starts_with(&cut) && cut.ends_with('\n') && !cut.is_empty());
        assert!(decode(&[0x1f, 0x8b, 0, 0]).is_err());
        assert!(decode(&[0xff, 0xfe]).is_err());
    }

    // Issue 14, item 1: the header is checked before inflating, and the inflated size capped.
    #[test]
    fn odd_headers_and_bombs_are_refused() {
        let z = gzip("oomwarden-recording 2\n");
        let mut method = z.clone();
        method[2] = 7;
        let e = decode(&method).unwrap_err().to_string();
        assert!(e.contains("compression method 7"), "{e}");
        let mut flags = z.clone();
        flags[3] = 0x80;
        assert!(decode(&flags).unwrap_err().to_string().contains("reserved"));
        assert!(
            decode(&[0x1f, 0x8b])
                .unwrap_err()
                .to_string()
                .contains("cut short")
        );
        // A bomb, scaled down (1 GiB takes half a minute in a debug build): a recording's
        // first line, then 16 MiB of zeros against a 4 MiB cap; the read stops at the cap.
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(b"oomwarden-recording 2\n").unwrap();
        encoder.write_all(&vec![0u8; 16 << 20]).unwrap();
        let bomb = encoder.finish().unwrap();
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        let e = decode_capped(&bomb, 4 << 20).unwrap_err().to_string();
        assert!(e.contains("decompresses to more than 4 MiB"), "{e}");
        assert!(decode_capped(&z, 4 << 20).is_ok());
    }

    // Issue 32: a bomb that is no recording is refused after its first few KiB, whatever the
    // cap (1 GiB here): the decoder reads no more than a few KiB of it.
    #[test]
    fn a_bomb_that_is_no_recording_is_refused_at_its_first_line() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&vec![0u8; 64 << 20]).unwrap();
        let bomb = encoder.finish().unwrap();
        let e = decode(&bomb).unwrap_err().to_string();
        assert!(e.contains("not an oomwarden recording"), "{e}");
    }
}

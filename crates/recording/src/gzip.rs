//! Compressed recordings: the line format compresses about 13 to 1 with gzip (most cycles
//! repeat `/proc/meminfo` with a few numbers changed). Files whose name ends in `.gz`, saved
//! flight-recorder windows and the built-in recordings are gzip; readers take either.

use std::io::{Read, Write};

use crate::format::ParseError;

const MAGIC: [u8; 2] = [0x1f, 0x8b];

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
    let mut decoder = flate2::read::MultiGzDecoder::new(bytes);
    let mut out = Vec::new();
    let warning = match decoder.read_to_end(&mut out) {
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => {
            // Keep whole lines only.
            let end = out.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            out.truncate(end);
            Some(format!(
                "the gzip stream ends early (the recorder was stopped abruptly?); replaying the {} complete lines",
                out.iter().filter(|b| **b == b'\n').count()
            ))
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
        let big: String = (0..2000).map(|i| format!("c {i} tick\n")).collect();
        let z = gzip(&big);
        let (cut, warning) = decode(&z[..z.len() / 2]).unwrap();
        assert!(warning.unwrap().contains("ends early"));
        assert!(big.starts_with(&cut) && cut.ends_with('\n') && !cut.is_empty());
        assert!(decode(&[0x1f, 0x8b, 0, 0]).is_err());
        assert!(decode(&[0xff, 0xfe]).is_err());
    }
}

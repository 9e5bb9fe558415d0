//! Reading a text file the user named (a scenario, a trace): only regular files, read to a size
//! limit, as UTF-8, so that `/dev/zero`, a FIFO, a directory or a multi-gigabyte file is a
//! clear error naming the file instead of a hang or a machine's memory.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The largest scenario file cclab reads (a scenario is a page of TOML).
pub const MAX_SCENARIO_BYTES: u64 = 16 << 20;
/// The largest trace file cclab reads: one line per 1500-byte delivery opportunity, so this is
/// about 60 million opportunities (an hour of a 250 Mbit/s link at ~12 bytes a line).
pub const MAX_TRACE_BYTES: u64 = 768 << 20;
/// The largest request-size CDF file cclab reads (the shipped ones are a few hundred bytes; a
/// measured distribution with a point per distinct size stays far below this).
pub const MAX_CDF_BYTES: u64 = 16 << 20;

/// Why a file could not be read, in words for an error message (the caller names the file).
pub fn read_text(path: &Path, limit: u64) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let kind = meta.file_type();
    if kind.is_dir() {
        return Err("it is a directory, not a file".into());
    }
    if !kind.is_file() {
        // A FIFO would block until a writer comes; a device such as /dev/zero never ends.
        return Err("it is not a regular file (a pipe, socket or device cannot be read to its end)".into());
    }
    if meta.len() > limit {
        return Err(format!("it holds {} bytes; at most {limit} are read", meta.len()));
    }
    let file = File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow between `metadata` and here: read one byte past the limit to tell.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("it holds more than {limit} bytes, the most that is read"));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count();
        format!("line {line}: it is not text (binary data, or not UTF-8)")
    })
}

/// A line of a file as an error message may quote it: at most 40 characters, escaped, so a
/// binary or minified file does not fill the terminal.
pub fn quote_line(line: &str) -> String {
    const MAX: usize = 40;
    let mut out: String = line.chars().take(MAX).collect();
    if line.chars().nth(MAX).is_some() {
        out.push('…');
    }
    format!("{out:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_cannot_be_read_to_its_end() {
        let dir = std::env::temp_dir().join(format!("cclab-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(read_text(&dir, 100).unwrap_err().contains("directory"));
        if Path::new("/dev/zero").exists() {
            assert!(read_text(Path::new("/dev/zero"), 100).unwrap_err().contains("not a regular file"));
        }
        let big = dir.join("big");
        std::fs::write(&big, vec![b'1'; 101]).unwrap();
        assert!(read_text(&big, 100).unwrap_err().contains("101 bytes"));
        let binary = dir.join("bin");
        std::fs::write(&binary, b"1\n2\n\xff\xfe").unwrap();
        assert_eq!(read_text(&binary, 100).unwrap_err(), "line 3: it is not text (binary data, or not UTF-8)");
        let ok = dir.join("ok");
        std::fs::write(&ok, "10\n20\n").unwrap();
        assert_eq!(read_text(&ok, 100).unwrap(), "10\n20\n");
        assert!(read_text(&dir.join("missing"), 100).unwrap_err().contains("No such file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn quotes_are_short() {
        assert_eq!(quote_line("abc"), "\"abc\"");
        let long = "x".repeat(5000);
        assert_eq!(quote_line(&long).chars().count(), 40 + 3);
    }
}

//! External programs as schemes, in the spirit of the Pantheon's wrappers: a small TOML file
//! says how to start each side and which side listens first.
//!
//! ```toml
//! description = "a UDP blaster"            # optional
//! run_first = "receiver"                   # the side that listens: "receiver" or "sender"
//! receiver = "python3 {dir}/pair.py recv {port}"
//! sender = "python3 {dir}/pair.py send {ip} {port}"
//! setup_time = "1s"                        # optional: time the first side gets to listen
//! ```
//!
//! Placeholders: `{port}` the port the first side listens on, `{ip}` the first side's address,
//! `{dir}` the wrapper file's folder; `{{`/`}}` are literal braces. Both commands run through
//! `sh -c`, each side in its own network namespace; the first side starts before the run's
//! clock, the second at the flow's start, and both are killed at the flow's stop.

use cclab_core::scenario::{did_you_mean, line_of_field};
use cclab_core::units::Dur;
use std::fmt;
use std::path::{Path, PathBuf};

const KEYS: &[&str] = &["description", "run_first", "sender", "receiver", "setup_time"];
const PLACEHOLDERS: &[&str] = &["port", "ip", "dir"];
const DEFAULT_SETUP: Dur = Dur(1_000_000_000);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Sender => "sender",
            Side::Receiver => "receiver",
        })
    }
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Sender => Side::Receiver,
            Side::Receiver => Side::Sender,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Wrapper {
    pub file: PathBuf,
    pub run_first: Side,
    pub sender: String,
    pub receiver: String,
    pub setup_time: Dur,
}

/// One piece of a command template.
enum Piece<'a> {
    Text(&'a str),
    Brace(char),
    Placeholder(&'a str),
}

/// Splits a command template into text, escaped braces and placeholders.
fn pieces(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push(Piece::Text(&rest[..i]));
        let c = rest.as_bytes()[i] as char;
        if rest[i + 1..].starts_with(c) {
            out.push(Piece::Brace(c));
            rest = &rest[i + 2..];
        } else if c == '}' {
            return Err("a lone `}` (write `}}` for a literal brace)".into());
        } else {
            let end = rest[i..].find('}').ok_or("a `{` without its `}` (write `{{` for a literal brace)")?;
            out.push(Piece::Placeholder(&rest[i + 1..i + end]));
            rest = &rest[i + end + 1..];
        }
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// Single-quotes a value for `sh` unless it is plainly safe.
fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-:+,=@".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

impl Wrapper {
    pub fn load(path: &Path) -> Result<Wrapper, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read wrapper file {}: {e}", path.display()))?;
        Wrapper::parse(&text, path)
    }

    /// Parses and checks a wrapper file; every problem is listed, each with its line.
    pub fn parse(text: &str, file: &Path) -> Result<Wrapper, String> {
        let name = file.display().to_string();
        let at = |key: &str, msg: String| match line_of_field(text, key) {
            Some(line) => format!("wrapper file {name}:{line}: `{key}`: {msg}"),
            None => format!("wrapper file {name}: `{key}`: {msg}"),
        };
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
            match line {
                Some(l) => format!("wrapper file {name}:{l}: not valid TOML: {}", e.message()),
                None => format!("wrapper file {name}: not valid TOML: {}", e.message()),
            }
        })?;
        let mut errs = Vec::new();
        for key in table.keys() {
            if !KEYS.contains(&key.as_str()) {
                let hint = did_you_mean(key, KEYS).map(|s| format!("did you mean `{s}`? ")).unwrap_or_default();
                errs.push(at(key, format!("unknown key; {hint}accepted keys: {}", KEYS.join(", "))));
            }
        }
        let mut string = |key: &str| -> Option<String> {
            match table.get(key) {
                Some(toml::Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
                Some(toml::Value::String(_)) => {
                    errs.push(at(key, "must not be empty".into()));
                    None
                }
                Some(v) => {
                    errs.push(at(key, format!("expected a string, found {}", v.type_str())));
                    None
                }
                None => None,
            }
        };
        let sender = string("sender");
        let receiver = string("receiver");
        let run_first = string("run_first");
        let setup = string("setup_time");
        let run_first = match run_first.as_deref() {
            Some("receiver") => Some(Side::Receiver),
            Some("sender") => Some(Side::Sender),
            Some(other) => {
                errs.push(at("run_first", format!("`{other}` is neither \"receiver\" nor \"sender\"")));
                None
            }
            None => None,
        };
        let setup_time = match setup.as_deref().map(Dur::parse) {
            Some(Ok(d)) => d,
            Some(Err(e)) => {
                errs.push(at("setup_time", e));
                DEFAULT_SETUP
            }
            None => DEFAULT_SETUP,
        };
        for (key, value) in [("sender", &sender), ("receiver", &receiver), ("run_first", &None)] {
            if value.is_none() && !table.contains_key(key) {
                let what = match key {
                    "run_first" => "which side listens first: \"receiver\" or \"sender\"",
                    _ => "the shell command that starts this side, e.g. \"python3 {dir}/prog.py {port}\"",
                };
                errs.push(format!("wrapper file {name}: missing key `{key}`: {what}"));
            }
        }
        // The first side must know where to listen; the second, where to connect.
        if let Some(first) = run_first {
            for (side, cmd) in [(Side::Sender, &sender), (Side::Receiver, &receiver)] {
                let Some(cmd) = cmd else { continue };
                let key = side.to_string();
                match pieces(cmd) {
                    Err(e) => errs.push(at(&key, e)),
                    Ok(ps) => {
                        let used: Vec<&str> = ps
                            .iter()
                            .filter_map(|p| if let Piece::Placeholder(n) = p { Some(*n) } else { None })
                            .collect();
                        for u in &used {
                            if !PLACEHOLDERS.contains(u) {
                                let hint = did_you_mean(u, PLACEHOLDERS)
                                    .map(|s| format!("did you mean `{{{s}}}`? "))
                                    .unwrap_or_default();
                                errs.push(at(
                                    &key,
                                    format!(
                                        "unknown placeholder `{{{u}}}`; {hint}placeholders: {{port}}, {{ip}}, {{dir}}"
                                    ),
                                ));
                            }
                        }
                        let needs: &[&str] = if side == first { &["port"] } else { &["ip", "port"] };
                        for n in needs {
                            if !used.contains(n) {
                                let role = if side == first { "listens first" } else { "connects to the other side" };
                                errs.push(at(&key, format!("the {side} {role}, so its command needs `{{{n}}}`")));
                            }
                        }
                    }
                }
            }
        }
        if !errs.is_empty() {
            return Err(errs.join("\n"));
        }
        Ok(Wrapper {
            file: file.to_path_buf(),
            run_first: run_first.expect("checked"),
            sender: sender.expect("checked"),
            receiver: receiver.expect("checked"),
            setup_time,
        })
    }

    /// The shell command of one side with its placeholders filled in.
    pub fn command(&self, side: Side, ip: &str, port: u16) -> String {
        let template = match side {
            Side::Sender => &self.sender,
            Side::Receiver => &self.receiver,
        };
        let dir = self.file.parent().map(|d| d.display().to_string()).unwrap_or_else(|| ".".into());
        let dir = if dir.is_empty() { ".".to_string() } else { dir };
        let mut out = String::new();
        for p in pieces(template).expect("validated when loaded") {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Brace(c) => out.push(c),
                Piece::Placeholder("port") => out.push_str(&port.to_string()),
                Piece::Placeholder("ip") => out.push_str(ip),
                Piece::Placeholder(_) => out.push_str(&shell_quote(&dir)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Wrapper, String> {
        Wrapper::parse(text, Path::new("/w/x.toml"))
    }

    #[test]
    fn good_file_and_substitution() {
        let w = parse(
            "run_first = \"receiver\"\nreceiver = \"rx {port}\"\nsender = \"tx {ip} {port} | awk '{{print}}'\"\nsetup_time = \"200ms\"\n",
        )
        .unwrap();
        assert_eq!(w.run_first, Side::Receiver);
        assert_eq!(w.setup_time, Dur::from_millis(200));
        assert_eq!(w.command(Side::Sender, "10.0.0.2", 5000), "tx 10.0.0.2 5000 | awk '{print}'");
        let w = parse("run_first = \"sender\"\nsender = \"{dir}/s {port}\"\nreceiver = \"r {ip} {port}\"\n").unwrap();
        assert_eq!(w.command(Side::Sender, "x", 1), "/w/s 1");
    }

    #[test]
    fn errors_name_the_line_and_what_is_accepted() {
        let e = parse("run_frist = \"receiver\"\nreceiver = \"rx {prot}\"\nsender = \"tx {port}\"\n").unwrap_err();
        assert!(e.contains("x.toml:1: `run_frist`: unknown key; did you mean `run_first`?"), "{e}");
        assert!(e.contains("missing key `run_first`"), "{e}");
        let e = parse("run_first = \"receiver\"\nreceiver = \"rx {prot}\"\nsender = \"tx {port}\"\n").unwrap_err();
        assert!(e.contains("x.toml:2: `receiver`: unknown placeholder `{prot}`; did you mean `{port}`?"), "{e}");
        assert!(e.contains("the sender connects to the other side, so its command needs `{ip}`"), "{e}");
        let e = parse("run_first = \"both\"\nreceiver = 3\n").unwrap_err();
        assert!(e.contains("neither \"receiver\" nor \"sender\""), "{e}");
        assert!(e.contains("`receiver`: expected a string, found integer"), "{e}");
        assert!(e.contains("missing key `sender`"), "{e}");
        let e = parse("run_first = \"receiver\"\nreceiver = \"rx {port\"\nsender = \"tx {ip} {port}\"\n").unwrap_err();
        assert!(e.contains("without its `}`"), "{e}");
        assert!(parse("receiver = ").unwrap_err().contains("x.toml:1: not valid TOML"));
    }
}

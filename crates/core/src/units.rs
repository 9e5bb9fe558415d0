//! Quantities written with explicit units in scenario files ("46Mbps", "10ms", "115KB", "1bdp").
//!
//! Every type keeps an exact integer representation (bits/s, nanoseconds, bytes) so that the
//! simulator never accumulates floating-point drift, and prints back in a form it can re-parse.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Splits "46.5Mbps" into (46.5, "Mbps"). Whitespace between number and unit is allowed.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '_'))
        .unwrap_or(text.len());
    // "e" may start a unit only if no digit follows; keep the parse simple and strict.
    let (num, unit) = text.split_at(end);
    let num: f64 = num.replace('_', "").parse().ok()?;
    if !num.is_finite() || num < 0.0 {
        return None;
    }
    Some((num, unit.trim()))
}

/// `num · scale` as a whole number of units, or an error when it does not fit in a u64: a
/// value past 2^64 units must be refused, not clamped to the largest one (a clamped
/// "99999999999999999999h" would silently mean 584 years).
fn whole_units(text: &str, what: &str, num: f64, scale: f64) -> Result<u64, String> {
    let value = (num * scale).round();
    // 2^64 as f64 is exact; every f64 below it converts without saturating.
    if !value.is_finite() || value >= 18_446_744_073_709_551_616.0 {
        return Err(format!("{what} {text:?} is too large: it does not fit in 64 bits of its unit"));
    }
    Ok(value as u64)
}

/// A link or sending rate, stored in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub const ACCEPTED: &'static str = "a rate with a unit, e.g. \"46Mbps\", \"1.5Gbps\", \"500kbps\", \"12000bps\"";

    pub fn from_mbps(mbps: f64) -> Rate {
        Rate((mbps * 1e6).round() as u64)
    }
    pub fn bits_per_sec(self) -> u64 {
        self.0
    }
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
    pub fn mbps(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Nanoseconds needed to serialise `bytes` at this rate, rounded up so a link never
    /// exceeds its nominal rate.
    pub fn serialisation_ns(self, bytes: u64) -> u64 {
        (bytes as u128 * 8 * 1_000_000_000).div_ceil(self.0.max(1) as u128) as u64
    }

    pub fn parse(text: &str) -> Result<Rate, String> {
        let bad = || format!("cannot read {text:?} as a rate; expected {}", Self::ACCEPTED);
        let (num, unit) = split_number(text).ok_or_else(bad)?;
        let scale = match unit.to_ascii_lowercase().as_str() {
            "bps" | "bit/s" => 1.0,
            "kbps" | "kbit/s" => 1e3,
            "mbps" | "mbit/s" => 1e6,
            "gbps" | "gbit/s" => 1e9,
            "tbps" | "tbit/s" => 1e12,
            "" => return Err(format!("{text:?} has no unit; expected {}", Self::ACCEPTED)),
            _ => return Err(bad()),
        };
        let bits = whole_units(text, "rate", num, scale)?;
        if bits < 1 {
            return Err(format!("rate {text:?} must be positive"));
        }
        Ok(Rate(bits))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b % 1_000_000_000 == 0 {
            write!(f, "{}Gbps", b / 1_000_000_000)
        } else if b % 1_000_000 == 0 {
            write!(f, "{}Mbps", b / 1_000_000)
        } else if b % 1_000 == 0 {
            write!(f, "{}kbps", b / 1_000)
        } else {
            write!(f, "{b}bps")
        }
    }
}

/// A span of time, stored in integer nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub u64);

impl Dur {
    pub const ACCEPTED: &'static str = "a duration with a unit, e.g. \"10ms\", \"1.5s\", \"250us\", \"2min\"";
    pub const ZERO: Dur = Dur(0);

    /// Whether the span is empty (serde's `skip_serializing_if` for optional delays).
    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }

    pub fn from_secs_f64(s: f64) -> Dur {
        Dur((s * 1e9).round() as u64)
    }
    pub fn from_millis(ms: u64) -> Dur {
        Dur(ms * 1_000_000)
    }
    pub fn ns(self) -> u64 {
        self.0
    }
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn millis(self) -> f64 {
        self.0 as f64 / 1e6
    }

    pub fn parse(text: &str) -> Result<Dur, String> {
        let bad = || format!("cannot read {text:?} as a duration; expected {}", Self::ACCEPTED);
        let (num, unit) = split_number(text).ok_or_else(bad)?;
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "min" => 60e9,
            "h" => 3600e9,
            "" if num == 0.0 => 0.0,
            "" => return Err(format!("{text:?} has no unit; expected {}", Self::ACCEPTED)),
            _ => return Err(bad()),
        };
        Ok(Dur(whole_units(text, "duration", num, scale)?))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            write!(f, "0s")
        } else if n % 1_000_000_000 == 0 {
            write!(f, "{}s", n / 1_000_000_000)
        } else if n % 1_000_000 == 0 {
            write!(f, "{}ms", n / 1_000_000)
        } else if n % 1_000 == 0 {
            write!(f, "{}us", n / 1_000)
        } else {
            write!(f, "{n}ns")
        }
    }
}

/// A number of bytes ("115KB", "1.5MB", "1500B"). KB/MB/GB are decimal, KiB/MiB/GiB binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const ACCEPTED: &'static str = "a size with a unit, e.g. \"1500B\", \"115KB\", \"1.5MB\", \"64KiB\"";

    pub fn parse(text: &str) -> Result<Bytes, String> {
        let bad = || format!("cannot read {text:?} as a size; expected {}", Self::ACCEPTED);
        let (num, unit) = split_number(text).ok_or_else(bad)?;
        let scale = byte_scale(unit).ok_or_else(bad)?;
        Ok(Bytes(whole_units(text, "size", num, scale)?))
    }
}

fn byte_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "B" | "bytes" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}

/// A queue limit: in packets (a bare integer or "77" / "77pkts"), in bytes ("115KB"), in
/// bandwidth-delay products of the path ("1bdp", "0.5bdp"), or unlimited ("infinite").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueSize {
    Packets(u64),
    Bytes(u64),
    Bdp(f64),
    Infinite,
}

impl QueueSize {
    pub const ACCEPTED: &'static str = "packets (77 or \"77pkts\"), bytes (\"115KB\"), \
         bandwidth-delay products (\"1bdp\") or \"infinite\"";

    pub fn parse(text: &str) -> Result<QueueSize, String> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("infinite") || t.eq_ignore_ascii_case("unlimited") {
            return Ok(QueueSize::Infinite);
        }
        let bad = || format!("cannot read {text:?} as a queue size; expected {}", Self::ACCEPTED);
        let (num, unit) = split_number(t).ok_or_else(bad)?;
        match unit {
            "" | "p" | "pkt" | "pkts" | "packets" => {
                if num.fract() != 0.0 {
                    return Err(format!("queue {text:?}: a packet count must be whole"));
                }
                Ok(QueueSize::Packets(whole_units(text, "queue", num, 1.0)?))
            }
            "bdp" | "BDP" => Ok(QueueSize::Bdp(num)),
            u => match byte_scale(u) {
                Some(s) => Ok(QueueSize::Bytes(whole_units(text, "queue", num, s)?)),
                None => Err(bad()),
            },
        }
    }
}

impl fmt::Display for QueueSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QueueSize::Packets(n) => write!(f, "{n}pkts"),
            QueueSize::Bytes(b) => write!(f, "{b}B"),
            QueueSize::Bdp(x) => write!(f, "{x}bdp"),
            QueueSize::Infinite => write!(f, "infinite"),
        }
    }
}

/// Serde glue: each unit type reads from a string (and queue sizes also from a bare integer)
/// and writes back the canonical string.
macro_rules! string_serde {
    ($t:ty, $expecting:expr) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> de::Visitor<'de> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$t, E> {
                        <$t>::parse(v).map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$t, E> {
                        <$t>::parse(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$t, E> {
                        <$t>::parse(&v.to_string()).map_err(E::custom)
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$t, E> {
                        <$t>::parse(&v.to_string()).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}
string_serde!(Rate, Rate::ACCEPTED);
string_serde!(Dur, Dur::ACCEPTED);
string_serde!(Bytes, Bytes::ACCEPTED);
string_serde!(QueueSize, QueueSize::ACCEPTED);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(Rate::parse("46Mbps").unwrap(), Rate(46_000_000));
        assert_eq!(Rate::parse("1.5Gbps").unwrap(), Rate(1_500_000_000));
        assert_eq!(Rate::parse("500 kbps").unwrap(), Rate(500_000));
        assert!(Rate::parse("46").unwrap_err().contains("no unit"));
        assert!(Rate::parse("46MBs").is_err());
        assert!(Rate::parse("-3Mbps").is_err());
        assert_eq!(Rate(46_000_000).to_string(), "46Mbps");
        assert_eq!(Rate(2_640_000).to_string(), "2640kbps");
        // 1500 bytes at 12 Mbit/s take exactly 1 ms.
        assert_eq!(Rate(12_000_000).serialisation_ns(1500), 1_000_000);
    }

    #[test]
    fn durations() {
        assert_eq!(Dur::parse("10ms").unwrap(), Dur(10_000_000));
        assert_eq!(Dur::parse("1.5s").unwrap(), Dur(1_500_000_000));
        assert_eq!(Dur::parse("250us").unwrap(), Dur(250_000));
        assert_eq!(Dur::parse("0").unwrap(), Dur(0));
        assert!(Dur::parse("10").unwrap_err().contains("no unit"));
        assert!(Dur::parse("ten ms").is_err());
        for d in [Dur(0), Dur(7), Dur(3_000), Dur(20_000_000), Dur(30_000_000_000)] {
            assert_eq!(Dur::parse(&d.to_string()).unwrap(), d);
        }
    }

    #[test]
    fn sizes_and_queues() {
        assert_eq!(Bytes::parse("115KB").unwrap(), Bytes(115_000));
        assert_eq!(Bytes::parse("64KiB").unwrap(), Bytes(65_536));
        assert_eq!(QueueSize::parse("77").unwrap(), QueueSize::Packets(77));
        assert_eq!(QueueSize::parse("77pkts").unwrap(), QueueSize::Packets(77));
        assert_eq!(QueueSize::parse("115KB").unwrap(), QueueSize::Bytes(115_000));
        assert_eq!(QueueSize::parse("1bdp").unwrap(), QueueSize::Bdp(1.0));
        assert_eq!(QueueSize::parse("infinite").unwrap(), QueueSize::Infinite);
        assert!(QueueSize::parse("7.5").is_err());
        assert!(QueueSize::parse("3 lightyears").is_err());
    }

    #[test]
    fn values_past_64_bits_are_refused_not_clamped() {
        assert!(Dur::parse("99999999999999999999h").unwrap_err().contains("too large"));
        assert!(Dur::parse("1e300s").unwrap_err().contains("too large"));
        assert!(Rate::parse("1e30Tbps").unwrap_err().contains("too large"));
        assert!(Bytes::parse("1e20GB").unwrap_err().contains("too large"));
        assert!(QueueSize::parse("1e25").unwrap_err().contains("too large"));
        assert!(QueueSize::parse("1e25B").unwrap_err().contains("too large"));
        // 584 years in ns still fits: the largest duration is about u64::MAX ns.
        assert_eq!(Dur::parse("5000000h").unwrap(), Dur(5_000_000 * 3_600_000_000_000));
    }
}

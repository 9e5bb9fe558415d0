//! `[hosts]`: the end hosts' per-packet processing time. A real sender's packets leave its NIC
//! after a variable delay (interrupts, softirq batching, the qdisc, DMA), and a real receiver's
//! ACKs likewise; without any such variation a simulated constant-rate bottleneck serves every
//! flow at exactly periodic instants, and which flow a full drop-tail queue drops is decided by
//! packet phase, identically for every seed (Floyd & Jacobson, "On traffic phase effects in
//! packet-switched gateways", 1992). The jitter breaks that phase lock.
//!
//! Each data packet waits at its sender, and each ACK at its receiver, a draw uniform in
//! [0, jitter], never leaving before the packet sent ahead of it by the same host (hosts send in
//! order: the jitter never reorders a flow). The emulator ignores this section: its hosts are
//! real and jitter on their own.

use crate::units::{Dur, Rate};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// The most `"auto"` allows: real hosts vary by microseconds to about a millisecond
/// (interrupt coalescing, softirq batching), never by a slow link's packet time. Measured on
/// the Nepal path (0.57 Mbit/s, a packet time of 21 ms): the emulator's kernel receiver's ACKs
/// took 27.92-28.17 ms over its 28 ms reverse delay, timing error included, where an uncapped
/// "auto" (U[0, 21 ms] on every data packet and every ACK) made them 28-49 ms (median 39) and
/// cost Cubic and NewReno 0.04-0.06 of the kernel's 0.46-0.48 Mbit/s. Every link of 12 Mbit/s
/// and more (a packet time of 1 ms or less) is unaffected.
pub const AUTO_MAX: Dur = Dur(1_000_000);

/// `jitter = "auto" | "0" | "<duration>"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostJitter {
    /// One packet's serialisation time at the bottleneck's (mean) rate, at most [`AUTO_MAX`]:
    /// the least variation that moves packets by a whole service slot, and so breaks the phase
    /// lock, while adding on average only half a packet time of delay per host.
    #[default]
    Auto,
    /// A fixed maximum; zero turns the jitter off (the phase-locked, analytic path).
    Max(Dur),
}

impl HostJitter {
    pub const ACCEPTED: &'static str = "\"auto\", \"0\" (off) or a duration, e.g. \"100us\"";

    pub fn parse(text: &str) -> Result<HostJitter, String> {
        if text.trim() == "auto" {
            return Ok(HostJitter::Auto);
        }
        Dur::parse(text).map(HostJitter::Max).map_err(|e| format!("{e}; or \"auto\""))
    }

    /// The largest extra delay per packet, ns, on a path whose bottleneck serves `rate` and
    /// whose full data packets are `packet_bytes` on the wire.
    pub fn resolve(self, rate: Rate, packet_bytes: u64) -> u64 {
        match self {
            HostJitter::Auto => rate.serialisation_ns(packet_bytes).min(AUTO_MAX.ns()),
            HostJitter::Max(d) => d.ns(),
        }
    }
}

impl fmt::Display for HostJitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostJitter::Auto => f.write_str("auto"),
            HostJitter::Max(d) => write!(f, "{d}"),
        }
    }
}

impl Serialize for HostJitter {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for HostJitter {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = HostJitter;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(HostJitter::ACCEPTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HostJitter, E> {
                HostJitter::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HostJitter, E> {
                HostJitter::parse(&v.to_string()).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HostJitter, E> {
                HostJitter::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// The `[hosts]` section; every key has a default, so an absent section is the default hosts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hosts {
    /// Largest per-packet processing delay at each sender (data) and receiver (ACKs).
    /// Default `"auto"`: one full packet's serialisation time at the bottleneck rate, at most
    /// [`AUTO_MAX`] (1 ms).
    #[serde(default)]
    pub jitter: HostJitter,
}

impl Hosts {
    /// Whether the section says nothing beyond the defaults (it is then not written back).
    pub fn is_default(&self) -> bool {
        *self == Hosts::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_reads_auto_zero_and_durations() {
        assert_eq!(HostJitter::parse("auto").unwrap(), HostJitter::Auto);
        assert_eq!(HostJitter::parse("0").unwrap(), HostJitter::Max(Dur(0)));
        assert_eq!(HostJitter::parse("250us").unwrap(), HostJitter::Max(Dur(250_000)));
        let e = HostJitter::parse("fast").unwrap_err();
        assert!(e.contains("auto"), "{e}");
        // 12 Mbit/s: a 1500-byte packet takes exactly 1 ms.
        assert_eq!(HostJitter::Auto.resolve(Rate(12_000_000), 1500), 1_000_000);
        assert_eq!(HostJitter::Auto.resolve(Rate(48_000_000), 1500), 250_000);
        // 0.57 Mbit/s: a packet time of 21 ms, capped at AUTO_MAX; a duration is taken as is.
        assert_eq!(HostJitter::Auto.resolve(Rate(570_000), 1500), 1_000_000);
        assert_eq!(HostJitter::Max(Dur(5_000_000)).resolve(Rate(570_000), 1500), 5_000_000);
        assert_eq!(HostJitter::Max(Dur(0)).resolve(Rate(12_000_000), 1500), 0);
        let h: Hosts = toml::from_str("jitter = 0").unwrap();
        assert_eq!(h.jitter, HostJitter::Max(Dur(0)));
        let h: Hosts = toml::from_str("jitter = \"100us\"").unwrap();
        assert_eq!(h.jitter, HostJitter::Max(Dur(100_000)));
        assert!(toml::from_str::<Hosts>("jiter = \"0\"").is_err());
    }
}

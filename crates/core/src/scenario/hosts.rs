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

/// The most `"auto"` allows: what a Linux host takes to answer, measured through the emulator
/// (tolerance 0, the 1-BDP mix): a kernel sender's first data leaves 8.9 µs after the ACK that
/// released it at the median and 15 µs at p90, a receiver's ACK 5.6 µs after the data at the
/// median. A packet time is the least variation that moves a packet by a whole service slot,
/// but at 100 Mbit/s it is 120 µs, six times what these hosts do, and it spreads a sender's
/// bursts that the kernel sends together: the cap is the measured response, and the choice of
/// the fidelity suite (README, "The hosts' jitter"). 20 µs still breaks the phase lock at
/// 12 Mbit/s, where it is 2 % of a packet time (`tests/hosts.rs`). Links over 600 Mbit/s (a
/// packet time under 20 µs) are unaffected; on the Nepal path (0.57 Mbit/s) an uncapped "auto"
/// (21 ms) cost Cubic and NewReno 0.04–0.06 of the kernel's 0.46–0.48 Mbit/s.
pub const AUTO_MAX: Dur = Dur(20_000);

/// `jitter = "auto" | "0" | "<duration>"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostJitter {
    /// One packet's serialisation time at the bottleneck's (mean) rate, at most [`AUTO_MAX`]
    /// (20 µs, what Linux hosts take): enough variation to break the phase lock, as small as
    /// real hosts'.
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
    /// [`AUTO_MAX`] (20 µs).
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
        // 1 Gbit/s: a 1500-byte packet takes 12 µs, under the cap.
        assert_eq!(HostJitter::Auto.resolve(Rate(1_000_000_000), 1500), 12_000);
        // 12 Mbit/s (1 ms) and 0.57 Mbit/s (21 ms): capped at AUTO_MAX; a duration as is.
        assert_eq!(HostJitter::Auto.resolve(Rate(12_000_000), 1500), 20_000);
        assert_eq!(HostJitter::Auto.resolve(Rate(570_000), 1500), 20_000);
        assert_eq!(HostJitter::Max(Dur(5_000_000)).resolve(Rate(570_000), 1500), 5_000_000);
        assert_eq!(HostJitter::Max(Dur(0)).resolve(Rate(12_000_000), 1500), 0);
        let h: Hosts = toml::from_str("jitter = 0").unwrap();
        assert_eq!(h.jitter, HostJitter::Max(Dur(0)));
        let h: Hosts = toml::from_str("jitter = \"100us\"").unwrap();
        assert_eq!(h.jitter, HostJitter::Max(Dur(100_000)));
        assert!(toml::from_str::<Hosts>("jiter = \"0\"").is_err());
    }
}

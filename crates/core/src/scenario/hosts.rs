//! `[hosts]`: the end hosts' per-packet processing time. A real sender's packets leave its NIC
//! after a variable delay (interrupts, softirq batching, the qdisc, DMA), and a real receiver's
//! ACKs likewise; without any such variation a simulated constant-rate bottleneck serves every
//! flow at exactly periodic instants, and which flow a full drop-tail queue drops is decided by
//! packet phase, identically for every seed (Floyd & Jacobson, "On traffic phase effects in
//! packet-switched gateways", 1992). The jitter breaks that phase lock.
//!
//! Each data packet waits at its sender, and each ACK at its receiver, a draw uniform in
//! [0, jitter], never leaving before the packet sent ahead of it by the same host (hosts send in
//! order: the jitter never reorders a flow). Now and then a host also stalls — a late wake-up of
//! the thread or softirq that moves its packets — and everything it sends behind the stalled
//! packet waits with it (`stalls`). The emulator ignores this section: its hosts are real and
//! jitter and stall on their own.

use crate::rng::Rng;
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
/// the fidelity suite (FIDELITY.md, "The hosts' jitter is now 20 µs"). 20 µs still breaks the
/// phase lock at 12 Mbit/s, where it is 2 % of a packet time (`tests/hosts.rs`). Links over
/// 600 Mbit/s (a packet time under 20 µs) are unaffected; on the Nepal path (0.57 Mbit/s) an
/// uncapped "auto" (21 ms) cost Cubic and NewReno 0.04–0.06 of the kernel's 0.46–0.48 Mbit/s.
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

/// A host's stalls: a packet waits at least `from` more with probability `share`, and
/// P(wait > x) = share · from / x up to `max` (a Pareto tail of index 1: each doubling of the
/// wait halves its share).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stalls {
    pub share: f64,
    pub from: Dur,
    pub max: Dur,
}

/// What `"auto"` stalls by: the kernel hosts behind the emulator, measured at its strictest
/// timing (tolerance 0), one kernel Cubic and NewReno mix at 100 Mbit/s (83 k packets) and one
/// kernel BBR flow at 12 Mbit/s (20 k): a packet reached its host late by more than 100 µs
/// 0.54 % (0.85 %) of the time, 200 µs 0.26 % (0.26 %), 500 µs 0.087 % (0.095 %), 1 ms
/// 0.046 % (0.050 %), 2 ms 0.016 % (0.025 %), at most 2.7 ms (4.1 ms): the same tail at both
/// rates, 0.54 % · 100 µs / x. A late ACK earns its sender pacing credit and the packets a
/// stall held arrive together: without stalls the simulator's BBR drained its queue in every
/// PROBE_RTT on the Pantheon's one-flow link, where kernel BBR often did not (README, "Why
/// `[hosts] stalls`").
pub const AUTO_STALLS: Stalls = Stalls { share: 0.0054, from: Dur(100_000), max: Dur(3_000_000) };

impl Stalls {
    /// The extra wait of one packet, ns (zero unless its host stalls).
    #[inline]
    pub fn draw(&self, rng: &mut Rng) -> u64 {
        let u = rng.uniform();
        if u >= self.share {
            return 0;
        }
        // u / share is uniform in [0, 1): from / (u / share) exceeds x with probability from / x.
        let wait = self.from.ns() as f64 * self.share / u;
        (wait as u64).min(self.max.ns())
    }

    fn check(self) -> Result<Stalls, String> {
        if !(0.0..=1.0).contains(&self.share) {
            return Err(format!("share must lie in [0, 1], not {}", self.share));
        }
        if self.from.0 == 0 || self.max.0 < self.from.0 {
            return Err(format!("needs 0 < from <= max, not from = {} and max = {}", self.from, self.max));
        }
        Ok(self)
    }
}

/// `stalls = "auto" | "0" | { share = 0.0054, from = "100us", max = "3ms" }`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum HostStalls {
    /// [`AUTO_STALLS`] wherever the hosts jitter at all: `jitter = "0"`, the phase-locked and
    /// analytic path, has no host randomness of either kind.
    #[default]
    Auto,
    Off,
    Given(Stalls),
}

impl HostStalls {
    pub const ACCEPTED: &'static str =
        "\"auto\", \"0\" (off) or a table { share = 0.0054, from = \"100us\", max = \"3ms\" }";

    /// The stalls in force on hosts whose jitter resolved to `jitter` ns (None: none).
    pub fn resolve(self, jitter: u64) -> Option<Stalls> {
        match self {
            HostStalls::Auto => (jitter > 0).then_some(AUTO_STALLS),
            HostStalls::Off => None,
            HostStalls::Given(s) => (s.share > 0.0).then_some(s),
        }
    }
}

impl Serialize for HostStalls {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            HostStalls::Auto => s.serialize_str("auto"),
            HostStalls::Off => s.serialize_str("0"),
            HostStalls::Given(stalls) => stalls.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for HostStalls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HostStalls;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(HostStalls::ACCEPTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HostStalls, E> {
                match v.trim() {
                    "auto" => Ok(HostStalls::Auto),
                    "0" => Ok(HostStalls::Off),
                    other => Err(E::custom(format!("`{other}` is not {}", HostStalls::ACCEPTED))),
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HostStalls, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HostStalls, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_map<M: de::MapAccess<'de>>(self, m: M) -> Result<HostStalls, M::Error> {
                let stalls = Stalls::deserialize(de::value::MapAccessDeserializer::new(m))?;
                stalls.check().map(HostStalls::Given).map_err(de::Error::custom)
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
    /// The hosts' occasional stalls, on top of the jitter. Default `"auto"`: [`AUTO_STALLS`].
    #[serde(default)]
    pub stalls: HostStalls,
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

    #[test]
    fn stalls_read_auto_off_and_a_table_and_follow_the_jitter() {
        let h: Hosts = toml::from_str("").unwrap();
        assert_eq!(h.stalls, HostStalls::Auto);
        assert_eq!(h.stalls.resolve(20_000), Some(AUTO_STALLS));
        // The phase-locked path (no jitter) has no stalls unless they are given.
        assert_eq!(h.stalls.resolve(0), None);
        let h: Hosts = toml::from_str("stalls = \"0\"").unwrap();
        assert_eq!(h.stalls.resolve(20_000), None);
        let h: Hosts = toml::from_str("stalls = { share = 0.01, from = \"50us\", max = \"1ms\" }").unwrap();
        let given = Stalls { share: 0.01, from: Dur(50_000), max: Dur(1_000_000) };
        assert_eq!(h.stalls, HostStalls::Given(given));
        assert_eq!(h.stalls.resolve(0), Some(given));
        // Written back as read.
        let text = toml::to_string(&h).unwrap();
        assert_eq!(toml::from_str::<Hosts>(&text).unwrap(), h);
        for (bad, says) in [
            ("stalls = \"often\"", "auto"),
            ("stalls = { share = 2.0, from = \"50us\", max = \"1ms\" }", "share must lie in [0, 1]"),
            ("stalls = { share = 0.1, from = \"5ms\", max = \"1ms\" }", "0 < from <= max"),
            ("stalls = { share = 0.1, from = \"5ms\" }", "max"),
            ("stalls = { share = 0.1, from = \"5ms\", max = \"9ms\", tail = 1 }", "tail"),
        ] {
            let e = toml::from_str::<Hosts>(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    /// The draw's tail is the one measured: P(wait > x) = share · from / x between `from` and
    /// `max`, nothing beyond `max`, and no wait at all for the other packets.
    #[test]
    fn a_stall_waits_in_a_tail_that_halves_as_the_wait_doubles() {
        let mut rng = Rng::new(7);
        let n = 2_000_000;
        let waits: Vec<u64> = (0..n).map(|_| AUTO_STALLS.draw(&mut rng)).collect();
        let share_over = |x: u64| waits.iter().filter(|&&w| w > x).count() as f64 / n as f64;
        let stalled = waits.iter().filter(|&&w| w > 0).count() as f64 / n as f64;
        assert!((stalled - 0.0054).abs() < 0.0054 * 0.05, "{stalled}");
        assert!(waits.iter().all(|&w| w == 0 || (100_000..=3_000_000).contains(&w)));
        for x in [200_000u64, 500_000, 1_000_000, 2_000_000] {
            let want = 0.0054 * 100_000.0 / x as f64;
            let got = share_over(x);
            // Binomial standard error at these counts is at most ~4 %; 15 % is > 3 of them.
            assert!((got - want).abs() < want * 0.15, "P(> {x} ns) = {got}, want {want}");
        }
        assert_eq!(share_over(3_000_000), 0.0);
    }
}

//! Named links: `[link] preset = "pantheon:mexico-cellular"` fills the link's keys from a
//! table of published emulators (the Pantheon's six calibrated paths and its pathological
//! buffer and ACK-aggregation links). Keys written in the scenario (or set with `--set`)
//! override the preset's; `trace` replaces the preset's `rate` and `delivery`, and `rate`
//! replaces the preset's `trace`.
//!
//! A preset's trace names a file of the presets' trace folder: `$CCLAB_TRACE_DIR` (the Python
//! package sets it to its own `cclab/data/traces`), else that folder of this source tree. The
//! resolved scenario keeps `preset` and writes every key out, so a run's scenario.toml
//! re-reads to the same link.

use super::{did_you_mean, ScenarioError, ScenarioErrors, Source};
use std::path::PathBuf;

/// The environment variable naming the folder a preset's trace is read from.
pub const TRACE_DIR_ENV: &str = "CCLAB_TRACE_DIR";

/// One value of a preset's link key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PresetValue {
    Str(&'static str),
    Int(i64),
    Float(f64),
    /// A file of the presets' trace folder.
    Trace(&'static str),
}

impl PresetValue {
    /// As written in a scenario (a trace as its file name).
    pub fn display(&self) -> String {
        match self {
            PresetValue::Str(s) | PresetValue::Trace(s) => format!("\"{s}\""),
            PresetValue::Int(i) => i.to_string(),
            PresetValue::Float(f) => f.to_string(),
        }
    }
}

/// A named link.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    /// Where the parameters come from.
    pub source: &'static str,
    /// The `[link]` keys it sets, in the order a scenario would write them. A dotted key
    /// (`token_bucket.rate`) sets a key of a table within `[link]`.
    pub keys: &'static [(&'static str, PresetValue)],
    /// The `[reverse]` keys it sets (the ACK direction's queue and rate).
    pub reverse: &'static [(&'static str, PresetValue)],
}

impl Preset {
    /// Every key it sets as a scenario's path names it (`queue`, `reverse.queue`): the
    /// `[link]` keys bare, as `cclab presets --keys` lists them.
    pub fn all_keys(&self) -> impl Iterator<Item = (String, PresetValue)> + '_ {
        let link = self.keys.iter().map(|(k, v)| (k.to_string(), *v));
        link.chain(self.reverse.iter().map(|(k, v)| (format!("reverse.{k}"), *v)))
    }
}

use PresetValue::{Float, Int, Str, Trace};

const OBSERVATORY: &str = "Pantheon (Yan et al., USENIX ATC 2018) §5, observatory experiments.yml";

/// Every preset. The calibrated paths (§4.1 of the reproduction targets): `mm-delay` is the
/// one-way delay (both directions, as `[reverse] delay` defaults to the link's), loss and
/// queue apply to the data direction. Each Poisson path comes twice: as the five-parameter
/// model (nominal rate, Poisson deliveries, uncongested ACK direction) and as what the
/// Pantheon replayed (`-trace`: the observatory's trace file in both directions). The wired
/// paths' constant-rate traces are their rate.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "pantheon:nepal-wifi",
        summary: "Nepal → AWS India (Wi-Fi, P188): 0.57 Mbit/s Poisson, 28 ms, 14 pkts, 4.77% loss",
        source: OBSERVATORY,
        keys: &[
            ("rate", Str("0.57Mbps")),
            ("delivery", Str("poisson")),
            ("delay", Str("28ms")),
            ("queue", Int(14)),
            ("loss", Float(0.0477)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:nepal-wifi-trace",
        summary: "as pantheon:nepal-wifi, replaying 0.57mbps-poisson.trace in both directions",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("0.57mbps-poisson.trace")),
            ("reverse_trace", Trace("0.57mbps-poisson.trace")),
            ("delay", Str("28ms")),
            ("queue", Int(14)),
            ("loss", Float(0.0477)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:mexico-cellular",
        summary: "Mexico cellular → AWS California (P196): 2.64 Mbit/s Poisson, 88 ms, 130 pkts",
        source: OBSERVATORY,
        keys: &[
            ("rate", Str("2.64Mbps")),
            ("delivery", Str("poisson")),
            ("delay", Str("88ms")),
            ("queue", Int(130)),
            ("loss", Float(0.0)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:mexico-cellular-trace",
        summary: "as pantheon:mexico-cellular, replaying 2.64mbps-poisson.trace in both directions",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("2.64mbps-poisson.trace")),
            ("reverse_trace", Trace("2.64mbps-poisson.trace")),
            ("delay", Str("88ms")),
            ("queue", Int(130)),
            ("loss", Float(0.0)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:colombia-cellular",
        summary: "AWS Brazil → Colombia cellular (P339): 3.04 Mbit/s Poisson, 130 ms, 426 pkts",
        source: OBSERVATORY,
        keys: &[
            ("rate", Str("3.04Mbps")),
            ("delivery", Str("poisson")),
            ("delay", Str("130ms")),
            ("queue", Int(426)),
            ("loss", Float(0.0)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:colombia-cellular-trace",
        summary: "as pantheon:colombia-cellular, replaying 3.04mbps-poisson.trace in both directions",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("3.04mbps-poisson.trace")),
            ("reverse_trace", Trace("3.04mbps-poisson.trace")),
            ("delay", Str("130ms")),
            ("queue", Int(426)),
            ("loss", Float(0.0)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:india-wired",
        summary: "India → AWS India (wired, P251): 100.42 Mbit/s constant, 27 ms, 173 pkts",
        source: OBSERVATORY,
        keys: &[
            ("rate", Str("100.42Mbps")),
            ("delivery", Str("constant")),
            ("delay", Str("27ms")),
            ("queue", Int(173)),
            ("loss", Float(0.0)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:china-wired",
        summary: "AWS Korea → China (wired, P361): 77.72 Mbit/s constant, 51 ms, 94 pkts, 0.06% loss",
        source: OBSERVATORY,
        keys: &[
            ("rate", Str("77.72Mbps")),
            ("delivery", Str("constant")),
            ("delay", Str("51ms")),
            ("queue", Int(94)),
            ("loss", Float(0.0006)),
        ],
        reverse: &[],
    },
    Preset {
        name: "pantheon:mexico-wired",
        summary: "AWS California → Mexico (wired, P353): 114.68 Mbit/s constant, 45 ms, 450 pkts",
        source: OBSERVATORY,
        keys: &[
            ("rate", Str("114.68Mbps")),
            ("delivery", Str("constant")),
            ("delay", Str("45ms")),
            ("queue", Int(450)),
            ("loss", Float(0.0)),
        ],
        reverse: &[],
    },
    // Pathological links (the Pantheon's scenarios 7-18). Token-bucket policers, as the
    // Pantheon built them: mahimahi's `mm-link` with a constant trace of 12, 60 or 108 Mbit/s
    // (a trace of one, five or nine lines "1": that many 1500-byte opportunities each ms) in
    // both directions, each with `droptail packets=1`, under `mm-delay 10` or `50`. The bucket
    // is the trace's millisecond of opportunities (unused ones are lost, as mahimahi's), the
    // depth the 1-packet queue: no burst parameter exists to choose.
    Preset {
        name: "pantheon:policer-12mbps-20ms",
        summary: "token-bucket policer: 12mbps.trace (1 opportunity each ms), 20 ms RTT, 1-packet droptail both ways",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("12mbps.trace")),
            ("reverse_trace", Trace("12mbps.trace")),
            ("delay", Str("10ms")),
            ("queue", Int(1)),
        ],
        reverse: &[("queue", Int(1))],
    },
    Preset {
        name: "pantheon:policer-12mbps-100ms",
        summary: "token-bucket policer: 12mbps.trace (1 opportunity each ms), 100 ms RTT, 1-packet droptail both ways",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("12mbps.trace")),
            ("reverse_trace", Trace("12mbps.trace")),
            ("delay", Str("50ms")),
            ("queue", Int(1)),
        ],
        reverse: &[("queue", Int(1))],
    },
    Preset {
        name: "pantheon:policer-60mbps-20ms",
        summary: "token-bucket policer: 60mbps.trace (5 opportunities each ms), 20 ms RTT, 1-packet droptail both ways",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("60mbps.trace")),
            ("reverse_trace", Trace("60mbps.trace")),
            ("delay", Str("10ms")),
            ("queue", Int(1)),
        ],
        reverse: &[("queue", Int(1))],
    },
    Preset {
        name: "pantheon:policer-60mbps-100ms",
        summary:
            "token-bucket policer: 60mbps.trace (5 opportunities each ms), 100 ms RTT, 1-packet droptail both ways",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("60mbps.trace")),
            ("reverse_trace", Trace("60mbps.trace")),
            ("delay", Str("50ms")),
            ("queue", Int(1)),
        ],
        reverse: &[("queue", Int(1))],
    },
    Preset {
        name: "pantheon:policer-108mbps-20ms",
        summary:
            "token-bucket policer: 108mbps.trace (9 opportunities each ms), 20 ms RTT, 1-packet droptail both ways",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("108mbps.trace")),
            ("reverse_trace", Trace("108mbps.trace")),
            ("delay", Str("10ms")),
            ("queue", Int(1)),
        ],
        reverse: &[("queue", Int(1))],
    },
    Preset {
        name: "pantheon:policer-108mbps-100ms",
        summary:
            "token-bucket policer: 108mbps.trace (9 opportunities each ms), 100 ms RTT, 1-packet droptail both ways",
        source: OBSERVATORY,
        keys: &[
            ("trace", Trace("108mbps.trace")),
            ("reverse_trace", Trace("108mbps.trace")),
            ("delay", Str("50ms")),
            ("queue", Int(1)),
        ],
        reverse: &[("queue", Int(1))],
    },
    // ACK aggregation: a 12 Mbit/s data link at 20 ms RTT whose ACK link delivers only at the
    // trace's opportunities, so ACKs arrive in bursts (mahimahi `mm-link 12mbps.trace <ack
    // trace>`).
    Preset {
        name: "pantheon:ack-aggregation-100ms",
        summary: "12 Mbit/s, 20 ms RTT; the ACK link delivers once every 100 ms (0.12mbps.trace)",
        source: OBSERVATORY,
        keys: &[("rate", Str("12Mbps")), ("delay", Str("10ms")), ("reverse_trace", Trace("0.12mbps.trace"))],
        reverse: &[],
    },
    Preset {
        name: "pantheon:ack-aggregation-10-every-200",
        summary: "12 Mbit/s, 20 ms RTT; the ACK link delivers ten at a time every 200 ms",
        source: OBSERVATORY,
        keys: &[("rate", Str("12Mbps")), ("delay", Str("10ms")), ("reverse_trace", Trace("10-every-200.trace"))],
        reverse: &[],
    },
    // Shallow buffers: 12 Mbit/s at 60 ms RTT (BDP = 90,000 bytes), droptail of a tenth, a
    // third, a half and one BDP in bytes.
    Preset {
        name: "pantheon:buffer-0.1bdp",
        summary: "12 Mbit/s, 60 ms RTT, droptail of 9000 bytes (BDP/10)",
        source: OBSERVATORY,
        keys: &[("rate", Str("12Mbps")), ("delay", Str("30ms")), ("queue", Str("9000B"))],
        reverse: &[],
    },
    Preset {
        name: "pantheon:buffer-0.33bdp",
        summary: "12 Mbit/s, 60 ms RTT, droptail of 30000 bytes (BDP/3)",
        source: OBSERVATORY,
        keys: &[("rate", Str("12Mbps")), ("delay", Str("30ms")), ("queue", Str("30000B"))],
        reverse: &[],
    },
    Preset {
        name: "pantheon:buffer-0.5bdp",
        summary: "12 Mbit/s, 60 ms RTT, droptail of 45000 bytes (BDP/2)",
        source: OBSERVATORY,
        keys: &[("rate", Str("12Mbps")), ("delay", Str("30ms")), ("queue", Str("45000B"))],
        reverse: &[],
    },
    Preset {
        name: "pantheon:buffer-1bdp",
        summary: "12 Mbit/s, 60 ms RTT, droptail of 90000 bytes (1 BDP)",
        source: OBSERVATORY,
        keys: &[("rate", Str("12Mbps")), ("delay", Str("30ms")), ("queue", Str("90000B"))],
        reverse: &[],
    },
];

/// The preset of that name.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// The folder a preset's trace is read from: `$CCLAB_TRACE_DIR`, else this source tree's
/// `python/cclab/data/traces` (what the Rust tests and a development build use).
pub fn trace_dir() -> PathBuf {
    match std::env::var_os(TRACE_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../python/cclab/data/traces")),
    }
}

/// Whether the scenario's own keys take the place of the preset's `preset_key` (a path below
/// `[link]`, or below `[reverse]` when `reverse`).
fn overridden(scenario: &toml::Table, reverse: bool, preset_key: &str) -> bool {
    let table = |name: &str| scenario.get(name).and_then(toml::Value::as_table);
    let has = |name: &str, key: &str| table(name).is_some_and(|t| t.contains_key(key));
    let nested = |name: &str, path: &str| {
        let mut at = table(name);
        let mut parts = path.split('.').peekable();
        while let (Some(t), Some(part)) = (at, parts.next()) {
            if parts.peek().is_none() {
                return t.contains_key(part);
            }
            at = t.get(part).and_then(toml::Value::as_table);
        }
        false
    };
    if reverse {
        return nested("reverse", preset_key)
            // The ACK link's delivery process is either a trace or a rate.
            || (preset_key == "rate" && has("link", "reverse_trace"));
    }
    nested("link", preset_key)
        || match preset_key {
            // A trace fixes both the rate and when deliveries happen; a rate replaces a trace.
            "rate" | "delivery" => has("link", "trace"),
            "trace" => has("link", "rate"),
            "reverse_trace" => has("reverse", "rate"),
            _ => false,
        }
}

/// Puts `value` at the dotted `path` below `table`, making the tables on the way.
fn insert_path(table: &mut toml::Table, path: &str, value: toml::Value) {
    match path.split_once('.') {
        None => {
            table.insert(path.to_string(), value);
        }
        Some((head, rest)) => {
            let slot = table.entry(head.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
            if let toml::Value::Table(t) = slot {
                insert_path(t, rest, value);
            }
        }
    }
}

/// Fills `[link]` (and `[reverse]`) from the link's `preset`, if it names one (see the module
/// comment).
pub fn apply(table: &mut toml::Table, src: &Source) -> Result<(), ScenarioErrors> {
    let Some(toml::Value::Table(link)) = table.get("link") else {
        return Ok(());
    };
    let Some(value) = link.get("preset") else {
        return Ok(());
    };
    let err = |message: String| ScenarioErrors(vec![src.error("link.preset", message)]);
    let Some(name) = value.as_str().map(str::to_string) else {
        return Err(err(format!("expected a preset's name as a string, e.g. \"{}\"", PRESETS[0].name)));
    };
    let name = name.as_str();
    let Some(preset) = preset(name) else {
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        let hint = did_you_mean(name, &names).map(|s| format!("; did you mean `{s}`?")).unwrap_or_else(|| ".".into());
        return Err(err(format!(
            "unknown preset `{name}`{hint} Known presets (`cclab presets`): {}",
            names.join(", ")
        )));
    };
    if table.get("reverse").is_some_and(|r| !r.is_table()) {
        // Left for the type check to report, which names what `[reverse]` accepts.
        return Ok(());
    }
    let mut errors: Vec<ScenarioError> = Vec::new();
    let mut fills: Vec<(bool, &str, toml::Value)> = Vec::new();
    let keys = preset.keys.iter().map(|(k, v)| (false, k, v)).chain(preset.reverse.iter().map(|(k, v)| (true, k, v)));
    for (reverse, key, value) in keys {
        if overridden(table, reverse, key) {
            continue;
        }
        let value = match *value {
            Str(s) => toml::Value::String(s.into()),
            Int(i) => toml::Value::Integer(i),
            Float(f) => toml::Value::Float(f),
            Trace(file) => {
                let dir = trace_dir();
                let path = dir.join(file);
                if !path.is_file() {
                    errors.push(src.error(
                        "link.preset",
                        format!(
                            "preset `{name}` needs the trace {file}, which is not in {} (set {TRACE_DIR_ENV} to \
                             the folder that holds the presets' traces, e.g. the cclab package's data/traces)",
                            dir.display()
                        ),
                    ));
                    continue;
                }
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                toml::Value::String(path.display().to_string())
            }
        };
        fills.push((reverse, key, value));
    }
    for (reverse, key, value) in fills {
        let at = if reverse { "reverse" } else { "link" };
        let slot = table.entry(at).or_insert_with(|| toml::Value::Table(Default::default()));
        if let toml::Value::Table(t) = slot {
            insert_path(t, key, value);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ScenarioErrors(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Delivery, Scenario};
    use crate::units::{Dur, QueueSize, Rate};

    fn parse(link: &str) -> Result<Scenario, ScenarioErrors> {
        Scenario::parse(&format!("[link]\n{link}\n\n[[flows]]\nscheme = \"cubic\"\n"), "t.toml")
    }

    #[test]
    fn a_preset_fills_the_link() {
        let s = parse("preset = \"pantheon:mexico-cellular\"").unwrap();
        assert_eq!(s.link.rate, Some(Rate(2_640_000)));
        assert_eq!(s.link.delivery, Delivery::Poisson);
        assert_eq!(s.link.delay, Dur::from_millis(88));
        assert_eq!(s.link.queue, QueueSize::Packets(130));
        assert_eq!(s.link.loss, 0.0);
        assert_eq!(s.link.preset.as_deref(), Some("pantheon:mexico-cellular"));
    }

    #[test]
    fn written_keys_override_the_preset() {
        let s = parse("preset = \"pantheon:nepal-wifi\"\nqueue = 20\nloss = 0.01").unwrap();
        assert_eq!(s.link.queue, QueueSize::Packets(20));
        assert_eq!(s.link.loss, 0.01);
        assert_eq!(s.link.delay, Dur::from_millis(28)); // the rest from the preset
        assert_eq!(s.link.delivery, Delivery::Poisson);
    }

    #[test]
    fn a_trace_replaces_the_rate_and_a_rate_the_trace() {
        let s = parse("preset = \"pantheon:mexico-cellular\"\ntrace = \"x.trace\"").unwrap();
        assert_eq!(s.link.rate, None);
        assert_eq!(s.link.delivery, Delivery::Constant);
        let s = parse("preset = \"pantheon:mexico-cellular-trace\"\nrate = \"5Mbps\"").unwrap();
        assert_eq!(s.link.trace, None);
        assert_eq!(s.link.rate, Some(Rate(5_000_000)));
        // The reverse trace is the preset's still.
        assert!(s.link.reverse_trace.unwrap().ends_with("2.64mbps-poisson.trace"));
    }

    #[test]
    fn traces_resolve_to_the_shipped_files() {
        let s = parse("preset = \"pantheon:ack-aggregation-10-every-200\"").unwrap();
        let trace = s.link.reverse_trace.unwrap();
        assert!(trace.is_absolute() && trace.is_file(), "{}", trace.display());
        assert_eq!(std::fs::read_to_string(trace).unwrap().lines().count(), 10);
    }

    #[test]
    fn every_preset_resolves_to_a_valid_scenario() {
        for p in PRESETS {
            let s = parse(&format!("preset = \"{}\"", p.name)).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            // Re-reading the resolved scenario gives the same link (the run's scenario.toml).
            let again = Scenario::parse(&s.to_toml(), "again.toml").unwrap();
            assert_eq!(again.link, s.link, "{}", p.name);
        }
    }

    #[test]
    fn the_buffer_presets_are_fractions_of_the_bdp() {
        // 12 Mbit/s × 60 ms = 90,000 bytes.
        for (name, bytes) in [("0.1bdp", 9000), ("0.33bdp", 30_000), ("0.5bdp", 45_000), ("1bdp", 90_000)] {
            let s = parse(&format!("preset = \"pantheon:buffer-{name}\"")).unwrap();
            assert_eq!(s.link.queue, QueueSize::Bytes(bytes));
            let bdp = s.link.rate.unwrap().bytes_per_sec() * 2.0 * s.link.delay.secs();
            assert!((bdp - 90_000.0).abs() < 1.0, "{bdp}");
        }
    }

    #[test]
    fn the_policer_presets_are_the_observatorys_mm_link() {
        // experiments.yml: `mm-delay D mm-link T T --uplink-queue=droptail
        // --uplink-queue-args=packets=1 --downlink-queue=droptail --downlink-queue-args=packets=1`,
        // T the 12/60/108 Mbit/s trace of 1/5/9 lines "1".
        for (rate, lines) in [(12, 1), (60, 5), (108, 9)] {
            for (rtt, delay) in [(20, 10), (100, 50)] {
                let name = format!("pantheon:policer-{rate}mbps-{rtt}ms");
                let s = parse(&format!("preset = \"{name}\"")).unwrap();
                let trace = s.link.trace.clone().unwrap();
                assert_eq!(s.link.reverse_trace.as_ref(), Some(&trace), "{name}: the same trace both ways");
                let text = std::fs::read_to_string(&trace).unwrap();
                assert_eq!(text.lines().collect::<Vec<_>>(), vec!["1"; lines], "{name}");
                // mahimahi's rate of a trace: lines × 12,000 bits per period (1 ms).
                assert_eq!(lines as u64 * 12_000 * 1000, rate * 1_000_000);
                assert_eq!(s.link.delay, Dur::from_millis(delay));
                assert_eq!(s.link.queue, QueueSize::Packets(1));
                assert_eq!(s.reverse.queue, Some(QueueSize::Packets(1)));
                assert_eq!(s.reverse.rate, None);
                let again = Scenario::parse(&s.to_toml(), "again.toml").unwrap();
                assert_eq!(again.reverse, s.reverse, "{name}: the reverse queue is written out");
            }
        }
    }

    #[test]
    fn written_reverse_keys_override_the_preset() {
        let text = "[link]\npreset = \"pantheon:policer-12mbps-20ms\"\n[reverse]\nqueue = 10\ndelay = \"30ms\"\n\n\
                    [[flows]]\nscheme = \"cubic\"\n";
        let s = Scenario::parse(text, "t.toml").unwrap();
        assert_eq!(s.reverse.queue, Some(QueueSize::Packets(10)));
        assert_eq!(s.reverse.delay, Some(Dur::from_millis(30)));
        // A rate for the ACK link replaces the preset's reverse trace (not both: an error).
        let text = "[link]\npreset = \"pantheon:policer-12mbps-20ms\"\n[reverse]\nrate = \"1Mbps\"\n\n\
                    [[flows]]\nscheme = \"cubic\"\n";
        let s = Scenario::parse(text, "t.toml").unwrap();
        assert_eq!(s.link.reverse_trace, None);
        assert_eq!(s.reverse.rate, Some(Rate(1_000_000)));
        assert_eq!(s.reverse.queue, Some(QueueSize::Packets(1)), "the preset's queue still applies");
    }

    #[test]
    fn dotted_keys_fill_nested_tables_unless_written() {
        // How a preset would give `[link.token_bucket]`: a written key of the table wins, the
        // preset fills the others.
        let mut table: toml::Table = toml::from_str("[link.token_bucket]\nburst = \"3000B\"\n").unwrap();
        assert!(overridden(&table, false, "token_bucket.burst"));
        assert!(!overridden(&table, false, "token_bucket.rate"));
        assert!(!overridden(&table, true, "queue"));
        let link = table.get_mut("link").unwrap().as_table_mut().unwrap();
        insert_path(link, "token_bucket.rate", toml::Value::String("12Mbps".into()));
        insert_path(link, "queue", toml::Value::Integer(3));
        let expected: toml::Table =
            toml::from_str("[link]\nqueue = 3\n[link.token_bucket]\nburst = \"3000B\"\nrate = \"12Mbps\"\n").unwrap();
        assert_eq!(table, expected);
    }

    #[test]
    fn an_unknown_preset_suggests_the_closest() {
        let e = parse("preset = \"pantheon:mexico-celular\"").unwrap_err();
        let e = &e.0[0];
        assert_eq!(e.field, "link.preset");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("did you mean `pantheon:mexico-cellular`?"), "{}", e.message);
        assert!(e.message.contains("pantheon:nepal-wifi"), "{}", e.message);
        let e = parse("preset = 3").unwrap_err();
        assert!(e.0[0].message.contains("as a string"), "{}", e.0[0].message);
    }
}

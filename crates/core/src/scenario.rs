//! The scenario file: one bottleneck path and the flows that cross it.
//!
//! Parsing happens in two steps so that every error can name the file, the field, the line and
//! what would be accepted: serde reads the TOML into typed structs (unknown keys rejected, with
//! a "did you mean"), then [`Scenario::check`] validates relations between fields. Scheme names
//! and scheme options are checked by the controller registry (crate `cclab-cc`), which reports
//! through the same [`ScenarioError`] type.

use crate::rng::{stream, Rng};
use crate::units::{Bytes, Dur, QueueSize, Rate};
pub use queues::{CodelParams, FqCodelParams, PieParams, PrioBy, PrioParams, RedParams, SfqParams, TokenBucketParams};

pub mod hosts;
pub mod middlebox;
pub mod workload;
pub use hosts::{HostJitter, Hosts};
pub use middlebox::{BundleController, Middlebox};

pub mod resources;
pub mod transport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
pub use transport::{RecoveryModel, RtoModel, Transport};
pub use workload::Requests;

pub mod presets;

/// Payload bytes per full-sized data packet (TCP MSS with timestamps, as Linux over a 1500 MTU).
pub const MSS: u64 = 1448;
/// Wire size of a full data packet: MSS plus 52 bytes of IP/TCP headers and options.
pub const PACKET_BYTES: u64 = 1500;
/// Wire size of a pure ACK (IP + TCP with timestamp and SACK options).
pub const ACK_BYTES: u64 = 52;
/// The longest scenario `name`: run directories are `<time>-<name>-s<seed>` and their staging
/// siblings add about 60 bytes more, within the 255 bytes a file name may hold.
pub const MAX_NAME_BYTES: usize = 120;
/// The fastest link a scenario may have: 1.6 Tbit/s, IEEE 802.3dj's Ethernet. Anything faster
/// is a typo (a unit off by 1000), and would be simulated a packet every 7.5 ps.
pub const MAX_LINK_RATE: Rate = Rate(1_600_000_000_000);

pub mod queues;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default = "default_duration")]
    pub duration: Dur,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub link: Link,
    #[serde(default)]
    pub reverse: Reverse,
    pub flows: Vec<FlowSpec>,
    /// Bundler's inbox/outbox around the bottleneck (scenario/middlebox.rs); off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middlebox: Option<Middlebox>,
    /// The end hosts' per-packet processing jitter (scenario/hosts.rs); simulator only.
    #[serde(default, skip_serializing_if = "Hosts::is_default")]
    pub hosts: Hosts,
    /// Which of Linux's transport details the simulated transport models (scenario/transport.rs).
    #[serde(default)]
    pub transport: Transport,
    #[serde(default)]
    pub output: Output,
}

fn default_name() -> String {
    "unnamed".into()
}
fn default_duration() -> Dur {
    Dur::from_millis(30_000)
}
fn default_seed() -> u64 {
    1
}

/// The bottleneck in the data direction: the Pantheon's five parameters and room for more.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The named link (`cclab presets`) whose keys fill the ones not written; see `presets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Constant link rate. Exactly one of `rate` and `trace` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// A mahimahi trace file (one delivery opportunity of 1500 bytes per line, in ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<PathBuf>,
    #[serde(default)]
    pub delivery: Delivery,
    /// A mahimahi trace for the ACK direction (mahimahi's `mm-link UP DOWN`): ACKs then queue
    /// (unbounded, drop-tail, as mahimahi's default) for its delivery opportunities. Without
    /// one the ACK direction is uncongested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_trace: Option<PathBuf>,
    /// One-way propagation delay of the data direction.
    #[serde(default)]
    pub delay: Dur,
    /// Variable delay of the data direction: each packet waits `delay` plus a draw uniform in
    /// [0, delay_jitter], but never leaves before the packet ahead of it (no reordering).
    #[serde(default, skip_serializing_if = "Dur::is_zero")]
    pub delay_jitter: Dur,
    #[serde(default = "default_queue")]
    pub queue: QueueSize,
    #[serde(default)]
    pub aqm: Aqm,
    /// The parameters of `aqm`, one optional table per discipline (scenario/queues.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codel: Option<CodelParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fq_codel: Option<FqCodelParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sfq: Option<SfqParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pie: Option<PieParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub red: Option<RedParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<PrioParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_bucket: Option<TokenBucketParams>,
    /// Independent per-packet loss probability applied before the queue, as `mm-loss uplink`.
    #[serde(default)]
    pub loss: f64,
}

fn default_queue() -> QueueSize {
    QueueSize::Infinite
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Delivery opportunities evenly spaced (serialisation at the nominal rate).
    #[default]
    Constant,
    /// Delivery opportunities of one 1500-byte packet as a Poisson process at the nominal rate.
    Poisson,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aqm {
    /// Drop the arriving packet when the queue is full.
    #[default]
    Droptail,
    /// Accept the arriving packet and drop from the head until within the limit.
    Drophead,
    /// CoDel (RFC 8289), parameters in `[link.codel]`.
    Codel,
    /// FQ-CoDel (RFC 8290), `[link.fq_codel]`.
    #[serde(rename = "fq_codel")]
    FqCodel,
    /// Stochastic fair queueing by deficit round robin, `[link.sfq]`.
    Sfq,
    /// PIE (RFC 8033), `[link.pie]`.
    Pie,
    /// RED (Floyd & Jacobson), `[link.red]`.
    Red,
    /// Strict priority between classes of flows, `[link.prio]`.
    Prio,
    /// A token-bucket shaper, `[link.token_bucket]`.
    Tbf,
    /// A token-bucket policer (drops what the bucket refuses), `[link.token_bucket]`.
    Policer,
}

impl Aqm {
    /// The name a scenario writes.
    pub fn name(self) -> &'static str {
        match self {
            Aqm::Droptail => "droptail",
            Aqm::Drophead => "drophead",
            Aqm::Codel => "codel",
            Aqm::FqCodel => "fq_codel",
            Aqm::Sfq => "sfq",
            Aqm::Pie => "pie",
            Aqm::Red => "red",
            Aqm::Prio => "prio",
            Aqm::Tbf => "tbf",
            Aqm::Policer => "policer",
        }
    }
}

/// The ACK direction: a propagation delay (default: the link's), then a bottleneck only if it
/// has a delivery process, `link.reverse_trace` or `rate` (mahimahi's downlink); otherwise
/// uncongested.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reverse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Dur>,
    /// A constant-rate ACK link (instead of `link.reverse_trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// The drop-tail limit of the ACK link's queue, in packets or bytes (mahimahi's
    /// `--downlink-queue=droptail --downlink-queue-args=packets=N`); absent: unbounded, as
    /// mahimahi's default. Counted as the data direction's droptail counts (with the packet in
    /// service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueSize>,
}

impl Reverse {
    /// Whether the ACK direction has a bottleneck (a delivery process of its own).
    pub fn has_link(&self, link: &Link) -> bool {
        self.rate.is_some() || link.reverse_trace.is_some()
    }
}

/// How flows leave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Leave {
    /// Every flow runs until its `stop` (or the end of the scenario).
    #[default]
    End,
    /// Reverse order of arrival, one `every` apart, starting one `every` after the last
    /// arrival (Copa's dynamic-fairness test: flow i of N leaves at start + (2N−1−i)·every).
    Lifo,
}

/// What a flow sends: a backlogged transfer, or requests from an empirical size distribution
/// over persistent connections (scenario/workload.rs). Constant-rate cross traffic is the
/// `fixed` scheme with a `rate`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Traffic {
    #[default]
    Bulk,
    Requests,
}

/// Whether the transport paces a window-based controller that sets no rate of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pacing {
    /// No pacing unless the controller asks for a rate (classic TCP without fq).
    #[default]
    Auto,
    /// Pace window-based controllers at Linux's default ratio × cwnd / srtt.
    On,
    /// Never pace, even if the controller sets a rate.
    Off,
}

/// One `[[flows]]` entry: `count` flows of one scheme.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowSpec {
    pub scheme: String,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default)]
    pub start: Dur,
    /// Gap between the arrivals of consecutive flows of this entry.
    #[serde(default)]
    pub every: Dur,
    /// Each flow's start is later by a draw uniform in [0, start_jitter] (the seed's stream
    /// `START + flow id`, so both engines start it at the same time): applications never start
    /// to the microsecond together, and flows that do can all meet a knife edge (HyStart's
    /// delay threshold, a phase of the link) the same way. Default 0.
    #[serde(default)]
    pub start_jitter: Dur,
    /// Absolute time at which the flows stop sending (default: the end of the scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Dur>,
    #[serde(default)]
    pub leave: Leave,
    /// Added round-trip propagation delay for these flows, split evenly between directions.
    #[serde(default)]
    pub extra_rtt: Dur,
    #[serde(default)]
    pub traffic: Traffic,
    /// The request workload of `traffic = "requests"` (scenario/workload.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<Requests>,
    #[serde(default)]
    pub pacing: Pacing,
    /// The receiver delays ACKs as Linux does (crates/transport's receiver): quick ACKs for the
    /// first 16 packets and after a long silence, then an ACK per two full-sized segments or
    /// when the delayed-ACK timer (ATO, 40 ms and adapting) fires; out-of-order data, hole fills
    /// and duplicates at once (out-of-order data compressed as `[transport] sack_compression`
    /// says), and a duplicate restores the quick ACKs. Default true; false acknowledges every
    /// packet at once.
    #[serde(default = "yes")]
    pub delayed_ack: bool,
    #[serde(default = "default_min_rto")]
    pub min_rto: Dur,
    /// The receiver's advertised window: a cap on bytes in flight (flow control). When absent,
    /// Linux's autotuned ceiling, 62.5 % of `[transport] rmem_max` (20 MiB by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd: Option<Bytes>,
    /// Whether these flows belong to the site's bundle and pass the `[middlebox]` (default);
    /// false: cross traffic that reaches the bottleneck directly.
    #[serde(default = "yes")]
    pub bundle: bool,
    /// Scheme-specific options (e.g. `delta = 0.1` for copa), checked by the scheme registry.
    #[serde(flatten)]
    pub options: BTreeMap<String, toml::Value>,
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn default_min_rto() -> Dur {
    Dur::from_millis(200)
}

/// What the run records besides the always-on metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Width of the time-series bins (Pantheon: 500 ms).
    #[serde(default = "default_bin")]
    pub bin: Dur,
    /// Width of the Jain-index buckets (Copa's script: 100 ms).
    #[serde(default = "default_jain_bucket")]
    pub jain_bucket: Dur,
}

impl Default for Output {
    fn default() -> Self {
        Output { bin: default_bin(), jain_bucket: default_jain_bucket() }
    }
}
fn default_bin() -> Dur {
    Dur::from_millis(500)
}
fn default_jain_bucket() -> Dur {
    Dur::from_millis(100)
}

/// One concrete flow after `count`, `every` and `leave` are expanded.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowInstance {
    pub id: u32,
    /// Index of the `[[flows]]` entry this flow came from.
    pub spec: usize,
    pub start: Dur,
    pub stop: Dur,
}

/// One problem in a scenario, located as precisely as the input allows.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    pub file: String,
    /// Dotted path of the offending field, e.g. `flows[2].start` (empty for syntax errors).
    pub field: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": field `{}`", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// All the problems found in one scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioErrors(pub Vec<ScenarioError>);

impl fmt::Display for ScenarioErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}
impl std::error::Error for ScenarioErrors {}

/// The text of a scenario and where it came from, for locating errors.
pub struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    /// An error at `field`, with the line looked up in the source text when the field is there.
    pub fn error(&self, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: self.file.to_string(),
            field: field.to_string(),
            line: line_of_field(self.text, field),
            message: message.into(),
        }
    }
}

/// The 1-based line where a dotted field path (`flows[1].start`, `link`) is written.
pub fn line_of_field(text: &str, field: &str) -> Option<usize> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut table: &dyn toml_edit::TableLike = doc.as_table();
    let mut span = None;
    for part in field.split('.').filter(|p| !p.is_empty()) {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let (k, child) = table.get_key_value(key)?;
        span = k.span().map(|s| s.start).or(span);
        let next: Option<&dyn toml_edit::TableLike> = match (child, index) {
            (toml_edit::Item::ArrayOfTables(a), Some(i)) => {
                let t = a.get(i)?;
                span = t.span().map(|s| s.start).or(span);
                Some(t as &dyn toml_edit::TableLike)
            }
            (item, None) => item.as_table_like(),
            _ => None,
        };
        match next {
            Some(t) => table = t,
            None => break,
        }
    }
    span.map(|s| line_at(text, s))
}

fn line_at(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The closest of `candidates` to `word`, if it is close enough to be a plausible typo: the
/// one "did you mean" of every crate (scheme names, option keys, wrapper keys). Ties go to the
/// alphabetically first candidate, so a suggestion never depends on the candidates' order.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        // Plain Levenshtein over chars (a swap costs 2), case-insensitive: the threshold below
        // was tuned against it.
        .map(|c| (strsim::levenshtein(&word.to_lowercase(), &c.to_lowercase()), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| c)
}

/// Rewrites serde's "unknown field `x`, expected one of `a`, `b`" into a message with a
/// suggestion and the accepted keys.
fn explain_unknown_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (word, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let mut out = format!("unknown key `{word}`");
    if let Some(s) = did_you_mean(word, &expected) {
        out += &format!("; did you mean `{s}`?");
    }
    if !expected.is_empty() {
        out += &format!(" Accepted keys here: {}", expected.join(", "));
    }
    Some(out)
}

/// Same for unknown enum values ("unknown variant `x`, expected one of ...").
fn explain_unknown_variant(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown variant `")?;
    let (word, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    let mut out = format!("unknown value `{word}`");
    if let Some(s) = did_you_mean(word, &expected) {
        out += &format!("; did you mean `{s}`?");
    }
    out += &format!(" Accepted values: {}", expected.join(", "));
    Some(out)
}

/// The accepted values of an enum, as serde lists them for an unknown one ("`a`, `b`").
fn enum_values<T: serde::de::DeserializeOwned>() -> String {
    let probe = serde_json::from_str::<T>("\"\"").err().map(|e| e.to_string()).unwrap_or_default();
    // serde writes "expected `a` or `b`" for two values and "expected one of `a`, `b`, `c`" for more.
    let values = probe.split_once("expected ").map_or("", |(_, v)| v.split(" at line").next().unwrap_or(v));
    values.trim_start_matches("one of ").replace(" or ", ", ")
}

/// Rewrites serde's "invalid type: X, expected Y" for the enum fields (whose Y, "string only",
/// says nothing of what is accepted) and for unsigned integers (whose Y is a Rust type).
fn explain_invalid_type(field: &str, msg: &str) -> Option<String> {
    let last = field.rsplit('.').next().unwrap_or(field);
    let values = match last {
        "delivery" => enum_values::<Delivery>(),
        "aqm" => enum_values::<Aqm>(),
        "leave" => enum_values::<Leave>(),
        "traffic" => enum_values::<Traffic>(),
        "pacing" => enum_values::<Pacing>(),
        _ => String::new(),
    };
    if !values.is_empty() && msg.starts_with("invalid type") {
        return Some(format!("must be a string, one of {values}"));
    }
    if msg.starts_with("invalid type") && msg.contains("unit variant") {
        // What serde says of a non-string where an enum goes, which names no value.
        return Some("must be a string naming one of its values".to_string());
    }
    if msg.ends_with("expected u64") || msg.ends_with("expected u32") {
        let max = if msg.ends_with("u64") { u64::MAX.to_string() } else { u32::MAX.to_string() };
        let found = msg.split(", expected").next().unwrap_or(msg).trim_start_matches("invalid value: ");
        return Some(format!("must be a whole number from 0 to {max}; found {found}"));
    }
    None
}

/// What errors name as the file when the offending value came from an override (`--set KEY=VALUE`
/// on the command line, keyword arguments in Python) rather than from the scenario's text.
pub const OVERRIDES_FILE: &str = "<overrides>";

/// One step of an override's key path: a table key or a list index.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Splits an override key into steps. A list index is written either way users reach for it:
/// `flows[0].scheme` (as errors print fields) or `flows.0.scheme` (as Python's `flows__0__scheme`).
fn override_steps(key: &str) -> Result<Vec<Step<'_>>, String> {
    let bad =
        |why: &str| Err(format!("cannot read the key `{key}`: {why}; write e.g. `link.rate` or `flows[0].scheme`"));
    let mut steps = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, _)| (n, &part[n.len()..]));
        if name.is_empty() && rest.is_empty() {
            return bad("an empty part");
        }
        if !name.is_empty() {
            match name.parse::<usize>() {
                Ok(i) if name.bytes().all(|b| b.is_ascii_digit()) => steps.push(Step::Index(i)),
                _ => steps.push(Step::Key(name)),
            }
        }
        while !rest.is_empty() {
            let Some((index, tail)) = rest.strip_prefix('[').and_then(|r| r.split_once(']')) else {
                return bad("a `[` without its `]`");
            };
            match index.parse::<usize>() {
                Ok(i) => steps.push(Step::Index(i)),
                Err(_) => return bad(&format!("`[{index}]` is not a list index")),
            }
            rest = tail;
        }
    }
    match steps.first() {
        Some(Step::Key(_)) => Ok(steps),
        _ => bad("it must start with a key name"),
    }
}

/// The field path as errors print it (`flows[0].scheme`), for either spelling of an override.
fn canonical_field(steps: &[Step]) -> String {
    let mut out = String::new();
    for s in steps {
        match s {
            Step::Key(k) if out.is_empty() => out += k,
            Step::Key(k) => out += &format!(".{k}"),
            Step::Index(i) => out += &format!("[{i}]"),
        }
    }
    out
}

/// Merges `overrides` into `base`. Keys may be dotted (`"link.rate"`) and may index a list
/// (`"flows[0].scheme"` or `"flows.0.scheme"`); a table value merges into the table it
/// replaces. An index past a list's end, or into something that is not a list, is an error
/// naming the override.
pub fn merge_overrides(base: &mut toml::Table, overrides: &toml::Table) -> Result<(), ScenarioErrors> {
    let errs: Vec<ScenarioError> = overrides
        .iter()
        .filter_map(|(key, value)| {
            let applied = override_steps(key).and_then(|steps| put_in_table(base, &steps, value, &steps));
            applied.err().map(|message| ScenarioError {
                file: OVERRIDES_FILE.to_string(),
                field: key.clone(),
                line: None,
                message,
            })
        })
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ScenarioErrors(errs))
    }
}

/// Puts `value` at `steps` (whose first step is a key) below `table`; `all` is the whole path,
/// for messages.
fn put_in_table(table: &mut toml::Table, steps: &[Step], value: &toml::Value, all: &[Step]) -> Result<(), String> {
    let (Step::Key(key), rest) = (steps[0], &steps[1..]) else {
        unreachable!("put_in_table is called with a key first")
    };
    let done = &all[..all.len() - rest.len()];
    match rest.first() {
        None => {
            match (table.get_mut(key), value) {
                (Some(toml::Value::Table(existing)), toml::Value::Table(new)) => {
                    for (k, v) in new {
                        put_in_table(existing, &[Step::Key(k)], v, &[Step::Key(k)])?;
                    }
                }
                _ => {
                    table.insert(key.to_string(), value.clone());
                }
            }
            Ok(())
        }
        Some(Step::Index(_)) => match table.get_mut(key) {
            Some(slot) => put_in_value(slot, rest, value, all),
            None => Err(format!("the scenario has no `{}` list to index", canonical_field(done))),
        },
        Some(Step::Key(_)) => {
            let slot = table.entry(key.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
            if !slot.is_table() {
                *slot = toml::Value::Table(Default::default());
            }
            put_in_table(slot.as_table_mut().expect("just made a table"), rest, value, all)
        }
    }
}

/// As [`put_in_table`], below a value reached through an index (`steps[0]` is the index).
fn put_in_value(slot: &mut toml::Value, steps: &[Step], value: &toml::Value, all: &[Step]) -> Result<(), String> {
    let (Step::Index(i), rest) = (steps[0], &steps[1..]) else {
        unreachable!("put_in_value is called with an index first")
    };
    let list_at = canonical_field(&all[..all.len() - steps.len()]);
    let toml::Value::Array(items) = slot else {
        return Err(format!("`{list_at}` is not a list, so `[{i}]` cannot index it"));
    };
    let n = items.len();
    let Some(item) = items.get_mut(i) else {
        let have = match n {
            0 => "no entries".to_string(),
            1 => "1 entry (index 0)".to_string(),
            _ => format!("{n} entries (indices 0 to {})", n - 1),
        };
        return Err(format!("`{list_at}` has {have}; index {i} is out of range"));
    };
    match rest.first() {
        None => {
            match (item, value) {
                (toml::Value::Table(existing), toml::Value::Table(new)) => {
                    for (k, v) in new {
                        put_in_table(existing, &[Step::Key(k)], v, &[Step::Key(k)])?;
                    }
                }
                (item, _) => *item = value.clone(),
            }
            Ok(())
        }
        Some(Step::Index(_)) => put_in_value(item, rest, value, all),
        Some(Step::Key(_)) => match item {
            toml::Value::Table(t) => put_in_table(t, rest, value, all),
            _ => Err(format!(
                "`{}` is not a table, so it has no `{}`",
                canonical_field(&all[..all.len() - rest.len()]),
                canonical_field(rest)
            )),
        },
    }
}

/// Errors about a value an override set name the override (file [`OVERRIDES_FILE`], no line),
/// not the line of the scenario file it replaced.
pub fn attribute_to_overrides(mut errs: ScenarioErrors, overrides: &toml::Table) -> ScenarioErrors {
    let keys: Vec<(String, &String)> =
        overrides.keys().filter_map(|k| override_steps(k).ok().map(|steps| (canonical_field(&steps), k))).collect();
    let covers = |over: &str, field: &str| {
        field.strip_prefix(over).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    };
    for e in &mut errs.0 {
        if e.file == OVERRIDES_FILE {
            continue;
        }
        let closest = keys.iter().filter(|(c, _)| covers(c, &e.field)).max_by_key(|(c, _)| c.len());
        if let Some((canonical, key)) = closest {
            e.file = OVERRIDES_FILE.to_string();
            e.line = None;
            if e.field == *canonical {
                // As the user wrote it, so that the command line can quote its `--set`.
                e.field = (*key).clone();
            }
        }
    }
    errs
}

impl Scenario {
    /// Reads and validates a scenario file. Relative trace paths resolve against its folder.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioErrors> {
        Self::load_with(path, &toml::Table::new())
    }

    /// As [`Scenario::load`], with `overrides` (e.g. `seed`, `link.rate`) merged in first.
    pub fn load_with(path: &Path, overrides: &toml::Table) -> Result<Scenario, ScenarioErrors> {
        let file = path.display().to_string();
        let text = crate::input::read_text(path, crate::input::MAX_SCENARIO_BYTES).map_err(|e| {
            ScenarioErrors(vec![ScenarioError {
                file: file.clone(),
                field: String::new(),
                line: None,
                message: format!("cannot read the scenario file: {e}"),
            }])
        })?;
        let mut s = Self::parse_with(&text, &file, overrides).map_err(|e| attribute_to_overrides(e, overrides))?;
        for trace in [&mut s.link.trace, &mut s.link.reverse_trace].into_iter().flatten() {
            if trace.is_relative() {
                // Absolute, so that the run directory's scenario.toml (and the report reading
                // it from any folder) still finds the trace; a missing file stays as written,
                // for the error that names it.
                let beside = path.parent().unwrap_or(Path::new(".")).join(&*trace);
                if let Ok(absolute) = std::fs::canonicalize(&beside) {
                    *trace = absolute;
                }
            }
        }
        let folder = path.parent().unwrap_or(Path::new("."));
        for r in s.flows.iter_mut().filter_map(|f| f.requests.as_mut()) {
            r.resolve_paths(folder);
        }
        Ok(s)
    }

    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioErrors> {
        Self::parse_with(text, file, &toml::Table::new())
    }

    /// Parses TOML text, applies overrides, and runs the structural checks.
    pub fn parse_with(text: &str, file: &str, overrides: &toml::Table) -> Result<Scenario, ScenarioErrors> {
        let src = Source { file, text };
        let mut table: toml::Table = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_at(text, s.start));
            ScenarioErrors(vec![ScenarioError {
                file: file.to_string(),
                field: String::new(),
                line,
                message: format!("not valid TOML: {}", e.message()),
            }])
        })?;
        merge_overrides(&mut table, overrides)?;
        presets::apply(&mut table, &src)?;
        let scenario: Scenario = serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
            let field = e.path().to_string();
            let field = if field == "." { String::new() } else { field };
            let raw = e.inner().message().to_string();
            let message = explain_unknown_field(&raw)
                .or_else(|| explain_unknown_variant(&raw))
                .or_else(|| explain_invalid_type(&field, &raw))
                .unwrap_or_else(|| missing_field_hint(&raw).unwrap_or(raw));
            ScenarioErrors(vec![src.error(&field, message)])
        })?;
        scenario.check(&src)?;
        Ok(scenario)
    }

    /// Relations between fields that the types alone cannot express.
    pub fn check(&self, src: &Source) -> Result<(), ScenarioErrors> {
        let mut errs = Vec::new();
        if self.name.len() > MAX_NAME_BYTES {
            errs.push(src.error(
                "name",
                format!(
                    "{} bytes long; at most {MAX_NAME_BYTES} (run directories are named after it, and a \
                     file name holds 255 bytes)",
                    self.name.len()
                ),
            ));
        }
        let l = &self.link;
        if let Some(rate) = l.rate {
            if rate > MAX_LINK_RATE {
                errs.push(src.error(
                    "link.rate",
                    format!("{rate} is faster than any link ({MAX_LINK_RATE}, the fastest Ethernet standard)"),
                ));
            }
        }
        match (&l.rate, &l.trace) {
            (None, None) => errs.push(
                src.error("link", "give the bottleneck a `rate` (e.g. \"12Mbps\") or a `trace` file (mahimahi format)"),
            ),
            (Some(_), Some(_)) => errs.push(src.error("link.trace", "give either `rate` or `trace`, not both")),
            (None, Some(_)) if l.delivery == Delivery::Poisson => errs.push(src.error(
                "link.delivery",
                "`delivery = \"poisson\"` needs a `rate`; a trace file already fixes when deliveries happen",
            )),
            _ => {}
        }
        if !(0.0..1.0).contains(&l.loss) {
            errs.push(src.error("link.loss", format!("{} is not a probability in [0, 1)", l.loss)));
        }
        if let QueueSize::Bdp(x) = l.queue {
            if x <= 0.0 || !x.is_finite() {
                errs.push(src.error("link.queue", "a BDP multiple must be positive"));
            }
        }
        queues::check(l, src, &mut errs);
        self.check_reverse(src, &mut errs);
        if let Some(p) = &l.prio {
            let n = if p.by == PrioBy::Entry { self.flows.len() } else { self.flow_instances().len() };
            if p.classes.len() > n {
                errs.push(src.error(
                    "link.prio.classes",
                    format!(
                        "{} classes given for {n} {}",
                        p.classes.len(),
                        if p.by == PrioBy::Entry { "[[flows]] entries" } else { "flows" }
                    ),
                ));
            }
        }
        if self.duration.0 == 0 {
            errs.push(src.error("duration", format!("must be positive; expected {}", Dur::ACCEPTED)));
        }
        if self.flows.is_empty() {
            errs.push(src.error("flows", "a scenario needs at least one [[flows]] entry"));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let at = |k: &str| format!("flows[{i}].{k}");
            if f.count == 0 {
                errs.push(src.error(&at("count"), "must be at least 1"));
            }
            // Saturating: a huge `every` × `count` is an error below, not a wrapped time.
            let last_start = f
                .start
                .0
                .saturating_add(f.every.0.saturating_mul(f.count.max(1) as u64 - 1))
                .saturating_add(f.start_jitter.0);
            if last_start >= self.duration.0 {
                errs.push(src.error(
                    &at("start"),
                    format!(
                        "the last of these flows would start at {}, not before the end of the scenario ({})",
                        Dur(last_start),
                        self.duration
                    ),
                ));
            }
            if let Some(stop) = f.stop {
                if f.leave == Leave::Lifo {
                    errs.push(src.error(&at("stop"), "give either `stop` or `leave = \"lifo\"`, not both"));
                } else if stop.0 <= last_start {
                    errs.push(
                        src.error(&at("stop"), format!("{stop} is not after the last start ({})", Dur(last_start))),
                    );
                }
            }
            if f.leave == Leave::Lifo {
                if f.every.0 == 0 {
                    errs.push(src.error(&at("every"), "`leave = \"lifo\"` needs a gap `every` (e.g. \"1s\")"));
                } else if f.start_jitter.0 >= f.every.0 {
                    errs.push(src.error(
                        &at("start_jitter"),
                        format!("with `leave = \"lifo\"` must be less than `every` ({}), so each flow starts before it leaves", f.every),
                    ));
                }
                let last_leave = f.start.0.saturating_add(f.every.0.saturating_mul(2 * f.count as u64 - 1));
                if last_leave > self.duration.0 {
                    errs.push(src.error(
                        &at("leave"),
                        format!(
                            "the first flow would leave at {}, after the end of the scenario ({})",
                            Dur(last_leave),
                            self.duration
                        ),
                    ));
                }
            }
            if f.min_rto.0 == 0 {
                errs.push(src.error(&at("min_rto"), "must be positive"));
            }
            if f.rwnd.is_some_and(|w| w.0 < MSS) {
                errs.push(src.error(&at("rwnd"), format!("must hold at least one packet ({MSS}B)")));
            }
            workload::check(i, f, src, &mut errs);
        }
        if let Some(m) = &self.middlebox {
            m.check(src, &mut errs);
        }
        if self.transport.rto_max.0 == 0 {
            errs.push(src.error("transport.rto_max", "must be positive (Linux's TCP_RTO_MAX is \"120s\")"));
        }
        if self.transport.default_rwnd() < MSS {
            errs.push(
                src.error(
                    "transport.rmem_max",
                    format!("must hold a window of at least one packet ({MSS}B) at 62.5 %"),
                ),
            );
        }
        if self.output.bin.0 == 0 || self.output.jain_bucket.0 == 0 {
            errs.push(src.error("output", "bin widths must be positive"));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ScenarioErrors(errs))
        }
    }

    /// The ACK direction's bottleneck: one delivery process, and a queue only behind one.
    fn check_reverse(&self, src: &Source, errs: &mut Vec<ScenarioError>) {
        let r = &self.reverse;
        if let Some(rate) = r.rate {
            if self.link.reverse_trace.is_some() {
                errs.push(src.error(
                    "reverse.rate",
                    "give the ACK direction either `reverse.rate` or `link.reverse_trace`, not both",
                ));
            }
            if rate.0 == 0 {
                errs.push(src.error("reverse.rate", "must be positive (absent: the ACK direction is uncongested)"));
            } else if rate > MAX_LINK_RATE {
                errs.push(src.error(
                    "reverse.rate",
                    format!("{rate} is faster than any link ({MAX_LINK_RATE}, the fastest Ethernet standard)"),
                ));
            }
        }
        match r.queue {
            Some(_) if !r.has_link(&self.link) => errs.push(src.error(
                "reverse.queue",
                "the ACK direction has no bottleneck to queue at: give it a `reverse.rate` (e.g. \"12Mbps\") or a \
                 `link.reverse_trace`, or remove `reverse.queue`",
            )),
            Some(QueueSize::Bdp(_)) => errs.push(src.error(
                "reverse.queue",
                "a bandwidth-delay multiple sizes data packets; give the ACK queue in packets (1 or \"1pkts\"), \
                 bytes (\"3000B\") or \"infinite\"",
            )),
            Some(QueueSize::Packets(0)) => errs.push(src.error(
                "reverse.queue",
                "must hold at least one packet, or no ACK could ever pass (absent: unbounded)",
            )),
            Some(QueueSize::Bytes(b)) if b < ACK_BYTES => errs.push(src.error(
                "reverse.queue",
                format!("must hold at least one ACK ({ACK_BYTES}B), or no ACK could ever pass"),
            )),
            _ => {}
        }
    }

    /// Every concrete flow, in id order.
    pub fn flow_instances(&self) -> Vec<FlowInstance> {
        let mut out = Vec::new();
        for (si, f) in self.flows.iter().enumerate() {
            // A request workload is one entry over its connections, all open from `start`.
            let n = match &f.requests {
                Some(r) if f.traffic == Traffic::Requests => r.connections as u64,
                _ => f.count as u64,
            };
            for k in 0..n {
                let id = out.len() as u32;
                let jitter = match f.start_jitter.0 {
                    0 => 0,
                    j => Rng::derive(self.seed, stream::START + id as u64).below(j + 1),
                };
                let start = f.start.0 + k * f.every.0 + jitter;
                let stop = match (f.leave, f.stop) {
                    (Leave::Lifo, _) => f.start.0 + (2 * n - 1 - k) * f.every.0,
                    (_, Some(s)) => s.0,
                    _ => self.duration.0,
                };
                out.push(FlowInstance { id, spec: si, start: Dur(start), stop: Dur(stop.min(self.duration.0)) });
            }
        }
        out
    }

    /// Reverse-path one-way delay.
    pub fn reverse_delay(&self) -> Dur {
        self.reverse.delay.unwrap_or(self.link.delay)
    }

    /// The scenario with every default written out, as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a scenario always serialises")
    }
}

fn missing_field_hint(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("missing field `")?;
    let (word, _) = rest.split_once('`')?;
    let hint = match word {
        "link" => "add a [link] table, e.g. rate = \"12Mbps\", delay = \"10ms\", queue = \"1bdp\"",
        "flows" => "add at least one [[flows]] table, e.g. scheme = \"cubic\"",
        "scheme" => "every [[flows]] entry needs `scheme`; `cclab schemes` lists them",
        _ => return Some(format!("missing required key `{word}`")),
    };
    Some(format!("missing required key `{word}`: {hint}"))
}

#[cfg(test)]
mod message_tests {
    use super::*;

    #[test]
    fn a_non_string_enum_names_its_values() {
        let text = "[link]\nrate = \"12Mbps\"\ndelivery = 1\n[[flows]]\nscheme = \"cubic\"\n";
        let e = Scenario::parse(text, "t.toml").unwrap_err().to_string();
        assert_eq!(e, "t.toml:3: field `link.delivery`: must be a string, one of `constant`, `poisson`");
        let text = "seed = -1\n[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"cubic\"\n";
        let e = Scenario::parse(text, "t.toml").unwrap_err().to_string();
        assert!(e.contains("field `seed`: must be a whole number from 0 to 18446744073709551615"), "{e}");
    }

    #[test]
    fn names_and_sums_past_their_bounds_are_errors() {
        let long = "n".repeat(400);
        let text = format!("name = \"{long}\"\n[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"cubic\"\n");
        let e = Scenario::parse(&text, "t.toml").unwrap_err().to_string();
        assert!(e.starts_with("t.toml:1: field `name`: 400 bytes long; at most 120"), "{e}");
        let text =
            "[link]\nrate = \"1000Tbps\"\n[[flows]]\nscheme = \"cubic\"\ncount = 4294967295\nevery = \"5000000h\"\n";
        let e = Scenario::parse(text, "t.toml").unwrap_err().to_string();
        assert!(e.contains("field `link.rate`: 1000000Gbps is faster than any link"), "{e}");
        assert!(e.contains("field `flows[0].start`"), "{e}");
    }

    #[test]
    fn start_jitter_delays_each_flow_by_its_own_seeded_draw() {
        let text = |seed: u64| {
            format!(
                "seed = {seed}\nduration = \"10s\"\n[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"cubic\"\n\
                 count = 50\nstart = \"1s\"\nevery = \"10ms\"\nstart_jitter = \"5ms\"\n"
            )
        };
        let starts = |seed: u64| -> Vec<u64> {
            Scenario::parse(&text(seed), "t.toml").unwrap().flow_instances().iter().map(|f| f.start.0).collect()
        };
        let (a, b) = (starts(1), starts(2));
        let mut offsets = Vec::new();
        for (k, &t) in a.iter().enumerate() {
            let planned = 1_000_000_000 + k as u64 * 10_000_000;
            assert!((planned..=planned + 5_000_000).contains(&t), "flow {k} starts at {t}");
            offsets.push(t - planned);
        }
        // Spread over the window (50 uniform draws: the chance that all fall in one half is 2^-49),
        // the same for the same seed, another for another seed.
        assert!(offsets.iter().any(|&o| o < 2_500_000) && offsets.iter().any(|&o| o > 2_500_000), "{offsets:?}");
        assert_eq!(a, starts(1));
        assert_ne!(a, b);
        // With `leave = "lifo"`, a flow must start before it leaves.
        let lifo = "seed = 1\nduration = \"10s\"\n[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"cubic\"\n\
                    count = 3\nevery = \"1s\"\nleave = \"lifo\"\nstart_jitter = \"1s\"\n";
        let e = Scenario::parse(lifo, "t.toml").unwrap_err().to_string();
        assert!(e.contains("field `flows[0].start_jitter`: with `leave = \"lifo\"` must be less than `every`"), "{e}");
    }
}

#[cfg(test)]
mod reverse_tests {
    use super::*;

    fn parse(link: &str, reverse: &str) -> Result<Scenario, ScenarioErrors> {
        let text = format!("[link]\nrate = \"12Mbps\"\n{link}\n[reverse]\n{reverse}\n[[flows]]\nscheme = \"cubic\"\n");
        Scenario::parse(&text, "t.toml")
    }

    fn error(link: &str, reverse: &str) -> ScenarioError {
        let e = parse(link, reverse).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        e.0[0].clone()
    }

    #[test]
    fn a_reverse_queue_needs_an_ack_link() {
        let e = error("", "queue = 1");
        assert_eq!((e.field.as_str(), e.line), ("reverse.queue", Some(5)));
        assert!(e.message.contains("no bottleneck to queue at"), "{}", e.message);
        let s = parse("", "rate = \"1Mbps\"\nqueue = 1").unwrap();
        assert_eq!((s.reverse.rate, s.reverse.queue), (Some(Rate(1_000_000)), Some(QueueSize::Packets(1))));
        let s = parse("reverse_trace = \"ack.trace\"", "queue = \"3000B\"").unwrap();
        assert_eq!(s.reverse.queue, Some(QueueSize::Bytes(3000)));
        // Absent keys stay absent in the written scenario, so old run directories re-read alike.
        assert!(!parse("", "").unwrap().to_toml().contains("[reverse]\nqueue"));
    }

    #[test]
    fn bad_reverse_links_are_named() {
        let e = error("reverse_trace = \"ack.trace\"", "rate = \"1Mbps\"");
        assert_eq!(e.field, "reverse.rate");
        assert!(e.message.contains("not both"), "{}", e.message);
        assert!(error("", "rate = \"0bps\"").message.contains("must be positive"));
        let e = error("", "rate = \"1Mbps\"\nqueue = \"1bdp\"");
        assert!(e.message.contains("in packets"), "{}", e.message);
        assert!(error("", "rate = \"1Mbps\"\nqueue = 0").message.contains("at least one packet"));
        let e = error("", "rate = \"1Mbps\"\nqueue = \"40B\"");
        assert!(e.message.contains("at least one ACK (52B)"), "{}", e.message);
        let e = error("", "queeu = 1");
        assert!(e.message.contains("did you mean `queue`?"), "{}", e.message);
    }
}

#[cfg(test)]
mod did_you_mean_tests {
    use super::did_you_mean;

    #[test]
    fn suggests_within_the_threshold_only() {
        let keys = ["duration", "seed", "queue_bytes"];
        assert_eq!(did_you_mean("duraton", &keys), Some("duration"));
        assert_eq!(did_you_mean("SEED", &keys), Some("seed"), "case does not count");
        // A transposition costs two edits (plain Levenshtein), still within 2.
        assert_eq!(did_you_mean("sede", &keys), Some("seed"));
        // Three edits on a short word are too many; long words allow a third of their length.
        assert_eq!(did_you_mean("sxxx", &keys), None);
        assert_eq!(did_you_mean("quuee_btes", &keys), Some("queue_bytes"));
        assert_eq!(did_you_mean("anything", &[]), None);
    }

    #[test]
    fn ties_go_to_the_first_in_alphabetical_order() {
        assert_eq!(did_you_mean("cat", &["cot", "bat"]), Some("bat"));
        assert_eq!(did_you_mean("cat", &["bat", "cot"]), Some("bat"));
    }
}

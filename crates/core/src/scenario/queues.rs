//! The parameters of the queue disciplines a scenario can name in `link.aqm`, each an optional
//! `[link.<name>]` table whose keys default to the discipline's specification. A table that
//! does not belong to the chosen `aqm` is an error (it would silently do nothing).

use super::{Aqm, Link, Source};
use crate::scenario::ScenarioError;
use crate::units::{Bytes, Dur, Rate};
use serde::{Deserialize, Serialize};

/// CoDel (RFC 8289 §4.1–4.2): drop at dequeue once the sojourn time has stayed above `target`
/// for an `interval`, then at intervals shrinking as interval/√count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelParams {
    #[serde(default = "codel_target")]
    pub target: Dur,
    #[serde(default = "codel_interval")]
    pub interval: Dur,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams { target: codel_target(), interval: codel_interval() }
    }
}
fn codel_target() -> Dur {
    Dur::from_millis(5)
}
fn codel_interval() -> Dur {
    Dur::from_millis(100)
}

/// FQ-CoDel (RFC 8290): deficit round robin over per-flow queues, new flows first, each queue
/// under its own CoDel.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelParams {
    #[serde(default = "codel_target")]
    pub target: Dur,
    #[serde(default = "codel_interval")]
    pub interval: Dur,
    /// Bytes a queue may send per round (RFC 8290 §4.1: 1514, one Ethernet frame).
    #[serde(default = "fq_quantum")]
    pub quantum: u64,
    /// Hash flows into this many queues (collisions share one, as in Linux); absent: one queue
    /// per flow, never shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u32>,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams { target: codel_target(), interval: codel_interval(), quantum: fq_quantum(), buckets: None }
    }
}
fn fq_quantum() -> u64 {
    1514
}

/// SFQ: per-flow queues served by deficit round robin; at the limit the longest queue loses
/// its newest packet (Linux `sch_sfq`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SfqParams {
    /// Bytes a queue may send per round (Linux: one MTU-sized frame, 1514).
    #[serde(default = "fq_quantum")]
    pub quantum: u64,
    /// Hash flows into this many queues; absent: one queue per flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u32>,
}

impl Default for SfqParams {
    fn default() -> Self {
        SfqParams { quantum: fq_quantum(), buckets: None }
    }
}

/// PIE (RFC 8033): a drop probability updated every `tupdate` from the queueing delay, applied
/// to arrivals.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieParams {
    /// QDELAY_REF (RFC 8033 §4: 15 ms).
    #[serde(default = "pie_target")]
    pub target: Dur,
    /// T_UPDATE (15 ms).
    #[serde(default = "pie_target")]
    pub tupdate: Dur,
    /// α and β in Hz (0.125 and 1.25).
    #[serde(default = "pie_alpha")]
    pub alpha: f64,
    #[serde(default = "pie_beta")]
    pub beta: f64,
    /// MAX_BURST (150 ms): how long a burst passes undropped after the queue was quiet.
    #[serde(default = "pie_max_burst")]
    pub max_burst: Dur,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: pie_target(),
            tupdate: pie_target(),
            alpha: pie_alpha(),
            beta: pie_beta(),
            max_burst: pie_max_burst(),
        }
    }
}
fn pie_target() -> Dur {
    Dur::from_millis(15)
}
fn pie_alpha() -> f64 {
    0.125
}
fn pie_beta() -> f64 {
    1.25
}
fn pie_max_burst() -> Dur {
    Dur::from_millis(150)
}

/// RED (Floyd & Jacobson 1993), with the "gentle" ramp from `max_p` to 1 between `max_th` and
/// 2·`max_th` (Floyd 2000). Thresholds in packets of the averaged queue.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedParams {
    /// The paper's suggestions: min_th 5 packets, max_th 3·min_th, w_q 0.002, max_p 0.1
    /// (1/max_p = 10 in the 1993 paper's simulations).
    #[serde(default = "red_min_th")]
    pub min_th: f64,
    #[serde(default = "red_max_th")]
    pub max_th: f64,
    #[serde(default = "red_max_p")]
    pub max_p: f64,
    #[serde(default = "red_weight")]
    pub weight: f64,
    #[serde(default = "yes")]
    pub gentle: bool,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams { min_th: red_min_th(), max_th: red_max_th(), max_p: red_max_p(), weight: red_weight(), gentle: true }
    }
}
fn red_min_th() -> f64 {
    5.0
}
fn red_max_th() -> f64 {
    15.0
}
fn red_max_p() -> f64 {
    0.1
}
fn red_weight() -> f64 {
    0.002
}
fn yes() -> bool {
    true
}

/// What strict priority classifies flows by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrioBy {
    /// `classes[i]` is the class of flow `i` (flow ids in the order of expansion).
    #[default]
    Flow,
    /// `classes[i]` is the class of every flow of the `[[flows]]` entry `i`.
    Entry,
}

/// Strict priority: class 0 is served first, class 1 only when class 0 is empty, and so on.
/// Flows past the end of `classes` fall into the last class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrioParams {
    #[serde(default)]
    pub by: PrioBy,
    pub classes: Vec<u8>,
}

/// A token bucket of `rate` and depth `burst`: a shaper (`aqm = "tbf"`) holds packets until
/// tokens allow; a policer (`aqm = "policer"`) drops the packets that find too few tokens.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenBucketParams {
    pub rate: Rate,
    pub burst: Bytes,
}

/// Checks the queue-discipline tables of `link` against its `aqm`.
pub(super) fn check(l: &Link, src: &Source, errs: &mut Vec<ScenarioError>) {
    let name = l.aqm.name();
    let given: [(&str, bool, &[Aqm]); 7] = [
        ("codel", l.codel.is_some(), &[Aqm::Codel]),
        ("fq_codel", l.fq_codel.is_some(), &[Aqm::FqCodel]),
        ("sfq", l.sfq.is_some(), &[Aqm::Sfq]),
        ("pie", l.pie.is_some(), &[Aqm::Pie]),
        ("red", l.red.is_some(), &[Aqm::Red]),
        ("prio", l.prio.is_some(), &[Aqm::Prio]),
        ("token_bucket", l.token_bucket.is_some(), &[Aqm::Tbf, Aqm::Policer]),
    ];
    for (table, present, owners) in given {
        if present && !owners.contains(&l.aqm) {
            let owner: Vec<String> = owners.iter().map(|a| format!("\"{}\"", a.name())).collect();
            errs.push(src.error(
                &format!("link.{table}"),
                format!(
                    "`[link.{table}]` sets the parameters of aqm = {}, but aqm is \"{name}\"; set `aqm` \
                     or remove the table",
                    owner.join(" or ")
                ),
            ));
        }
    }
    if matches!(l.aqm, Aqm::Tbf | Aqm::Policer) && l.token_bucket.is_none() {
        errs.push(src.error(
            "link.aqm",
            format!(
                "aqm = \"{name}\" needs a `[link.token_bucket]` table with `rate` and `burst`, e.g. rate = \
                 \"12Mbps\", burst = \"15KB\""
            ),
        ));
    }
    if let Some(tb) = &l.token_bucket {
        if tb.rate.0 == 0 {
            errs.push(src.error("link.token_bucket.rate", "must be positive"));
        }
        if tb.burst.0 < super::PACKET_BYTES {
            errs.push(src.error(
                "link.token_bucket.burst",
                format!("must hold at least one full packet ({}B), or no packet could ever pass", super::PACKET_BYTES),
            ));
        }
    }
    let positive_dur = |field: &str, d: Dur, errs: &mut Vec<ScenarioError>| {
        if d.0 == 0 {
            errs.push(src.error(field, format!("must be positive; expected {}", Dur::ACCEPTED)));
        }
    };
    if let Some(c) = &l.codel {
        positive_dur("link.codel.target", c.target, errs);
        positive_dur("link.codel.interval", c.interval, errs);
    }
    if let Some(c) = &l.fq_codel {
        positive_dur("link.fq_codel.target", c.target, errs);
        positive_dur("link.fq_codel.interval", c.interval, errs);
        if c.quantum == 0 {
            errs.push(src.error("link.fq_codel.quantum", "must be at least 1 byte"));
        }
        if c.buckets == Some(0) {
            errs.push(src.error("link.fq_codel.buckets", "must be at least 1 (or absent: one queue per flow)"));
        }
    }
    if let Some(s) = &l.sfq {
        if s.quantum == 0 {
            errs.push(src.error("link.sfq.quantum", "must be at least 1 byte"));
        }
        if s.buckets == Some(0) {
            errs.push(src.error("link.sfq.buckets", "must be at least 1 (or absent: one queue per flow)"));
        }
    }
    if let Some(p) = &l.pie {
        positive_dur("link.pie.target", p.target, errs);
        positive_dur("link.pie.tupdate", p.tupdate, errs);
        for (k, v) in [("alpha", p.alpha), ("beta", p.beta)] {
            if !(v.is_finite() && v >= 0.0) {
                errs.push(src.error(&format!("link.pie.{k}"), format!("{v} is not a non-negative rate in Hz")));
            }
        }
    }
    if let Some(r) = &l.red {
        if !(r.min_th.is_finite() && r.min_th >= 0.0 && r.max_th.is_finite() && r.max_th > r.min_th) {
            errs.push(src.error(
                "link.red.max_th",
                format!("thresholds need 0 <= min_th < max_th (packets); got {} and {}", r.min_th, r.max_th),
            ));
        }
        if !(r.max_p > 0.0 && r.max_p <= 1.0) {
            errs.push(src.error("link.red.max_p", format!("{} is not a probability in (0, 1]", r.max_p)));
        }
        if !(r.weight > 0.0 && r.weight <= 1.0) {
            errs.push(src.error("link.red.weight", format!("{} is not an averaging weight in (0, 1]", r.weight)));
        }
    }
    if let Some(p) = &l.prio {
        if p.classes.is_empty() {
            errs.push(
                src.error("link.prio.classes", "give each flow's class, e.g. classes = [0, 1] (0 is served first)"),
            );
        }
    }
    if l.aqm == Aqm::Prio && l.prio.is_none() {
        errs.push(src.error(
            "link.aqm",
            "aqm = \"prio\" needs a `[link.prio]` table: classes = [0, 1] gives flow 0 class 0 (served first) and \
             flow 1 class 1",
        ));
    }
}

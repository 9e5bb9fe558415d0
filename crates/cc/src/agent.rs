//! The receiver-side half of a two-sided scheme (reference §16.3): an agent that watches every
//! data packet as it arrives, may keep its own timer, and hands a small payload to each ACK the
//! receiver sends. The transport delivers it to the sender's controller, as a
//! [`Feedback`](crate::Feedback), through
//! [`CongestionControl::on_feedback`](crate::CongestionControl::on_feedback).
//!
//! Sprout is the scheme that needs it: its receiver infers the link's delivery rate and forecasts
//! deliveries, and the sender sizes its window from the forecast. Schemes without an agent pay
//! nothing for the hook: the receiver holds `None` and ACKs carry no payload.

use crate::registry;
use crate::types::{Time, FEEDBACK_BYTES};
use cclab_core::scenario::FlowSpec;

/// What the receiver tells its agent about one arriving data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceivedPacket {
    /// The transmission's packet id (fresh for every transmission, increasing in send order).
    pub id: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// When the sender sent it (the sender's timestamp, echoed as one-way delay by the receiver).
    pub sent: Time,
}

/// A receiver-side agent. Pure like a controller: time is handed in, nothing is read.
pub trait ReceiverAgent: Send + std::fmt::Debug {
    /// The scheme name, as `cclab schemes` lists it.
    fn name(&self) -> &'static str;

    /// A data packet arrived at `now`.
    fn on_data(&mut self, now: Time, pkt: &ReceivedPacket);

    /// The next time the agent wants `on_timer`, if any.
    fn next_timer(&self) -> Option<Time> {
        None
    }

    /// The agent's timer fired; `true` asks the receiver to send an ACK now, even though no data
    /// arrived, so that fresh feedback reaches the sender (Sprout's heartbeat).
    fn on_timer(&mut self, _now: Time) -> bool {
        false
    }

    /// Called for every ACK the receiver sends, just before it leaves; the payload rides on it.
    fn feedback(&mut self, now: Time) -> Option<[u8; FEEDBACK_BYTES]>;
}

/// Builds a scheme's receiver agent from the flow entry's validated options and the MSS.
pub type AgentBuilder = fn(&registry::Options, u64) -> Box<dyn ReceiverAgent>;

/// The schemes that have a receiver agent, by name. Adding one is one line here.
static AGENTS: &[(&str, AgentBuilder)] = &[("sprout", crate::sprout::build_agent)];

/// Whether the named scheme has a receiver agent.
pub fn has_agent(scheme: &str) -> bool {
    AGENTS.iter().any(|(name, _)| *name == scheme)
}

/// Builds the receiver agent of a flow entry, or `None` when its scheme has none (the common
/// case). The entry's options are validated as for its controller.
pub fn build(spec: &FlowSpec, mss: u64) -> Result<Option<Box<dyn ReceiverAgent>>, String> {
    let Some(&(_, make)) = AGENTS.iter().find(|(name, _)| *name == spec.scheme) else {
        return Ok(None);
    };
    let opts = registry::options(spec)?;
    Ok(Some(make(&opts, mss)))
}

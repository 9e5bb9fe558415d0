//! The data that flows between a transport and a congestion controller.
//!
//! Times are integer nanoseconds since the start of the run ([`Time`]); sizes are bytes. The
//! controller never reads a clock or a global RNG: `now` and [`Rng`] are handed in, so the same
//! code is deterministic in the simulator and real-time in the emulator.

pub use cclab_core::rng::Rng;
pub use cclab_core::time::Time;
/// Opaque per-packet value returned by `on_packet_sent` and handed back on ack or loss.
pub type CcTag = u64;

/// Loss-recovery state of the connection, as Linux's `tcp_ca_state` (BBR, Vegas and PRR
/// care about the transitions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CaState {
    #[default]
    Open,
    /// Fast recovery after a loss detected by packet or time threshold.
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

impl CaState {
    /// Linux's name for this state (`cclab_core::cctrace::CA_STATES`), as traces show it.
    pub fn linux_name(self) -> &'static str {
        use cclab_core::cctrace::CA_STATES;
        match self {
            CaState::Open => CA_STATES[0],
            CaState::Recovery => CA_STATES[3],
            CaState::Loss => CA_STATES[4],
        }
    }
}

/// What the transport knows about a packet as it leaves.
#[derive(Clone, Copy, Debug, Default)]
pub struct SentPacket {
    /// Unique per transmission (retransmissions get a fresh id).
    pub id: u64,
    pub bytes: u64,
    pub send_time: Time,
    pub is_retransmission: bool,
    /// Bytes in flight including this packet.
    pub in_flight: u64,
    /// Whether the sender was application-limited when this packet was sent.
    pub app_limited: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct AckedPacket {
    pub id: u64,
    pub bytes: u64,
    pub send_time: Time,
    pub tag: CcTag,
    /// RTT sample of this packet (now − send time).
    pub rtt: Time,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossCause {
    /// Three or more later packets were acknowledged (dupthresh / SACK).
    PacketThreshold,
    /// Not acknowledged 9/8 RTT after a later packet was (RACK).
    TimeThreshold,
    /// The retransmission timer expired.
    Rto,
}

#[derive(Clone, Copy, Debug)]
pub struct LostPacket {
    pub id: u64,
    pub bytes: u64,
    pub send_time: Time,
    pub tag: CcTag,
    pub cause: LossCause,
}

/// RTT estimator state (RFC 6298), all in nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct RttStats {
    /// Most recent sample; 0 before the first.
    pub latest: Time,
    pub smoothed: Time,
    pub rttvar: Time,
    /// Minimum over the connection's lifetime.
    pub min: Time,
    /// Whether any sample has been taken yet.
    pub has_sample: bool,
}

/// A delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation), present only when valid.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// Bytes per second.
    pub delivery_rate: f64,
    pub interval: Time,
    /// Bytes delivered over `interval`.
    pub delivered: u64,
    /// `C.delivered` when the newest acked packet was sent.
    pub prior_delivered: u64,
    pub prior_time: Time,
    /// Bytes in flight when the newest acked packet was sent (including it).
    pub tx_in_flight: u64,
    /// Bytes declared lost between that packet's send and now.
    pub lost: u64,
    pub is_app_limited: bool,
    /// RTT of the newest acked packet.
    pub rtt: Time,
}

/// Everything a controller learns from one ACK.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent<'a> {
    pub now: Time,
    pub acked: &'a [AckedPacket],
    /// Packets declared lost while processing this ACK.
    pub lost: &'a [LostPacket],
    pub newly_acked_bytes: u64,
    pub newly_lost_bytes: u64,
    pub prior_in_flight: u64,
    pub in_flight: u64,
    pub rtt: &'a RttStats,
    pub rate: Option<RateSample>,
    /// Total bytes delivered so far (`C.delivered`).
    pub delivered: u64,
    /// The packet-timed round counter (§0.5) and whether this ACK started a new round.
    pub round: u64,
    pub round_start: bool,
    pub ca_state: CaState,
    /// Whether the sender was application-limited (not cwnd-limited) recently.
    pub app_limited: bool,
    /// One-way delay of the newest acked packet as echoed by the receiver (LEDBAT).
    pub one_way_delay: Option<Time>,
}

/// A loss (or ECN) episode, reported at most once per recovery epoch.
#[derive(Clone, Copy, Debug)]
pub struct CongestionEvent {
    pub now: Time,
    pub largest_lost_send_time: Time,
    pub lost_bytes: u64,
    pub in_flight: u64,
    /// Bytes in flight when the episode was detected, before the losses were removed
    /// (RFC 5681's FlightSize).
    pub prior_in_flight: u64,
}

/// Bytes of receiver feedback an ACK carries. Six is what fits in the ACK frame's alignment
/// padding: a larger payload grows every packet the simulator moves, and a packet over 128 bytes
/// is copied through `memcpy` rather than inline (measured: 24 more bytes cost the foundation's
/// benchmark ~5% more instructions). Sprout's forecast fits: eight 6-bit per-tick counts.
pub const FEEDBACK_BYTES: usize = 6;

/// Receiver-generated feedback, as a controller receives it (Sprout's forecast, custom signals).
/// The payload's layout is agreed between the scheme's receiver agent and its controller, just
/// as [`CcTag`] is opaque to the transport; the transport adds what the ACK itself says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Feedback {
    pub payload: [u8; FEEDBACK_BYTES],
    /// The highest packet id the receiver had received when it sent the ACK: with FIFO paths,
    /// every packet below it was received or lost.
    pub largest_received: u64,
}

/// A controller's state for traces and tests: a mode name and named numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CcSnapshot {
    pub mode: &'static str,
    pub vars: Vec<(&'static str, f64)>,
}

/// What a controller may use besides the event: the MSS and its own random stream.
pub struct CcContext<'a> {
    pub mss: u64,
    pub rng: &'a mut Rng,
}

//! A TCP-like reliable transport as a pure state machine (no sockets, no clock: `now` is passed
//! in), so the simulator and the emulator's UDP transport run exactly the same code.
//!
//! Every transmission carries a fresh packet id (QUIC-style), which removes retransmission
//! ambiguity from RTT, loss and delivery-rate sampling. The receiver acknowledges with the
//! in-order stream offset (TCP's cumulative ACK) plus the three most recent ranges of packet
//! ids it holds (SACK blocks). The sender owns everything a controller should not: RTT
//! estimation and the RTO (Linux's tcp_rtt_estimator by default, RFC 6298 on request), loss
//! detection by packet threshold (dupthresh 3) and time threshold (RACK's 9/8·RTT), the
//! retransmission timer with backoff and spurious-timeout undo (F-RTO), recovery episodes
//! (Linux's or RFC 9002's, `recovery`), the delivery-rate sampler, the packet-timed round
//! counter, cwnd-limited tracking and pacing, Linux's PRR during fast recovery (`prr`) and its
//! tail-loss probes; and the opening handshake, whose SYN/SYN-ACK sample seeds the RTT state (`handshake`). The
//! receiver is Linux's: delayed ACKs with quick-ACK mode and SACK compression (`sack`).
//!
//! Must not import: the engines (`cclab-engine`, `cclab-sim`, `cclab-emu`) or the bindings;
//! only `cclab-core` and `cclab-cc`.

pub mod gro;
mod handshake;
mod prr;
mod push;
mod rcv_space;
mod receiver;
mod rtt;
mod sack;
mod sender;

pub use handshake::SYN_BYTES;
pub use receiver::{Receiver, ReceiverConfig};
pub use rtt::RttEstimator;
pub use sender::{Sender, SenderConfig, SenderStats};

use cclab_cc::{Time, FEEDBACK_BYTES};

/// Bytes of IP/TCP headers on every data packet; MSS + this = 1500 on the wire.
pub const DATA_HEADER: u64 = 52;

/// A data packet as the transport sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataPacket {
    pub id: u64,
    /// Stream offset of the payload.
    pub offset: u64,
    pub len: u32,
    pub sent: Time,
    pub retransmission: bool,
    /// TCP's PSH flag: the segment ends an application write (`[transport] push_ack`).
    pub push: bool,
}

impl DataPacket {
    pub fn wire_bytes(&self) -> u64 {
        self.len as u64 + DATA_HEADER
    }
}

/// A range of packet ids `[start, end)`.
pub type IdRange = (u64, u64);

/// How many packet-id ranges an ACK carries (TCP carries 3–4 SACK blocks).
pub const ACK_RANGES: usize = 3;

/// An acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AckFrame {
    /// Most recent ranges of received packet ids, newest first; `ranges[0]` holds `largest`.
    pub ranges: [IdRange; ACK_RANGES],
    pub n_ranges: u8,
    pub largest: u64,
    /// Stream bytes received in order (TCP's cumulative ACK).
    pub stream_cum: u64,
    /// One-way delay of the newest packet, measured by the receiver (LEDBAT-style echo).
    pub one_way_delay: Time,
    /// The receiver agent's feedback (Sprout's forecast), for schemes that have one; empty
    /// otherwise. It lives in what was the frame's padding.
    pub feedback: FeedbackSlot,
}

/// An ACK frame's optional feedback payload, as plain bytes (a presence byte and the payload).
///
/// Not an `Option`: the simulator's packet is an enum over data and ACK frames, and an
/// `Option`'s spare tag values would let that enum shrink from 128 to 120 bytes, which
/// (measured) slowed the whole engine by ~7%. Plain bytes keep every packet as it was.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeedbackSlot {
    present: u8,
    payload: [u8; FEEDBACK_BYTES],
}

impl FeedbackSlot {
    pub const NONE: FeedbackSlot = FeedbackSlot { present: 0, payload: [0; FEEDBACK_BYTES] };

    pub fn new(payload: Option<[u8; FEEDBACK_BYTES]>) -> FeedbackSlot {
        match payload {
            Some(payload) => FeedbackSlot { present: 1, payload },
            None => FeedbackSlot::NONE,
        }
    }

    pub fn get(&self) -> Option<[u8; FEEDBACK_BYTES]> {
        (self.present != 0).then_some(self.payload)
    }
}

// The feedback must not grow the frame (the simulator copies every packet several times, and a
// packet holds a frame), nor change the packet enum's layout (see `FeedbackSlot`).
const _: () = assert!(std::mem::size_of::<AckFrame>() == 80);

impl AckFrame {
    pub fn ranges(&self) -> &[IdRange] {
        &self.ranges[..self.n_ranges as usize]
    }
}

//! The forecast's wire format on the ACK (shared by the receiver agent and the sender).

use super::*;

/// Bits per tick in the feedback payload: eight ticks × 6 bits = the 6 bytes an ACK carries.
pub(super) const INCREMENT_BITS: u32 = 6;

/// The forecast as the ACK carries it: the eight per-tick increments of the cumulative counts,
/// 6 bits each (a tick's 5th-percentile deliveries stay below `MAX_ARRIVALS_PER_TICK` = 30; a
/// larger increment would be saturated at 63). The count of packets received or lost is not in
/// the payload: it is the ACK's own largest received id + 1 (see [`Feedback`]).
pub(super) fn encode(counts: &[u8; NUM_TICKS]) -> [u8; FEEDBACK_BYTES] {
    let max = (1u64 << INCREMENT_BITS) - 1;
    let mut packed = 0u64;
    let mut prev = 0u8;
    for (k, &c) in counts.iter().enumerate() {
        let inc = (c.saturating_sub(prev) as u64).min(max);
        packed |= inc << (INCREMENT_BITS * k as u32);
        prev = c;
    }
    let bytes = packed.to_le_bytes();
    let mut out = [0u8; FEEDBACK_BYTES];
    out.copy_from_slice(&bytes[..FEEDBACK_BYTES]);
    out
}

pub(super) fn decode(payload: &[u8; FEEDBACK_BYTES]) -> [u8; NUM_TICKS] {
    let mut bytes = [0u8; 8];
    bytes[..FEEDBACK_BYTES].copy_from_slice(payload);
    let packed = u64::from_le_bytes(bytes);
    let mask = (1u64 << INCREMENT_BITS) - 1;
    let mut counts = [0u8; NUM_TICKS];
    let mut total = 0u8;
    for (k, c) in counts.iter_mut().enumerate() {
        total = total.saturating_add(((packed >> (INCREMENT_BITS * k as u32)) & mask) as u8);
        *c = total;
    }
    counts
}

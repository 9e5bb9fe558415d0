//! Per-flow queues that give back what their peak took.
//!
//! A `VecDeque` keeps the capacity of its fullest moment. A flow's in-flight packets (its
//! sender's record of them, its data and ACK delay lines) peak in slow start or in a deep
//! queue's worst moment, and each flow peaks at a different time, so at thousands of flows the
//! sum of the peaks grows with simulated time long after what is really in flight has stopped
//! growing (CoreScale, 5000 flows: 475 MB of deque capacity after 10 simulated seconds for
//! ~30 MB of live entries). The simulator sweeps its flows' deques every million events or so
//! (`cclab_sim`'s `TRIM_EVERY`) and trims those three quarters empty to twice what they hold:
//! not to fit, so that one which fills again soon does not regrow at once.

use std::collections::VecDeque;

/// Capacity below which a deque is never trimmed: small queues are not worth a reallocation.
pub const MIN_CAPACITY: usize = 64;

/// Shrinks `q` to twice its length when it uses less than a quarter of its capacity.
#[inline]
pub fn trim<T>(q: &mut VecDeque<T>) {
    if q.capacity() > MIN_CAPACITY && q.len() * 4 < q.capacity() {
        shrink(q);
    }
}

#[cold]
#[inline(never)]
fn shrink<T>(q: &mut VecDeque<T>) {
    q.shrink_to((q.len() * 2).max(MIN_CAPACITY));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drained_peak_is_given_back_and_a_busy_deque_is_left_alone() {
        let mut q: VecDeque<u64> = (0..10_000).collect();
        let peak = q.capacity();
        // Still a quarter full or more: untouched.
        while (q.len() - 1) * 4 >= peak {
            q.pop_front();
            trim(&mut q);
        }
        assert_eq!(q.capacity(), peak);
        // Below a quarter: halved or more, and never below twice its length afterwards.
        q.pop_front();
        trim(&mut q);
        assert!(q.capacity() <= peak / 2 && q.capacity() >= q.len() * 2, "{} of {peak}", q.capacity());
        // Drained to a few: back near the floor, order kept.
        let keep: Vec<u64> = q.iter().rev().take(3).rev().copied().collect();
        while q.len() > 3 {
            q.pop_front();
            trim(&mut q);
        }
        assert!(q.capacity() < 4 * MIN_CAPACITY, "{}", q.capacity());
        assert_eq!(q.iter().copied().collect::<Vec<_>>(), keep);
    }

    #[test]
    fn small_deques_are_never_trimmed() {
        let mut q: VecDeque<u8> = VecDeque::with_capacity(MIN_CAPACITY);
        let cap = q.capacity();
        q.push_back(1);
        trim(&mut q);
        assert_eq!(q.capacity(), cap);
    }
}

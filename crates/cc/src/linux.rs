//! Window arithmetic shared by the controllers that follow Linux's packet-counted code.

/// `sysctl_tcp_min_tso_segs` (net.ipv4.tcp_min_tso_segs, default 2): the fewest segments of a
/// TSO/GSO burst for a module without its own `min_tso_segs` (all but BBR).
pub(crate) const MIN_TSO_SEGS: u64 = 2;

/// Linux `tcp_cong_avoid_ai`: grows `cwnd` (packets) by one per `w` acked packets, keeping the
/// remainder in `cwnd_cnt`. Credit accumulated under a larger `w` is applied gently: one
/// packet, then the count restarts.
pub(crate) fn cong_avoid_ai(cwnd: &mut u64, cwnd_cnt: &mut u64, w: u64, acked: u64) {
    let w = w.max(1);
    if *cwnd_cnt >= w {
        *cwnd_cnt = 0;
        *cwnd += 1;
    }
    *cwnd_cnt += acked;
    if *cwnd_cnt >= w {
        let delta = *cwnd_cnt / w;
        *cwnd_cnt -= delta * w;
        *cwnd += delta;
    }
}

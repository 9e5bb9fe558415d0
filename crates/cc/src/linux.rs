//! Window arithmetic shared by the controllers that follow Linux's packet-counted code.

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

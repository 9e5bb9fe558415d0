//! The `[transport]` section: which of Linux's transport details the sans-IO sender
//! (crates/transport) models, for every flow the simulator runs and every cclab-over-UDP flow of
//! the emulator. Each default is what Linux does; the alternatives are the textbook (RFC) forms,
//! kept to measure what a detail changes. Kernel flows in the emulator (`kernel:<cc>`) ignore
//! this section: they are Linux.
//!
//! Sender-side keys: `handshake`, `rto`, `rto_max`, `undo`, `tso`, `pacing_credit`, `prr`,
//! `tlp`, `rack`, `recovery`, `rmem_max`. (The receiver's keys live in their own group:
//! `push_ack`, `read_interval`, `sack_compression`, `window_growth`, `gro`.)

use crate::units::{Bytes, Dur};
use serde::{Deserialize, Serialize};

/// How the retransmission timeout is computed from the RTT estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoModel {
    /// Linux (net/ipv4/tcp_input.c, tcp_rtt_estimator and tcp_set_rto): rto = srtt +
    /// max(mdev, rto_min), where mdev is 4·rttvar with Linux's damped update for falling
    /// RTTs and is held at its largest value over the last window of data (mdev_max_us).
    /// Each ACK's sample is the time since the oldest segment it newly acknowledges was sent
    /// (seq_rtt_us from first_ackt in tcp_clean_rtx_queue).
    #[default]
    Linux,
    /// RFC 6298 §2: rto = max(srtt + max(G, 4·rttvar), rto_min), with G = 1 ms, smoothing
    /// the newest newly acknowledged segment's RTT.
    Rfc6298,
}

/// How a loss-recovery episode (one congestion event) begins and ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryModel {
    /// Linux (net/ipv4/tcp_input.c, tcp_enter_recovery and tcp_fastretrans_alert): an episode
    /// records snd_nxt (tp->high_seq) and lasts until the cumulative ACK reaches it; no loss
    /// starts another while it lasts, but one that ends with a segment declared lost during it
    /// still unacknowledged (tcp_time_to_recover's lost_out) begins the next at once.
    #[default]
    Linux,
    /// RFC 9002 §7.3.2: an episode ends when a packet sent after it began is acknowledged; a
    /// loss of such a packet starts the next.
    Rfc9002,
}

/// Scenario-wide transport options (`[transport]`); every key is optional.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transport {
    // --- sender ---
    /// Open each connection as Linux's connect() does: a SYN at the flow's start and data only
    /// once the SYN-ACK returns, one handshake later. Both are real 60-byte packets through the
    /// path's queues, and their RTT (the timestamp echo of the SYN answered) is the connection's
    /// first sample: it sets srtt, the RTO and the min-RTT before the controller's init
    /// (tcp_ack_update_rtt from tcp_rcv_synsent_state_process, then tcp_init_transfer; BBR's
    /// bbr_init reads tcp_min_rtt). A lost SYN is sent again after 1 s, doubling (tcp_syn_retries
    /// 6). Default true; false starts data at the flow's start with no sample (first RTO 1 s).
    #[serde(default = "default_true")]
    pub handshake: bool,
    /// The RTO formula: "linux" (default) or "rfc6298".
    #[serde(default)]
    pub rto: RtoModel,
    /// The ceiling of the backed-off RTO: Linux's TCP_RTO_MAX, 120 s (include/net/tcp.h).
    #[serde(default = "default_rto_max")]
    pub rto_max: Dur,
    /// Detect spurious retransmission timeouts and undo their window reduction (Linux's F-RTO,
    /// RFC 5682, with tcp_try_undo_loss in net/ipv4/tcp_input.c): when an ACK after a timeout
    /// acknowledges a transmission sent before it, the timeout was spurious, so the packets it
    /// marked lost are in flight again and the controller restores its window (its undo_cwnd).
    /// Default true, as Linux's net.ipv4.tcp_frto = 2.
    #[serde(default = "default_true")]
    pub undo: bool,
    /// Send as Linux's TSO/GSO does: a paced flow whose controller models a Linux TCP module
    /// (cubic, newreno, vegas, bbr) leaves in bursts, one skb of tcp_tso_autosize's segments
    /// (about 1 ms of its pacing rate, at least the module's min_tso_segs, more when min_rtt is
    /// under ~9 ms; net/ipv4/tcp_output.c) back to back at each pacing release, then waits that
    /// burst's time at the rate. Default true; false paces every packet on its own, as the
    /// other schemes always are (their implementations are not kernel TCP).
    #[serde(default = "default_true")]
    pub tso: bool,
    /// Pace as Linux's TCP does (tcp_update_skb_after_send, net/ipv4/tcp_output.c) for a
    /// controller that models a Linux TCP module: the first 10 segments leave unpaced, and an
    /// skb sent later than the pacer allowed (its ACK came late) has the wait after it
    /// shortened by that lateness, at most by half ("take into account OS jitter"). An
    /// ACK-clocked flow then keeps the pace of its ACKs where a strict pacer set a little below
    /// the link's rate would fall behind them (BBR's ProbeRTT: pairs every 2.00 ms on a
    /// 12 Mbit/s link where the strict pacer's are 2.02 ms apart, so its queue drains and
    /// min-RTT reads low). Default true; false: every packet waits its size at the rate.
    #[serde(default = "default_true")]
    pub pacing_credit: bool,
    /// Proportional Rate Reduction (RFC 6937, PRR-SSRB) during fast recovery, as Linux's
    /// tcp_cwnd_reduction (net/ipv4/tcp_input.c) runs it for every module without its own
    /// cong_control (cubic, newreno, vegas; not bbr): each ACK releases
    /// ⌈delivered·ssthresh/prior_cwnd⌉ − sent packets while the flight is above the reduced
    /// window, then grows it back toward it by at most one more than was delivered. Default
    /// true; false leaves the controller's cut alone (silence until the flight drains below
    /// it, then one packet per packet acked, or a burst up to it).
    #[serde(default = "default_true")]
    pub prr: bool,
    /// Tail-loss probes (RFC 8985 §7.2 as Linux's tcp_schedule_loss_probe and
    /// tcp_send_loss_probe, net/ipv4/tcp_output.c): in the Open state with data in flight, no
    /// ACK for 2·srtt (+ min_rto when one packet is out, + 2 ms otherwise; never past the RTO)
    /// sends one packet outside the window (new data if any, else the last segment again), so
    /// a lost tail is repaired by fast recovery instead of a timeout. Default true
    /// (net.ipv4.tcp_early_retrans = 3).
    #[serde(default = "default_true")]
    pub tlp: bool,
    /// Loss detection as Linux's RACK (RFC 8985 as net/ipv4/tcp_recovery.c runs it, with
    /// net.ipv4.tcp_recovery = 1): a packet sent before the most recently sent one that was
    /// delivered is lost once that one's RTT plus a reordering window has passed since it
    /// left; the window is min_rtt/4 (at most srtt), and none in recovery or once three
    /// packets are SACKed (tcp_rack_reo_wnd), and the timer waits for the last packet pending
    /// plus 2 ms. For schemes that model a Linux TCP module (cubic, newreno, vegas, bbr).
    /// Default true; false — and always for the other schemes, whose implementations are not
    /// kernel TCP — detects losses as RFC 9002 §6.1 does (three later packets acknowledged, or
    /// 9/8·max(srtt, latest RTT) since it was sent), as QUIC stacks do.
    #[serde(default = "default_true")]
    pub rack: bool,
    /// Recovery episodes, for the same schemes as `rack`: "linux" (default) or "rfc9002" (what
    /// the other schemes always use). Each episode is one congestion event, one cut of the
    /// window; Linux's last until every byte sent before them is acknowledged, RFC 9002's
    /// until any packet sent after them is, so under persistent loss Linux cuts less often and
    /// BBR leaves its packet conservation less often.
    #[serde(default)]
    pub recovery: RecoveryModel,
    /// The receive buffer's autotuning ceiling, Linux's net.ipv4.tcp_rmem[2]: 32 MiB since
    /// 6.16 (6 MiB, 6291456, before). A flow without `rwnd` advertises at most
    /// [`SCALING_RATIO`]/256 of it (tcp_win_from_space), so its flight never exceeds that.
    #[serde(default = "default_rmem_max")]
    pub rmem_max: Bytes,
    // --- receiver ---
    /// Acknowledge a pushed segment when the application has read it, as Linux's receiver
    /// does since 6.6 (commit 4720852ed9af, "tcp: fix delayed ACKs for MSS boundary
    /// condition"): a full-sized segment with PSH sets ICSK_ACK_PUSHED (tcp_measure_rcv_mss,
    /// net/ipv4/tcp_input.c), and a read that empties the receive queue, out-of-order queue
    /// included, then sends the delayed ACK at once (tcp_cleanup_rbuf, net/ipv4/tcp.c) instead
    /// of waiting for a second segment or the timer. The sender sets PSH where Linux's does for
    /// a bulk application that writes whatever each ACK frees: at the end of each write
    /// (tcp_push), on the last segment of the 2-segment skb holding the write's last byte
    /// (crates/transport's `push`). Only with the flow's `delayed_ack`. Default true; false
    /// ignores PSH (an ACK per two segments or at the timer, as before 6.6). A segment shorter
    /// than the sender's MSS waits for the read either way: Linux has always taken it for the
    /// end of a write, PSH or not, unless a second of its length makes that the MSS.
    #[serde(default = "default_true")]
    pub push_ack: bool,
    /// How often the receiving application reads, for `push_ack`: every `read_interval` of
    /// the run's clock; default "0s", each segment as it arrives: an application blocked in
    /// read() or poll(), as the emulator's receiver (crates/emu, kernel_tcp.rs) and iperf3
    /// are. A period models one that reads on a timer (the emulator's receiver once did,
    /// every 20 ms below ~100 Mbit/s, and the kernel's lone ACKs of pushed segments then left
    /// 0–20 ms after the segment arrived: FIDELITY.md, "The lossy Nepal path").
    #[serde(default = "default_read_interval")]
    pub read_interval: Dur,
    /// Compress the ACKs of out-of-order data as Linux does since 4.18 (net.ipv4.
    /// tcp_comp_sack_nr = 44, tcp_comp_sack_delay_ns = 1 ms; __tcp_ack_snd_check): while the
    /// out-of-order queue holds data, the first three ACKs for each cumulative point go at
    /// once, then one ACK covers the arrivals of min(1 ms, rtt/20), at most 44, sent sooner
    /// when a segment lands in a SACK block beyond the two most recent (crates/transport's
    /// `sack`). Only with the flow's `delayed_ack`. Default true; false acknowledges every
    /// out-of-order arrival at once (tcp_comp_sack_nr = 0, RFC 5681 §4.2).
    #[serde(default = "default_true")]
    pub sack_compression: bool,
    /// Grow the receive window as Linux does, and acknowledge each segment that grows it at
    /// once (crates/transport's `rcv_space`): the window starts at the SYN-ACK's 45 segments
    /// and gains two per segment (tcp_grow_window) up to what the receive buffer holds, a
    /// buffer that starts at 128 KiB (tcp_rmem[1]) and autotunes once per receiver RTT to
    /// twice the last RTT's read plus twice its growth, up to `rmem_max` (tcp_rcv_space_adjust,
    /// tcp_rcvbuf_grow); tcp_grow_window ends in `icsk_ack.quick |= 1`, so while the window
    /// grows — six segments at the start, then the first part of every slow-start round — the
    /// receiver ACKs segment by segment, and only once it stops does it spend the 16 quick
    /// ACKs and fall back to one ACK per two segments. Measured in the emulator (kernel Cubic,
    /// 46 Mbit/s × 20 ms): 22 single ACKs at the start, 40–64 % of the ACKs single in the
    /// first 0.5 s, 1–8 % after. The sender's limit stays `rwnd` or the ceiling (the grown
    /// window stays ahead of a slow start's flight). Only with the flow's `delayed_ack`.
    /// Default true; false: the window at its ceiling from the start, 16 quick ACKs, then one
    /// per two segments.
    #[serde(default = "default_true")]
    pub window_growth: bool,
    /// The receiving host's NIC merges segments that reach it together (generic receive
    /// offload; crates/transport's `gro`): a run of one flow's segments in sequence, sent in
    /// the same tick of the sender's millisecond clock (equal TCP timestamps; where that clock
    /// ticks against the run's is drawn from the seed), up to 64 KiB, is one skb for the
    /// receiving TCP — one arrival, one choice whether to acknowledge, one ACK for the run.
    /// The emulator does the same for kernel flows (`cclab-emu --no-gro` turns it off there;
    /// cclab's own flows over UDP are read a datagram at a time and never merged). It moves
    /// a flow on a link that delivers in bunches: on a cellular trace several packets leave in
    /// the same millisecond, and a receiver in quick-ACK mode spends one quick ACK per run
    /// instead of one per segment. For schemes that model a Linux TCP module (cubic, newreno,
    /// vegas, bbr), with the flow's `delayed_ack`. Default true; false hands every segment to
    /// the receiver on its own.
    #[serde(default = "default_true")]
    pub gro: bool,
}

/// Linux's tp->scaling_ratio for full-sized segments (in 256ths): tcp_measure_rcv_mss sets it
/// to skb->len · 256 / skb->truesize since 6.7, and a 1448-byte segment arrives in a
/// 2 KiB kmalloc data buffer plus its sk_buff (truesize 2304): 160, a window of 62.5 % of the
/// buffer, not the 50 % of TCP_DEFAULT_SCALING_RATIO it starts from. Measured in the emulator:
/// kernel NewReno on pantheon-1flow (slow start into an unbounded queue for 30 s) reaches
/// ~19–20 MiB in flight (p95 delay 14259 ms, the uncapped simulator's 14253); half of 32 MiB
/// would stop it at 16 MiB (11586 ms), 62.5 % (20 MiB) does not.
pub const SCALING_RATIO: u64 = 160;

/// tcp_win_from_space: the window a receive buffer of `space` bytes holds at [`SCALING_RATIO`].
pub fn win_from_space(space: u64) -> u64 {
    space * SCALING_RATIO / 256
}

impl Transport {
    /// The receive window of a flow without `rwnd`: `rmem_max` · [`SCALING_RATIO`] / 256.
    pub fn default_rwnd(&self) -> u64 {
        win_from_space(self.rmem_max.0)
    }
}

fn default_rto_max() -> Dur {
    Dur::from_millis(120_000)
}
fn default_rmem_max() -> Bytes {
    Bytes(32 << 20)
}
fn default_read_interval() -> Dur {
    Dur(0)
}
fn default_true() -> bool {
    true
}

impl Default for Transport {
    fn default() -> Self {
        Transport {
            handshake: true,
            rto: RtoModel::default(),
            rto_max: default_rto_max(),
            undo: true,
            tso: true,
            pacing_credit: true,
            prr: true,
            tlp: true,
            rack: true,
            recovery: RecoveryModel::Linux,
            rmem_max: default_rmem_max(),
            push_ack: true,
            read_interval: default_read_interval(),
            sack_compression: true,
            window_growth: true,
            gro: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{RecoveryModel, RtoModel, Scenario, Transport};
    use crate::units::{Bytes, Dur};

    const BASE: &str = "[link]\nrate = \"12Mbps\"\n[[flows]]\nscheme = \"cubic\"\n";

    #[test]
    fn absent_section_is_linux_and_keys_parse() {
        let s = Scenario::parse(BASE, "t.toml").unwrap();
        assert_eq!(s.transport, Transport::default());
        assert_eq!(
            (s.transport.handshake, s.transport.rto, s.transport.rto_max, s.transport.undo, s.transport.tso),
            (true, RtoModel::Linux, Dur(120_000_000_000), true, true)
        );
        assert_eq!((s.transport.prr, s.transport.tlp, s.transport.rmem_max), (true, true, Bytes(33_554_432)));
        assert!(s.transport.rack && s.transport.pacing_credit);
        assert_eq!(s.transport.recovery, RecoveryModel::Linux);
        assert_eq!((s.transport.push_ack, s.transport.read_interval), (true, Dur(0)));
        assert!(s.transport.sack_compression && s.transport.window_growth && s.transport.gro);
        assert_eq!(s.transport.default_rwnd(), 20 << 20, "tcp_win_from_space at scaling_ratio 160");
        let text = format!(
            "{BASE}[transport]\nhandshake = false\nrto = \"rfc6298\"\nrto_max = \"60s\"\nundo = false\ntso = false\npacing_credit = false\n\
             prr = false\ntlp = false\nrack = false\nrecovery = \"rfc9002\"\nrmem_max = \"6291456B\"\npush_ack = false\nread_interval = \"0s\"\n\
             sack_compression = false\nwindow_growth = false\ngro = false\n"
        );
        let s = Scenario::parse(&text, "t.toml").unwrap();
        assert_eq!(
            s.transport,
            Transport {
                handshake: false,
                rto: RtoModel::Rfc6298,
                rto_max: Dur(60_000_000_000),
                undo: false,
                tso: false,
                pacing_credit: false,
                prr: false,
                tlp: false,
                rack: false,
                recovery: RecoveryModel::Rfc9002,
                rmem_max: Bytes(6_291_456),
                push_ack: false,
                read_interval: Dur(0),
                sack_compression: false,
                window_growth: false,
                gro: false,
            }
        );
    }

    #[test]
    fn bad_keys_name_the_field_and_what_is_accepted() {
        let e = Scenario::parse(&format!("{BASE}[transport]\nrto = \"bsd\"\n"), "t.toml").unwrap_err().to_string();
        assert!(e.contains("field `transport.rto`") && e.contains("linux") && e.contains("rfc6298"), "{e}");
        let e = Scenario::parse(&format!("{BASE}[transport]\nrto_max = \"0s\"\n"), "t.toml").unwrap_err().to_string();
        assert!(e.contains("field `transport.rto_max`: must be positive"), "{e}");
        let e = Scenario::parse(&format!("{BASE}[transport]\nrmem_max = \"1KB\"\n"), "t.toml").unwrap_err().to_string();
        assert!(e.contains("field `transport.rmem_max`: must hold"), "{e}");
        let e = Scenario::parse(&format!("{BASE}[transport]\nfrt0 = true\n"), "t.toml").unwrap_err().to_string();
        assert!(e.contains("transport"), "{e}");
    }
}

//! `kernel:<name>` schemes: Linux TCP with the named congestion control, driven by a bulk
//! sender and a receiver that just drains the socket, each a thread inside its namespace.
//!
//! Buffers: autotuning does the sizing (the namespaces allow it up to 64 MB, `topology.rs`), as
//! for any Linux application; fixing SO_SNDBUF/SO_RCVBUF would switch autotuning off. At the
//! flow's stop the sender aborts the connection (SO_LINGER 0: RST, unsent data discarded), the
//! real-stack equivalent of the simulator's sender simply stopping.

use crate::endpoint::{AppBytes, Stop};
use crate::netns::NetNs;
use crate::sys::{os_error, wait_fd, Clock};
use crate::topology::RECEIVER_IP;
use cclab_core::cctrace::ca_state_name;
use nix::errno::Errno;
use nix::poll::PollFlags;
use nix::sys::socket::{
    connect, getsockopt, setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn,
};
use std::ffi::OsString;
use std::io::{self, Read};
use std::net::{SocketAddrV4, TcpListener};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// Bytes handed to the kernel per write/read call.
const IO_CHUNK: usize = 1 << 20;
/// Longest blocking wait, so a stop is noticed promptly.
const POLL_NS: u64 = 20_000_000;

/// How often the sender samples TCP_INFO without a trace interval (`--trace` sets its own):
/// the simulator's default trace interval, so the two engines' traces line up.
pub const SAMPLE_NS: u64 = cclab_core::cctrace::DEFAULT_INTERVAL_NS;
/// The shortest TCP_INFO sampling interval: each reading is a system call on the sending
/// thread, and TCP_INFO has no per-ACK hook (a trace of every ACK samples this often instead).
pub const MIN_SAMPLE_NS: u64 = 1_000_000;
/// `TCP_INFINITE_SSTHRESH` (include/net/tcp.h): the threshold before any loss.
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// `BBR_UNIT` (net/ipv4/tcp_bbr.c): the gains in `tcp_bbr_info` are fixed point, ×256.
const BBR_UNIT: f64 = 256.0;

/// One reading of the kernel's view of the connection (TCP_INFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSample {
    /// Run time of the reading, ns.
    pub t: u64,
    pub ca_state: u8,
    /// Smoothed RTT and the connection's minimum RTT, µs.
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    /// Congestion window and segments sent and not yet acked, in segments of `snd_mss` bytes.
    pub cwnd: u32,
    pub unacked: u32,
    /// Of the unacked: SACKed, and marked lost; `retrans`: retransmissions in flight (Linux's
    /// `tcp_packets_in_flight` = unacked − sacked − lost + retrans).
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub snd_mss: u32,
    /// Slow-start threshold, segments (`INFINITE_SSTHRESH` before any reduction).
    pub ssthresh: u32,
    pub total_retrans: u32,
    /// Pacing rate and the last delivery-rate sample, bytes/s.
    pub pacing_rate: u64,
    pub delivery_rate: u64,
    /// BBR's own estimates when the controller is BBR (TCP_CC_INFO), else 0: bottleneck
    /// bandwidth (bytes/s), min RTT (µs), and its gains ×256.
    pub bbr_bw: u64,
    pub bbr_min_rtt_us: u32,
    pub bbr_pacing_gain: u32,
    pub bbr_cwnd_gain: u32,
    /// The peer's advertised window, bytes (tcpi_snd_wnd, 6.2 and later; 0 before).
    pub snd_wnd: u32,
    /// Time the receive window alone kept data back, µs (tcpi_rwnd_limited).
    pub rwnd_limited_us: u64,
}

/// The sender's TCP_INFO readings, every 10 ms: the kernel controller's trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TcpTrace {
    pub samples: Vec<TcpSample>,
}

impl TcpTrace {
    pub fn median_srtt_us(&self) -> Option<f64> {
        let mut v: Vec<u32> = self.samples.iter().map(|s| s.srtt_us).filter(|&r| r > 0).collect();
        v.sort_unstable();
        v.get(v.len() / 2).map(|&x| x as f64)
    }
    pub fn min_rtt_us(&self) -> u32 {
        self.samples.last().map_or(0, |s| s.min_rtt_us)
    }
    pub fn total_retrans(&self) -> u32 {
        self.samples.last().map_or(0, |s| s.total_retrans)
    }

    /// The readings as rows of the run's sender trace (the columns the simulator's senders
    /// fill), with BBR's TCP_CC_INFO as `cc_bw` (bytes/s), `cc_min_rtt` (s), `cc_pacing_gain`
    /// and `cc_cwnd_gain`, in the units of the simulator's BBR.
    pub fn append_to(&self, flow: u32, trace: &mut cclab_core::cctrace::CcTrace) {
        for s in &self.samples {
            if s.snd_mss == 0 {
                continue; // not connected yet
            }
            let mss = s.snd_mss as u64;
            let segments_in_flight =
                (s.unacked as u64 + s.retrans as u64).saturating_sub(s.sacked as u64 + s.lost as u64);
            let bbr = [
                ("bw", s.bbr_bw as f64),
                ("min_rtt", s.bbr_min_rtt_us as f64 / 1e6),
                ("pacing_gain", s.bbr_pacing_gain as f64 / BBR_UNIT),
                ("cwnd_gain", s.bbr_cwnd_gain as f64 / BBR_UNIT),
            ];
            let has_bbr = s.bbr_pacing_gain > 0;
            // tcpi_ca_state: both the kernel flow's mode and its congestion state.
            let state = ca_state_name(s.ca_state);
            trace.push(&cclab_core::cctrace::Sample {
                flow,
                t: s.t,
                mode: state,
                ca_state: state,
                cwnd: s.cwnd as u64 * mss,
                in_flight: segments_in_flight * mss,
                // ~0 (unlimited) when nothing set a rate.
                pacing_rate: (s.pacing_rate != u64::MAX).then_some(s.pacing_rate as f64),
                srtt: (s.srtt_us > 0).then_some(s.srtt_us as u64 * 1000),
                // tcpi_min_rtt is ~0U until the first sample.
                min_rtt: (s.min_rtt_us > 0 && s.min_rtt_us != u32::MAX).then_some(s.min_rtt_us as u64 * 1000),
                delivery_rate: (s.delivery_rate > 0).then_some(s.delivery_rate as f64),
                ssthresh: Some(if s.ssthresh >= INFINITE_SSTHRESH {
                    f64::INFINITY
                } else {
                    (s.ssthresh as u64 * mss) as f64
                }),
                rwnd: (s.snd_wnd > 0).then_some(s.snd_wnd as u64),
                rwnd_limited: Some(s.rwnd_limited_us * 1000),
                vars: if has_bbr { &bbr } else { &[] },
            });
        }
    }
}

/// Reads the fields of `struct tcp_info` (linux/tcp.h) the trace keeps, by their offsets in
/// the kernel's stable layout (fields are only ever appended).
///
/// Raw libc: nix has no TCP_INFO or TCP_CC_INFO option.
pub(crate) fn tcp_info(sock: impl AsFd, t: u64) -> io::Result<TcpSample> {
    let fd = sock.as_fd().as_raw_fd();
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf/len describe a writable buffer; the kernel writes at most len bytes.
    Errno::result(unsafe {
        libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, buf.as_mut_ptr().cast(), &mut len)
    })?;
    let (srtt_us, cwnd, total_retrans, min_rtt_us, unacked) = (
        ne_u32(&buf, len, 68),
        ne_u32(&buf, len, 80),
        ne_u32(&buf, len, 100),
        ne_u32(&buf, len, 148),
        ne_u32(&buf, len, 24),
    );
    let (pacing_rate, delivery_rate) = (ne_u64(&buf, len, 104), ne_u64(&buf, len, 160));
    let (rwnd_limited_us, snd_wnd) = (ne_u64(&buf, len, 176), ne_u32(&buf, len, 228));
    let (snd_mss, sacked, lost, retrans, ssthresh) = (
        ne_u32(&buf, len, 16),
        ne_u32(&buf, len, 28),
        ne_u32(&buf, len, 32),
        ne_u32(&buf, len, 36),
        ne_u32(&buf, len, 76),
    );
    // struct tcp_bbr_info: bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain (u32 each).
    let mut cc = [0u8; 20];
    let mut cc_len = cc.len() as libc::socklen_t;
    // SAFETY: as above; controllers without TCP_CC_INFO data return length 0.
    let ok = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, TCP_CC_INFO, cc.as_mut_ptr().cast(), &mut cc_len) } == 0;
    let bbr = ok && cc_len as usize == cc.len();
    let field = |i: usize| if bbr { ne_u32(&cc, cc_len, 4 * i) } else { 0 };
    Ok(TcpSample {
        t,
        ca_state: buf[1],
        srtt_us,
        min_rtt_us,
        cwnd,
        unacked,
        sacked,
        lost,
        retrans,
        snd_mss,
        ssthresh,
        total_retrans,
        pacing_rate,
        delivery_rate,
        bbr_bw: (field(1) as u64) << 32 | field(0) as u64,
        bbr_min_rtt_us: field(2),
        bbr_pacing_gain: field(3),
        bbr_cwnd_gain: field(4),
        snd_wnd,
        rwnd_limited_us,
    })
}

/// `TCP_CC_INFO` (linux/tcp.h): the congestion control's own state.
const TCP_CC_INFO: libc::c_int = 26;

/// A native-endian field of a getsockopt result, 0 where the kernel wrote less.
fn ne_u32(buf: &[u8], len: libc::socklen_t, o: usize) -> u32 {
    if o + 4 <= len as usize {
        u32::from_ne_bytes(buf[o..o + 4].try_into().expect("4 bytes"))
    } else {
        0
    }
}

fn ne_u64(buf: &[u8], len: libc::socklen_t, o: usize) -> u64 {
    if o + 8 <= len as usize {
        u64::from_ne_bytes(buf[o..o + 8].try_into().expect("8 bytes"))
    } else {
        0
    }
}

/// Opens the listening socket in the receiver's namespace, before the run's clock starts.
pub fn listen(ns: &NetNs, port: u16) -> io::Result<TcpListener> {
    ns.run(|| {
        let l = TcpListener::bind(SocketAddrV4::new(RECEIVER_IP, port))
            .map_err(|e| io::Error::new(e.kind(), format!("listening on port {port}: {e}")))?;
        l.set_nonblocking(true)?;
        Ok(l)
    })
}

/// An endpoint's buffer for its reads or writes, its pages touched now, before the run's clock
/// starts: touched at a flow's first data instead, 1 MiB of page faults (~0.3 ms) a thread,
/// queued behind each other on a busy CPU, spread twenty flows' first writes over 5-10 ms.
pub fn io_buffer() -> Vec<u8> {
    vec![0x5a; IO_CHUNK]
}

/// Accepts one connection and reads it to the end (or until the run stops) into `buf` (from
/// [`io_buffer`]).
pub fn receive(listener: TcpListener, mut buf: Vec<u8>, clock: Clock, stop: &Stop) -> io::Result<AppBytes> {
    let mut got = AppBytes::default();
    let conn = loop {
        if stop.now() {
            return Ok(got);
        }
        match listener.accept() {
            Ok((c, _)) => break c,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait_fd(&listener, PollFlags::POLLIN, Some(POLL_NS))?;
            }
            Err(e) => return Err(e),
        }
    };
    drop(listener);
    conn.set_nonblocking(true)?;
    // Woken by whatever arrives, as a bulk receiver (iperf3's) is. An SO_RCVLOWAT of 256 KiB
    // here once saved the path threads' CPU and broke the flows it served: Linux sets the
    // window clamp to it (tcp_set_rcvlowat), and while the window was below it the reader
    // woke only when the window had closed or at the poll's timeout, one window per round
    // trip, so autotuning never grew it — kernel BBR at 1 Gbit/s × 20 ms then sat at 77
    // Mbit/s for seconds (crates/emu/README.md, "The receiving application").
    while !stop.now() {
        match (&conn).read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.add(clock.now(), n as u64),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                wait_fd(&conn, PollFlags::POLLIN, Some(POLL_NS))?;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // The sender's abort at its stop time.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A TCP socket in the calling thread's namespace with congestion control `cc`.
pub(crate) fn tcp_socket(cc: &str) -> io::Result<OwnedFd> {
    let sock = socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC, None)?;
    // The kernel would stop at a NUL and quietly take the name's start instead.
    if cc.contains('\0') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{cc:?} contains a NUL byte")));
    }
    setsockopt(&sock, sockopt::TcpCongestion, &OsString::from(cc))
        .map_err(os_error(format_args!("setting TCP_CONGESTION to {cc:?}")))?;
    Ok(sock)
}

/// Connects `sock` (from [`tcp_socket`], in the sender's namespace) at `start`, sends `buf`
/// (from [`io_buffer`]) over and over as fast as the connection allows until `stop_at`, then
/// aborts. TCP_INFO is read every `sample_ns`.
pub fn send(
    sock: OwnedFd,
    buf: Vec<u8>,
    port: u16,
    clock: Clock,
    (start, stop_at): (u64, u64),
    sample_ns: u64,
    stop: &Stop,
) -> io::Result<TcpTrace> {
    let mut trace = TcpTrace::default();
    if !stop.sleep_until(clock, start) {
        return Ok(trace);
    }
    let addr = SockaddrIn::from(SocketAddrV4::new(RECEIVER_IP, port));
    match connect(sock.as_raw_fd(), &addr) {
        Ok(()) | Err(Errno::EINPROGRESS) => {}
        Err(e) => return Err(os_error(format_args!("connecting to port {port}"))(e)),
    }
    // Connected when writable; SYN retransmissions are the kernel's business meanwhile.
    loop {
        if stop.now() || clock.now() >= stop_at {
            return Ok(trace);
        }
        if wait_fd(&sock, PollFlags::POLLOUT, Some(POLL_NS))? {
            break;
        }
    }
    let err = getsockopt(&sock, sockopt::SocketError)?;
    if err != 0 {
        let e = io::Error::from_raw_os_error(err);
        return Err(io::Error::new(e.kind(), format!("connecting to port {port}: {e}")));
    }
    let mut next_sample = clock.now();
    loop {
        let now = clock.now();
        if stop.now() || now >= stop_at {
            break;
        }
        if now >= next_sample {
            trace.samples.push(tcp_info(&sock, now)?);
            next_sample = now + sample_ns;
        }
        match nix::unistd::write(&sock, &buf) {
            Ok(_) => {}
            Err(Errno::EAGAIN) => {
                wait_fd(&sock, PollFlags::POLLOUT, Some((stop_at.min(next_sample) - now).clamp(1, POLL_NS)))?;
            }
            Err(Errno::EINTR) => {}
            Err(e) => return Err(os_error(format_args!("sending on port {port}"))(e)),
        }
    }
    setsockopt(&sock, sockopt::Linger, &libc::linger { l_onoff: 1, l_linger: 0 })?;
    drop(sock);
    Ok(trace)
}

//! How fast this machine can forward, measured at start-up on the run's own devices.
//!
//! Before the clock starts, a burst of full-size UDP datagrams goes from the sender's namespace
//! through the path's own operations — a read from the sender's TUN, a write to the receiver's
//! (which runs the receiving kernel's stack inside the write, as in the run) — and the CPU time
//! of those reads and writes gives the packets per second one CPU can forward. A link asking
//! for more than that cannot be emulated faithfully (the path falls behind and its packets
//! leave late); the run says so with the figure ([`Capacity::warning`]).
//!
//! The figure is an upper bound, not a forecast, for kernel TCP: on the VM of
//! crates/emu/README.md it read 12–13 Gbit/s where kernel Cubic through a 10 Gbit/s × 10 ms link
//! got 6.8–7.6, its flow paying what the probe does not (the sending kernel's ACK processing and
//! new segments inside the ACK writes, the model's work per segment, and the packets the
//! delay holds: before their slots were prefetched whole, the same link carried 5.9–6.2
//! Gbit/s with 10 ms of delay and 8.0 with 1 ms, the path thread at 90 % of a CPU in both). A
//! probe that carried kernel TCP itself through the run's path code, with no delay or
//! bottleneck, read 15 Gbit/s there, further off still (tried and dropped): only a path with
//! the run's delay predicts the run, and that is the run. What tells, afterwards, is the input
//! wait (`path::InputWait`): how long kernel TCP's segments waited in their host.

use crate::run::BASE_PORT;
use crate::sys;
use crate::topology::{Topology, RECEIVER_IP, SENDER_IP};
use crate::tun::VNET_HDR_LEN;
use std::io;
use std::net::{SocketAddrV4, UdpSocket};

/// The probe's port on the receiver: below every flow's, so it can never be a flow's.
const PROBE_PORT: u16 = BASE_PORT - 1;
/// UDP payload of a 1500-byte IP packet.
const PAYLOAD: usize = 1500 - 20 - 8;
/// Datagrams per burst (well inside the sender device's queue and the receiver's socket
/// buffer) and bursts: 1,600 packets, a few ms of CPU.
const BURST: usize = 100;
const BURSTS: usize = 16;
/// Wire size the ceiling is expressed in, bits.
const PACKET_BITS: f64 = 1500.0 * 8.0;

/// What the start-up probe measured.
#[derive(Clone, Debug, Default)]
pub struct Capacity {
    /// Packets forwarded, and the CPU time their reads and writes took, ns.
    pub packets: u64,
    pub cpu_ns: u64,
}

impl Capacity {
    /// The forwarding ceiling of one CPU, Mbit/s of 1500-byte packets (NaN if nothing was
    /// measured).
    pub fn mbps(&self) -> f64 {
        if self.packets == 0 || self.cpu_ns == 0 {
            return f64::NAN;
        }
        self.packets as f64 * PACKET_BITS / self.cpu_ns as f64 * 1e3
    }

    /// A warning, with the figures, when a link of `rate_bps` asks for more than the ceiling.
    pub fn warning(&self, rate_bps: u64) -> Option<String> {
        let ceiling = self.mbps();
        let asked = rate_bps as f64 / 1e6;
        (ceiling.is_finite() && asked > ceiling).then(|| {
            format!(
                "the link asks for {asked:.0} Mbit/s but this machine forwarded 1500-byte packets at \
                 {ceiling:.0} Mbit/s at start-up (one read and one write each, an upper bound for kernel \
                 TCP): the emulator will fall behind the link, and its timing error and input wait say \
                 by how much"
            )
        })
    }
}

/// Sends the probe's bursts through the devices and times the forwarding. Call before the path
/// threads start (nothing else may read the devices meanwhile).
pub fn measure(topo: &Topology) -> io::Result<Capacity> {
    let rx = topo.receiver_ns.run(|| {
        let s = UdpSocket::bind(SocketAddrV4::new(RECEIVER_IP, PROBE_PORT))?;
        s.set_nonblocking(true)?;
        Ok(s)
    })?;
    let tx = topo.sender_ns.run(|| {
        let s = UdpSocket::bind(SocketAddrV4::new(SENDER_IP, 0))?;
        s.connect(SocketAddrV4::new(RECEIVER_IP, PROBE_PORT))?;
        Ok(s)
    })?;
    let payload = vec![0x5a_u8; PAYLOAD];
    let mut buf = vec![0u8; VNET_HDR_LEN + 2048];
    let mut sink = vec![0u8; 2048];
    let mut cap = Capacity::default();
    for _ in 0..BURSTS {
        for _ in 0..BURST {
            tx.send(&payload)?;
        }
        let t0 = sys::thread_cpu_ns();
        let mut forwarded = 0;
        loop {
            match topo.sender_tun.read(&mut buf) {
                Ok(n) => {
                    // As the path does with a packet it need not cut: one write of it as read.
                    topo.receiver_tun.write(&buf[..n])?;
                    forwarded += 1;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        cap.cpu_ns += sys::thread_cpu_ns().saturating_sub(t0);
        cap.packets += forwarded;
        while rx.recv(&mut sink).is_ok() {}
    }
    Ok(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_is_packets_per_cpu_second_in_megabits() {
        // 10,000 packets in 0.12 s of CPU: 83,333 packets/s of 12,000 bits = 1,000 Mbit/s.
        let c = Capacity { packets: 10_000, cpu_ns: 120_000_000 };
        assert!((c.mbps() - 1000.0).abs() < 1e-6, "{}", c.mbps());
        assert!(c.warning(999_000_000).is_none());
        let w = c.warning(10_000_000_000).expect("10 Gbit/s is beyond 1 Gbit/s");
        assert!(w.contains("10000 Mbit/s") && w.contains("1000 Mbit/s"), "{w}");
        assert!(Capacity::default().mbps().is_nan());
        assert!(Capacity::default().warning(u64::MAX).is_none(), "no measurement, no claim");
    }
}

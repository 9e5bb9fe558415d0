//! The emulated dumbbell's plumbing: a sender namespace and a receiver namespace, each with one
//! TUN device whose other end is the emulator.
//!
//! ```text
//!  [sender ns]  10.64.0.1 ── cclab<pid>s ══ emulator ══ cclab<pid>r ── 10.64.0.2  [receiver ns]
//! ```
//! Each TUN is point-to-point with the other side's address as its peer, so the two hosts talk
//! directly (no NAT, no routing tables to restore). These are private addresses that exist only
//! inside the run's own namespaces; nothing is configured in the caller's namespace.

use crate::netns::{dev_counters, set_sysctl, DevCounters, IfConfig, NetNs};
use crate::tun::Tun;
use std::io;
use std::net::Ipv4Addr;

pub const SENDER_IP: Ipv4Addr = Ipv4Addr::new(10, 64, 0, 1);
pub const RECEIVER_IP: Ipv4Addr = Ipv4Addr::new(10, 64, 0, 2);
const MTU: i32 = 1500;
/// Packets the sending kernel may queue for the emulator before it drops: enough for a UDP
/// burst, and far more than a flow keeps there while the emulator keeps up. TCP small queues
/// do not hold a flow back here: the TUN device orphans each packet it queues
/// (`tun_net_xmit`), so the sending socket is charged for none of it, and where the emulator
/// cannot keep up only the flow's window bounds its backlog (10 Gbit/s on the VM of
/// crates/emu/README.md: tens of ms, the run's input wait; sixteen flows filled all 10,000
/// and the device dropped, `tun_sender_tx_dropped`).
const TXQUEUELEN: i32 = 10_000;

/// Sysctls of both namespaces: IPv6 off (no router solicitations or link-local chatter on the
/// devices), socket-buffer autotuning allowed to grow to 64 MB (a 1 Gbit/s × 100 ms path needs
/// 12.5 MB of window), and no cached metrics from earlier connections.
const SYSCTLS: &[(&str, &str)] = &[
    ("net.ipv6.conf.all.disable_ipv6", "1"),
    ("net.ipv6.conf.default.disable_ipv6", "1"),
    ("net.ipv4.tcp_rmem", "4096 131072 67108864"),
    ("net.ipv4.tcp_wmem", "4096 65536 67108864"),
    ("net.ipv4.tcp_no_metrics_save", "1"),
];

pub struct Topology {
    pub sender_ns: NetNs,
    pub receiver_ns: NetNs,
    /// The emulator's end of each side's TUN (packets the side sends are read here).
    pub sender_tun: Tun,
    pub receiver_tun: Tun,
}

/// Device names carry the run's pid, so a leftover (there should be none) says whose it was.
pub fn device_name(side: char) -> String {
    format!("cclab{}{side}", std::process::id())
}

fn side(label: &str, side: char, local: Ipv4Addr, peer: Ipv4Addr) -> io::Result<(NetNs, Tun)> {
    let ns = NetNs::create(label)?;
    let tun = ns.run(|| {
        for (k, v) in SYSCTLS {
            set_sysctl(k, v)?;
        }
        let cfg = IfConfig::new()?;
        cfg.up("lo")?;
        let name = device_name(side);
        let tun = Tun::create(&name)?;
        cfg.set_mtu(&name, MTU)?;
        cfg.set_txqueuelen(&name, TXQUEUELEN)?;
        cfg.set_p2p(&name, local, peer)?;
        cfg.up(&name)?;
        Ok(tun)
    })?;
    Ok((ns, tun))
}

impl Topology {
    pub fn build() -> io::Result<Topology> {
        let (sender_ns, sender_tun) = side("sender", 's', SENDER_IP, RECEIVER_IP)?;
        let (receiver_ns, receiver_tun) = side("receiver", 'r', RECEIVER_IP, SENDER_IP)?;
        Ok(Topology { sender_ns, receiver_ns, sender_tun, receiver_tun })
    }

    /// The kernel's counters of both TUN devices (sender side, receiver side).
    pub fn counters(&self) -> io::Result<(DevCounters, DevCounters)> {
        let s = self.sender_ns.run(|| dev_counters(&self.sender_tun.name))?;
        let r = self.receiver_ns.run(|| dev_counters(&self.receiver_tun.name))?;
        Ok((s, r))
    }
}

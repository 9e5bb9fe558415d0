//! Request workloads (`traffic = "requests"`) over Linux TCP: a client pool in the sender's
//! namespace and a server pool in the receiver's, one thread each, over the entry's
//! `connections` persistent connections (one flow id and server port per connection).
//!
//! The simulator's model, kept here: a request *arrives at the sending application*, which
//! writes its `size` bytes to an idle connection (round robin; when every connection is busy,
//! a random one, where it waits behind the requests already written), and it completes when
//! its last byte is acknowledged. The arrivals, sizes and connection choices are
//! `cclab_engine::workload::RequestSource`'s, drawn from the same seed streams as in the
//! simulator (the connection when all are busy from a stream of its own, so the arrivals and
//! sizes are the simulator's however busy the kernel's connections are). On real sockets
//! "acknowledged" is what the application can see: the server answers every complete request
//! with one byte, sent the moment it has read the request's last byte, so the answer rides on
//! (or right behind) the kernel's ACK of that byte. FCT is from the request's arrival (its
//! Poisson time, so a late client thread or time spent queued behind other requests counts)
//! to the client reading that byte.
//!
//! Wire format: a request is `max(size, 8)` bytes whose first 8 are `size` (u64, little
//! endian), so the bytes on the wire are the request's own for every size of at least 8
//! (the shipped CDFs start far above). Both sides set TCP_NODELAY: the simulator's sender
//! sends a request's last partial segment at once, and Nagle would hold it for an RTT.
//!
//! Connections open at each connection's start (one handshake RTT, as Linux's connect()); a
//! request given to a connection still in its handshake waits for it. At the workload's stop the client
//! aborts them all (RST), as the bulk sender does.

use crate::endpoint::Stop;
use crate::kernel_tcp::{tcp_info, tcp_socket, TcpTrace};
use crate::sys::{os_error, wait_any_readable, Clock};
use crate::topology::RECEIVER_IP;
use cclab_core::metrics::fct::Request;
use cclab_engine::workload::RequestSource;
use nix::errno::Errno;
use nix::sys::socket::{connect, getsockopt, setsockopt, sockopt, SockaddrIn};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// Bytes of a request that carry its size.
pub const HEADER: u64 = 8;
/// Longest wait, so a stop is noticed promptly (as the other endpoints).
const POLL_NS: u64 = 20_000_000;
/// Bytes handed to the kernel per write.
const CHUNK: usize = 256 * 1024;

/// Bytes a request of `size` puts on the wire (the header counts as its first bytes).
pub fn wire_bytes(size: u64) -> u64 {
    size.max(HEADER)
}

/// One connection as the client sees it.
struct ClientConn {
    port: u16,
    start: u64,
    sock: Option<OwnedFd>,
    connected: bool,
    /// Something to do: the last wait reported it, or a request was just given to it. Only
    /// these are read and written, so a turn costs system calls for the busy few, not for
    /// all K connections.
    poke: bool,
    /// Requests written (or still to be written) and not yet answered, by index into the log,
    /// in the order the server answers them.
    waiting: VecDeque<usize>,
    /// Requests not yet fully written: (size, bytes of it already written).
    unsent: VecDeque<(u64, u64)>,
    /// The connection's TCP_INFO readings, when the run is traced.
    trace: TcpTrace,
}

/// Puts up to `CHUNK` bytes of the unsent requests `(size, bytes written)` into `buf`.
fn fill(unsent: &VecDeque<(u64, u64)>, buf: &mut Vec<u8>) {
    buf.clear();
    for &(size, done) in unsent {
        let total = wire_bytes(size);
        let header = size.to_le_bytes();
        let mut at = done;
        while at < total && buf.len() < CHUNK {
            if at < HEADER {
                buf.push(header[at as usize]);
                at += 1;
            } else {
                let n = (total - at).min((CHUNK - buf.len()) as u64);
                buf.resize(buf.len() + n as usize, 0x5a);
                at += n;
            }
        }
        if buf.len() >= CHUNK {
            break;
        }
    }
}

/// `n` bytes of the unsent requests went out.
fn consume(unsent: &mut VecDeque<(u64, u64)>, mut n: u64) {
    while n > 0 {
        let (size, done) = unsent.front_mut().expect("only written bytes are consumed");
        let take = (wire_bytes(*size) - *done).min(n);
        *done += take;
        n -= take;
        if *done == wire_bytes(*size) {
            unsent.pop_front();
        }
    }
}

/// What a client leaves: every request it issued, and each connection's TCP_INFO readings by
/// flow id (empty unless traced).
pub type ClientEnd = (Vec<Request>, Vec<(u32, TcpTrace)>);

/// The client side of one workload: issues its requests on schedule until `stop_at` and
/// returns every request it issued (ids local to the workload, in arrival order) and, when
/// `sample_ns` is given (a traced run), each connection's TCP_INFO readings at that interval
/// by flow id, as a bulk kernel sender's. Runs on a thread already inside the sender's
/// namespace.
pub fn client(
    cc: &str,
    mut source: RequestSource,
    conns: &[(u32, u16, u64)],
    clock: Clock,
    (stop_at, sample_ns): (u64, Option<u64>),
    stop: &Stop,
) -> io::Result<ClientEnd> {
    crate::sys::set_timer_slack_1ns();
    let mut log: Vec<Request> = Vec::new();
    let mut cs: Vec<ClientConn> = conns
        .iter()
        .map(|&(_, port, start)| ClientConn {
            port,
            start,
            sock: None,
            connected: false,
            poke: false,
            waiting: VecDeque::new(),
            unsent: VecDeque::new(),
            trace: TcpTrace::default(),
        })
        .collect();
    let mut next_sample = clock.now();
    let index_of = |flow: u32| conns.iter().position(|c| c.0 == flow).expect("the source picks our connections");
    let mut buf = Vec::with_capacity(CHUNK);
    let mut rbuf = vec![0u8; 4096];
    let mut pfds: Vec<libc::pollfd> = Vec::with_capacity(cs.len());
    let mut polled: Vec<usize> = Vec::with_capacity(cs.len());
    loop {
        let now = clock.now();
        if stop.now() || now >= stop_at {
            break;
        }
        // Connections due to open.
        for c in cs.iter_mut().filter(|c| c.sock.is_none() && c.start <= now) {
            let sock = tcp_socket(cc)?;
            setsockopt(&sock, sockopt::TcpNoDelay, &true)?;
            let addr = SockaddrIn::from(SocketAddrV4::new(RECEIVER_IP, c.port));
            match connect(sock.as_raw_fd(), &addr) {
                Ok(()) | Err(Errno::EINPROGRESS) => {}
                Err(e) => return Err(os_error(format_args!("connecting to port {}", c.port))(e)),
            }
            c.sock = Some(sock);
        }
        if let Some(every) = sample_ns.filter(|_| now >= next_sample) {
            for c in cs.iter_mut().filter(|c| c.connected) {
                let sock = c.sock.as_ref().expect("connected");
                c.trace.samples.push(tcp_info(sock, now)?);
            }
            next_sample = now + every;
        }
        // Arrivals due, each at its own scheduled time.
        while let Some(t) = source.next_arrival().filter(|&t| t <= now) {
            // Idle as the simulator's sender is idle: nothing written and unanswered. A
            // connection still in its handshake counts as idle (so the choices, and with them
            // the seed stream's later draws, are the simulator's); its request goes out when
            // the handshake completes.
            let (flow, size) = source.arrive(&|f| cs[index_of(f)].waiting.is_empty());
            let c = &mut cs[index_of(flow)];
            c.waiting.push_back(log.len());
            c.unsent.push_back((size, 0));
            c.poke = true;
            log.push(Request { id: log.len() as u64, flow, size, start: t, end: None });
        }
        // Write what the connections take, read the answers.
        for c in cs.iter_mut().filter(|c| c.connected && c.poke) {
            c.poke = false;
            let ClientConn { sock, port, waiting, unsent, .. } = c;
            let sock = sock.as_ref().expect("connected");
            while !unsent.is_empty() {
                fill(unsent, &mut buf);
                match nix::unistd::write(sock, &buf) {
                    Ok(n) => consume(unsent, n as u64),
                    Err(Errno::EAGAIN) => break,
                    Err(Errno::EINTR) => {}
                    Err(e) => return Err(os_error(format_args!("sending requests on port {}", port))(e)),
                }
            }
            loop {
                match nix::unistd::read(sock, &mut rbuf) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            format!("the server closed the connection on port {}", port),
                        ))
                    }
                    Ok(n) => {
                        let t = clock.now();
                        for _ in 0..n {
                            let Some(i) = waiting.pop_front() else {
                                return Err(io::Error::other(format!(
                                    "an answer on port {} to no request (protocol error)",
                                    port
                                )));
                            };
                            log[i].end = Some(t);
                        }
                    }
                    Err(Errno::EAGAIN) => break,
                    Err(Errno::EINTR) => {}
                    Err(e) => return Err(os_error(format_args!("reading answers on port {}", port))(e)),
                }
            }
        }
        // Wait for the next arrival, an answer, room to write or a connection to complete.
        pfds.clear();
        polled.clear();
        for (i, c) in cs.iter().enumerate() {
            let Some(sock) = &c.sock else { continue };
            let events = if !c.connected || !c.unsent.is_empty() { libc::POLLOUT } else { 0 }
                | if c.connected { libc::POLLIN } else { 0 };
            pfds.push(libc::pollfd { fd: sock.as_raw_fd(), events, revents: 0 });
            polled.push(i);
        }
        let now = clock.now();
        let mut until = stop_at.min(now + POLL_NS);
        if let Some(t) = source.next_arrival() {
            until = until.min(t);
        }
        if sample_ns.is_some() {
            until = until.min(next_sample);
        }
        if let Some(t) = cs.iter().filter(|c| c.sock.is_none()).map(|c| c.start).min() {
            until = until.min(t);
        }
        wait_any_readable(&mut pfds, until.saturating_sub(now))?;
        for (p, &i) in pfds.iter().zip(&polled) {
            let c = &mut cs[i];
            c.poke |= p.revents != 0;
            if !c.connected && p.revents & (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) != 0 {
                let sock = c.sock.as_ref().expect("polled");
                let err = getsockopt(sock, sockopt::SocketError)?;
                if err != 0 {
                    let e = io::Error::from_raw_os_error(err);
                    return Err(io::Error::new(e.kind(), format!("connecting to port {}: {e}", c.port)));
                }
                c.connected = true;
            }
        }
    }
    for sock in cs.iter_mut().filter_map(|c| c.sock.take()) {
        // Abort: unsent data is discarded and the server sees a reset, as for bulk senders.
        setsockopt(&sock, sockopt::Linger, &libc::linger { l_onoff: 1, l_linger: 0 })?;
    }
    let traces = conns.iter().zip(cs).map(|(&(flow, ..), c)| (flow, c.trace)).collect();
    Ok((log, traces))
}

/// One connection as the server sees it: where it is in the current request.
struct ServerConn {
    sock: TcpStream,
    header: [u8; HEADER as usize],
    have: u64,
    /// Body bytes of the current request still to read (after its header).
    left: u64,
    /// Answers due but not yet written.
    owed: u64,
    closed: bool,
    /// The last wait reported something (as the client's `poke`).
    ready: bool,
}

impl ServerConn {
    /// Takes `data` off the stream; counts the requests it completes.
    fn take(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.have < HEADER {
                let n = (HEADER - self.have).min(data.len() as u64) as usize;
                self.header[self.have as usize..self.have as usize + n].copy_from_slice(&data[..n]);
                self.have += n as u64;
                data = &data[n..];
                if self.have == HEADER {
                    self.left = wire_bytes(u64::from_le_bytes(self.header)) - HEADER;
                }
            } else {
                let n = self.left.min(data.len() as u64);
                self.left -= n;
                data = &data[n as usize..];
            }
            if self.have == HEADER && self.left == 0 {
                self.owed += 1;
                self.have = 0;
            }
        }
    }
}

/// The server side of one workload: accepts one connection on each listener and answers every
/// request with one byte once it has read it whole, until the run stops.
pub fn serve(listeners: Vec<TcpListener>, stop: &Stop) -> io::Result<()> {
    let mut pending: Vec<TcpListener> = listeners;
    let mut conns: Vec<ServerConn> = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    let mut pfds: Vec<libc::pollfd> = Vec::new();
    while !stop.now() {
        pending.retain(|l| match l.accept() {
            Ok((sock, _)) => {
                let ok = sock.set_nonblocking(true).and_then(|_| sock.set_nodelay(true));
                conns.push(ServerConn {
                    sock,
                    header: [0; 8],
                    have: 0,
                    left: 0,
                    owed: 0,
                    closed: ok.is_err(),
                    ready: true,
                });
                false
            }
            Err(_) => true, // WouldBlock until the client connects
        });
        for c in conns.iter_mut().filter(|c| !c.closed && c.ready) {
            c.ready = false;
            loop {
                match c.sock.read(&mut buf) {
                    Ok(0) => {
                        c.closed = true;
                        break;
                    }
                    Ok(n) => c.take(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // The client's abort at its stop.
                    Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                        c.closed = true;
                        break;
                    }
                    Err(e) => return Err(io::Error::new(e.kind(), format!("reading requests: {e}"))),
                }
            }
            while c.owed > 0 && !c.closed {
                let answers = [0x41u8; 64];
                match c.sock.write(&answers[..c.owed.min(64) as usize]) {
                    Ok(n) => c.owed -= n as u64,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe) => {
                        c.closed = true;
                    }
                    Err(e) => return Err(io::Error::new(e.kind(), format!("answering requests: {e}"))),
                }
            }
        }
        conns.retain(|c| !c.closed);
        pfds.clear();
        for l in &pending {
            pfds.push(libc::pollfd { fd: l.as_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 });
        }
        for c in &conns {
            let events = libc::POLLIN | if c.owed > 0 { libc::POLLOUT } else { 0 };
            pfds.push(libc::pollfd { fd: c.sock.as_raw_fd(), events, revents: 0 });
        }
        wait_any_readable(&mut pfds, POLL_NS)?;
        for (c, p) in conns.iter_mut().zip(&pfds[pending.len()..]) {
            c.ready = p.revents != 0;
        }
    }
    Ok(())
}

/// Raises this process's open-file limit to hold `needed` descriptors (three per connection:
/// the listener, the accepted socket and the client's), up to the hard limit.
pub fn ensure_descriptors(needed: u64) -> Result<(), String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // Raw libc: nix's resource module is not enabled in this workspace for one call.
    // SAFETY: lim is a valid rlimit the kernel fills in.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max < needed {
        return Err(format!(
            "the request workloads need {needed} open files and this process may have at most {} \
             (ulimit -Hn); use fewer `requests.connections`",
            lim.rlim_max
        ));
    }
    lim.rlim_cur = needed;
    // SAFETY: as above; raising the soft limit up to the hard one is always allowed.
    Errno::result(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) })
        .map(drop)
        .map_err(|e| format!("raising the open-file limit to {needed}: {e}"))
}

/// Merges the workloads' logs into the run's: ids in arrival order over all of them.
pub fn merge(logs: Vec<Vec<Request>>) -> Vec<Request> {
    let mut all: Vec<Request> = logs.into_iter().flatten().collect();
    all.sort_by_key(|r| (r.start, r.flow));
    for (i, r) in all.iter_mut().enumerate() {
        r.id = i as u64;
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the client writes, read back by the server's parser in pieces of any size, gives
    /// one answer per request, however the stream is cut.
    #[test]
    fn the_wire_format_round_trips_through_the_parser() {
        let sizes = [1u64, 8, 9, 1448, 300_000, 3];
        let mut unsent: VecDeque<(u64, u64)> = sizes.iter().map(|&s| (s, 0)).collect();
        let mut stream = Vec::new();
        let mut buf = Vec::new();
        while !unsent.is_empty() {
            fill(&unsent, &mut buf);
            // A short write, as a full socket buffer makes.
            let n = buf.len().min(1000);
            stream.extend_from_slice(&buf[..n]);
            consume(&mut unsent, n as u64);
        }
        assert_eq!(stream.len() as u64, sizes.iter().map(|&s| wire_bytes(s)).sum::<u64>());
        for cut in [1usize, 7, 1000, 65536] {
            let mut s = ServerConn {
                sock: dummy_stream(),
                header: [0; 8],
                have: 0,
                left: 0,
                owed: 0,
                closed: false,
                ready: true,
            };
            for piece in stream.chunks(cut) {
                s.take(piece);
            }
            assert_eq!(s.owed, sizes.len() as u64, "cut {cut}");
            assert_eq!((s.have, s.left), (0, 0), "nothing half-read");
        }
    }

    /// A connected socket for the parser's struct; the parser never touches it.
    fn dummy_stream() -> TcpStream {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        TcpStream::connect(l.local_addr().unwrap()).unwrap()
    }

    #[test]
    fn merged_ids_follow_arrival_order() {
        let r = |id, flow, start| Request { id, flow, size: 1, start, end: None };
        let got = merge(vec![vec![r(0, 0, 5), r(1, 1, 20)], vec![r(0, 7, 10)]]);
        assert_eq!(got.iter().map(|r| (r.id, r.flow)).collect::<Vec<_>>(), [(0, 0), (1, 7), (2, 1)]);
    }
}

//! Thin, checked wrappers over the system calls the emulator needs (libc only).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// Turns a libc return value into an `io::Result`, reading errno on −1.
pub fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// As [`cvt`] for calls returning a byte count.
pub fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// CLOCK_MONOTONIC in ns. Every thread of a run reads the same clock, so send and arrival
/// times taken on different threads need no synchronisation.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Run-relative time: ns since the run's origin, as the packet records count it.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: u64,
}

impl Clock {
    pub fn start() -> Clock {
        Clock { origin: mono_ns() }
    }
    pub fn now(&self) -> u64 {
        mono_ns().saturating_sub(self.origin)
    }
    /// The monotonic-clock reading of run time `t`.
    pub fn mono(&self, t: u64) -> u64 {
        self.origin + t
    }
    /// Sleeps until run time `t`.
    pub fn sleep_until(&self, t: u64) {
        sleep_until_mono(self.mono(t));
    }
}

/// Asks for 1 ns timer slack on this thread: the default 50 µs would make every timed wake-up
/// up to 50 µs late, more than a 1500-byte packet's serialisation time at 1 Gbit/s.
pub fn set_timer_slack_1ns() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer argument and touches no memory.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Pins the calling thread to one CPU; errors are ignored by callers that treat pinning as a
/// hint (a restricted cpuset must not stop a run).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        libc::CPU_SET(cpu, &mut set);
        cvt(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)).map(drop)
    }
}

/// Gives the calling thread real-time (SCHED_FIFO) priority `prio`, so a woken path thread
/// preempts ordinary work at once instead of waiting for a time slice to end.
pub fn set_realtime(prio: i32) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }).map(drop)
}

/// Keeps a real-time thread from starving the CPU's ordinary tasks. A SCHED_FIFO thread that
/// never blocks gets stopped by the kernel for tens of ms so that they can run (RT throttling,
/// the fair server); so after `BUSY_MAX` without blocking it blocks for `PAUSE` of its own
/// accord (9 % of the CPU, above the kernel's 5 % reservation): a bounded, known lateness
/// instead of an unbounded one.
pub struct RtDuty {
    enabled: bool,
    busy_since: u64,
}

impl RtDuty {
    const BUSY_MAX_NS: u64 = 1_000_000;
    const PAUSE_NS: u64 = 100_000;

    /// Tries to make the calling thread SCHED_FIFO at `prio`; stays ordinary if not allowed.
    pub fn start(prio: Option<i32>, clock: &Clock) -> RtDuty {
        let enabled = prio.is_some_and(|p| set_realtime(p).is_ok());
        RtDuty { enabled, busy_since: clock.now() }
    }

    pub fn realtime(&self) -> bool {
        self.enabled
    }

    /// The thread just returned from a blocking wait.
    pub fn blocked(&mut self, clock: &Clock) {
        self.busy_since = clock.now();
    }

    /// Called on each turn that did not block: pauses if the thread has run too long.
    pub fn turn(&mut self, clock: &Clock) {
        let now = clock.now();
        if self.enabled && now - self.busy_since > Self::BUSY_MAX_NS {
            clock.sleep_until(now + Self::PAUSE_NS);
            self.busy_since = clock.now();
        }
    }
}

/// Number of CPUs this thread may run on.
pub fn cpus_available() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a valid descriptor with integer arguments.
    unsafe {
        let flags = cvt(libc::fcntl(raw, libc::F_GETFL))?;
        cvt(libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK)).map(drop)
    }
}

/// Waits until `fd` is readable or `timeout_ns` passes (`None`: no limit). Returns whether the
/// descriptor is readable. Uses ppoll for its ns-resolution timeout; EINTR counts as a timeout.
pub fn wait_readable(fd: RawFd, timeout_ns: Option<u64>) -> io::Result<bool> {
    wait_fd(fd, libc::POLLIN, timeout_ns)
}

/// As [`wait_readable`] for any poll events (`POLLOUT` for writability); true when one of
/// `events` (or an error or hang-up, which the next call will report) is pending.
pub fn wait_fd(fd: RawFd, events: libc::c_short, timeout_ns: Option<u64>) -> io::Result<bool> {
    let mut pfd = libc::pollfd { fd, events, revents: 0 };
    let ts = timeout_ns.map(|t| libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one valid pollfd; tsp is null or points at a live timespec.
    let n = unsafe { libc::ppoll(&mut pfd, 1, tsp, std::ptr::null()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    Ok(n > 0 && pfd.revents & (events | libc::POLLERR | libc::POLLHUP) != 0)
}

/// Waits until any of `pfds` (built with `POLLIN`) is readable or `timeout_ns` passes.
pub fn wait_any_readable(pfds: &mut [libc::pollfd], timeout_ns: u64) -> io::Result<()> {
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: pfds is a valid array of pfds.len() pollfds; ts is a live timespec.
    let n = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Sleeps until the monotonic clock reaches `deadline_mono` (ns), absolute so that time spent
/// being scheduled does not add up.
pub fn sleep_until_mono(deadline_mono: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_mono / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_mono % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec; EINTR just ends the sleep early, which callers tolerate.
    unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
}

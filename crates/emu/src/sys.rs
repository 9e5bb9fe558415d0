//! Thin, checked wrappers over the system calls the emulator needs, through `nix`; raw `libc`
//! only where nix has no wrapper (each such place says so).

use nix::errno::Errno;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::sys::time::TimeSpec;
use nix::time::{clock_gettime, clock_nanosleep, ClockId, ClockNanosleepFlags};
use nix::unistd::Pid;
use std::io;
use std::os::fd::AsFd;
use std::time::Duration;

/// A failed call's errno as an `io::Error` saying what failed (`"{what}: {error}"`), the error
/// worded as std words OS errors ("Operation not permitted (os error 1)").
pub fn os_error(what: impl std::fmt::Display) -> impl FnOnce(Errno) -> io::Error {
    move |e| {
        let e = io::Error::from(e);
        io::Error::new(e.kind(), format!("{what}: {e}"))
    }
}

/// A `timespec` of `ns` nanoseconds (relative or, for the monotonic clock, absolute).
#[inline]
fn timespec(ns: u64) -> TimeSpec {
    TimeSpec::from_duration(Duration::from_nanos(ns))
}

/// CLOCK_MONOTONIC in ns. Every thread of a run reads the same clock, so send and arrival
/// times taken on different threads need no synchronisation.
#[inline]
pub fn mono_ns() -> u64 {
    // CLOCK_MONOTONIC always exists on Linux and the out-pointer is nix's own: it cannot fail.
    let ts = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is readable");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// CPU time this thread has used (user + system), ns.
pub fn thread_cpu_ns() -> u64 {
    cpu_ns(ClockId::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time the whole process has used (user + system, all threads), ns.
pub fn process_cpu_ns() -> u64 {
    cpu_ns(ClockId::CLOCK_PROCESS_CPUTIME_ID)
}

fn cpu_ns(id: ClockId) -> u64 {
    // Both CPU-time clocks exist on every Linux since 2.6.12; a failure would leave 0 (no figure).
    clock_gettime(id).map_or(0, |ts| ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
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
    // Only fails for a value the kernel does not take; 1 ns is always valid.
    let _ = nix::sys::prctl::set_timerslack(1);
}

/// Pins the calling thread to one CPU; errors are ignored by callers that treat pinning as a
/// hint (a restricted cpuset must not stop a run).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    let mut set = CpuSet::new();
    // EINVAL (InvalidInput) for a CPU number past the set's size.
    set.set(cpu)?;
    // Pid 0: the calling thread.
    Ok(sched_setaffinity(Pid::from_raw(0), &set)?)
}

/// Keeps the calling thread, and every thread and process it starts meanwhile (they inherit
/// the mask), on the CPU it is running on; dropping it gives the calling thread back the CPUs
/// it had (the emulator's caller may be a Python interpreter's main thread).
pub struct OneCpu {
    before: CpuSet,
}

impl OneCpu {
    pub fn hold() -> io::Result<OneCpu> {
        let before = sched_getaffinity(Pid::from_raw(0))?;
        // SAFETY: sched_getcpu has no arguments.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 {
            return Err(io::Error::last_os_error());
        }
        pin_to_cpu(cpu as usize)?;
        Ok(OneCpu { before })
    }
}

impl Drop for OneCpu {
    fn drop(&mut self) {
        let _ = sched_setaffinity(Pid::from_raw(0), &self.before);
    }
}

/// Gives the calling thread real-time (SCHED_FIFO) priority `prio`, so a woken path thread
/// preempts ordinary work at once instead of waiting for a time slice to end.
pub fn set_realtime(prio: i32) -> io::Result<()> {
    // Raw libc: nix has no sched_setscheduler.
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param.
    Errno::result(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) })?;
    Ok(())
}

/// Lets the other runnable threads of the caller's real-time priority run before it goes on
/// (ordinary threads still wait until it sleeps).
pub fn yield_cpu() {
    // nix has no sched_yield; it cannot fail on Linux.
    // SAFETY: no arguments.
    unsafe { libc::sched_yield() };
}

/// Keeps a real-time thread from starving the CPU's ordinary tasks. A SCHED_FIFO thread that
/// uses more than 95 % of a CPU (`sched_rt_runtime_us`) gets stopped by the kernel for the
/// rest of the second — tens of ms — so that they can run (RT throttling, the fair server). So
/// once per `WINDOW` the thread compares the CPU time it used with the time that passed, and
/// if it was busy for more than `BUSY_SHARE` of it, it sleeps `PAUSE` of its own accord: a
/// bounded, known lateness instead of an unbounded one. Wall time alone cannot tell: a wait
/// that finds a descriptor already readable returns at once, without ever leaving the CPU. But
/// the CPU clock is a system call (~1 µs here, 1 k/s), so a thread that reports how long its
/// waits lasted ([`RtDuty::waited`]) skips it in a window where it clearly slept: its CPU time
/// cannot exceed the window less the time spent in waits.
pub struct RtDuty {
    enabled: bool,
    mark_wall: u64,
    /// The thread's CPU clock at `mark_wall`; None when that window's was not read (it slept).
    mark_cpu: Option<u64>,
    /// Wall time spent in waits since `mark_wall`, ns, as reported by `waited`.
    waited: u64,
}

impl RtDuty {
    const WINDOW_NS: u64 = 1_000_000;
    const BUSY_SHARE: f64 = 0.9;
    const PAUSE_NS: u64 = 100_000;
    /// Below this share of a window spent outside waits, the CPU clock is not read. Far below
    /// `BUSY_SHARE`: a wait's own entry and exit (context switch, VM exits: ~10 µs) are CPU
    /// time counted as waiting, ~4 % of a CPU at 4 k wake-ups/s.
    const SURELY_IDLE_SHARE: f64 = 0.5;

    /// Tries to make the calling thread SCHED_FIFO at `prio`; stays ordinary if not allowed.
    pub fn start(prio: Option<i32>, clock: &Clock) -> RtDuty {
        let enabled = prio.is_some_and(|p| set_realtime(p).is_ok());
        RtDuty { enabled, mark_wall: clock.now(), mark_cpu: Some(thread_cpu_ns()), waited: 0 }
    }

    pub fn realtime(&self) -> bool {
        self.enabled
    }

    /// The thread just returned from a wait (which may or may not have slept).
    pub fn blocked(&mut self, clock: &Clock) {
        self.turn(clock);
    }

    /// The thread spent `ns` of wall time in a wait (it may have slept for all of it).
    pub fn waited(&mut self, ns: u64) {
        self.waited += ns;
    }

    /// Called on every turn of the thread's loop: pauses if the thread has been too busy.
    pub fn turn(&mut self, clock: &Clock) {
        self.turn_at(clock, clock.now());
    }

    /// `turn` with the time already read (`now`, from `clock`); returns the time after it
    /// (later than `now` if it paused).
    pub fn turn_at(&mut self, clock: &Clock, now: u64) -> u64 {
        if !self.enabled {
            return now;
        }
        let wall = now.saturating_sub(self.mark_wall);
        if wall < Self::WINDOW_NS {
            return now;
        }
        let waited = std::mem::take(&mut self.waited);
        if (wall.saturating_sub(waited)) as f64 <= Self::SURELY_IDLE_SHARE * wall as f64 {
            self.mark_wall = now;
            self.mark_cpu = None;
            return now;
        }
        // The thread's CPU clock is a system call (the wall clock is not): read it once per
        // window unless the thread paused. A window that starts after one that slept has no
        // CPU reading to compare with: it only takes one, and the next window judges.
        let cpu = thread_cpu_ns();
        let busy = self.mark_cpu.is_some_and(|m| (cpu.saturating_sub(m)) as f64 > Self::BUSY_SHARE * wall as f64);
        if busy {
            clock.sleep_until(now + Self::PAUSE_NS);
            self.mark_wall = clock.now();
            self.mark_cpu = Some(thread_cpu_ns());
            self.mark_wall
        } else {
            self.mark_wall = now;
            self.mark_cpu = Some(cpu);
            now
        }
    }
}

/// Number of CPUs this thread may run on.
pub fn cpus_available() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Waits until `fd` is readable or `timeout_ns` passes (`None`: no limit). Returns whether the
/// descriptor is readable. Uses ppoll for its ns-resolution timeout; EINTR counts as a timeout.
pub fn wait_readable(fd: impl AsFd, timeout_ns: Option<u64>) -> io::Result<bool> {
    wait_fd(fd, PollFlags::POLLIN, timeout_ns)
}

/// As [`wait_readable`] for any poll events (`POLLOUT` for writability); true when one of
/// `events` (or an error or hang-up, which the next call will report) is pending.
pub fn wait_fd(fd: impl AsFd, events: PollFlags, timeout_ns: Option<u64>) -> io::Result<bool> {
    let mut pfd = [PollFd::new(fd.as_fd(), events)];
    match ppoll(&mut pfd, timeout_ns.map(timespec), None) {
        // The kernel reports only `events`, POLLERR, POLLHUP and POLLNVAL, all known to nix, so
        // `revents` is always Some here.
        Ok(n) => {
            Ok(n > 0
                && pfd[0].revents().is_some_and(|r| r.intersects(events | PollFlags::POLLERR | PollFlags::POLLHUP)))
        }
        Err(Errno::EINTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Waits for any of a fixed set of descriptors to become readable, or for a timeout, with
/// epoll: its registration persists from one wait to the next, where `ppoll` sets up and tears
/// down a wait on every descriptor at every call (measured on this VM: most of the cost of a
/// poll that sleeps, apart from the sleep itself).
///
/// Raw libc: nix's `Epoll::wait` takes its timeout in ms, and the path thread needs ns.
pub struct Readiness {
    ep: std::os::fd::OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Readiness {
    /// Watches `fds` for input; `wait` reports them by their index here.
    pub fn new(fds: &[std::os::fd::RawFd]) -> io::Result<Readiness> {
        use std::os::fd::FromRawFd;
        // SAFETY: no pointers; the result is checked before use.
        let ep = Errno::result(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })
            .map_err(os_error("creating an epoll instance"))?;
        // SAFETY: `ep` is a new descriptor that nothing else owns.
        let ep = unsafe { std::os::fd::OwnedFd::from_raw_fd(ep) };
        for (i, &fd) in fds.iter().enumerate() {
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: i as u64 };
            // SAFETY: `ev` is a valid epoll_event that outlives the call.
            Errno::result(unsafe {
                libc::epoll_ctl(std::os::fd::AsRawFd::as_raw_fd(&ep), libc::EPOLL_CTL_ADD, fd, &mut ev)
            })
            .map_err(os_error("watching a device with epoll"))?;
        }
        Ok(Readiness { ep, events: vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().max(1)] })
    }

    /// Waits until a watched descriptor is readable or `timeout_ns` passes (0: only looks);
    /// sets `readable[i]` for each descriptor found readable and returns how many. A signal,
    /// which ends the wait early, counts as every descriptor readable (their reads then say
    /// EAGAIN), so that an interrupted wait is never taken for the timer.
    pub fn wait(&mut self, readable: &mut [bool], timeout_ns: u64) -> io::Result<usize> {
        let ts = timespec(timeout_ns);
        // SAFETY: `events` holds `events.len()` entries; `ts` is a live timespec.
        let n = unsafe {
            libc::epoll_pwait2(
                std::os::fd::AsRawFd::as_raw_fd(&self.ep),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                ts.as_ref(),
                std::ptr::null(),
            )
        };
        readable.iter_mut().for_each(|r| *r = false);
        match Errno::result(n) {
            Ok(n) => {
                for ev in &self.events[..n as usize] {
                    if let Some(r) = readable.get_mut(ev.u64 as usize) {
                        *r = true;
                    }
                }
                Ok(n as usize)
            }
            Err(Errno::EINTR) => {
                readable.iter_mut().for_each(|r| *r = true);
                Ok(readable.len())
            }
            Err(e) => Err(os_error("waiting on the devices")(e)),
        }
    }
}

/// Waits until any of `pfds` (built with `POLLIN`) is readable or `timeout_ns` passes (0: only
/// looks); returns how many are ready, each with its `revents` set. A signal, which ends the
/// wait early, counts as every descriptor ready (their reads then say EAGAIN), so that an
/// interrupted wait is never taken for the timer.
///
/// Raw libc: the path threads keep their descriptors as a `libc::pollfd` array, which nix's
/// `ppoll` (taking its own `PollFd`, each borrowing a descriptor) cannot be handed without
/// rebuilding it on every wait.
#[inline]
pub fn wait_any_readable(pfds: &mut [libc::pollfd], timeout_ns: u64) -> io::Result<usize> {
    let ts = timespec(timeout_ns);
    // SAFETY: pfds is a valid array of pfds.len() pollfds; ts is a live timespec.
    let n = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ts.as_ref(), std::ptr::null()) };
    match Errno::result(n) {
        Ok(n) => Ok(n as usize),
        Err(Errno::EINTR) => {
            for p in pfds.iter_mut() {
                p.revents = libc::POLLIN;
            }
            Ok(pfds.len())
        }
        Err(e) => Err(e.into()),
    }
}

/// Sleeps until the monotonic clock reaches `deadline_mono` (ns), absolute so that time spent
/// being scheduled does not add up.
pub fn sleep_until_mono(deadline_mono: u64) {
    // EINTR just ends the sleep early, which callers tolerate.
    let _ = clock_nanosleep(ClockId::CLOCK_MONOTONIC, ClockNanosleepFlags::TIMER_ABSTIME, &timespec(deadline_mono));
}

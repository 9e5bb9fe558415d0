//! External programs inside a namespace, started so that nothing can outlive the run.
//!
//! Each command runs as `unshare --pid --fork --kill-child -- sh -c CMD`, entered into the
//! side's network namespace before exec, with PR_SET_PDEATHSIG = SIGKILL. That makes a chain:
//! the run's process dies (even by SIGKILL) → the kernel kills `unshare` → `unshare`'s child,
//! the first process of a fresh PID namespace, gets its own death signal → the kernel kills
//! every process in that PID namespace, however deep the program's process tree. A normal stop
//! kills `unshare` the same way. (PDEATHSIG follows the *thread* that forked, so commands are
//! spawned from the run's main thread, which lives until the end.)

use crate::netns::NetNs;
use nix::sched::{setns, CloneFlags};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::Signal;
use nix::unistd::{getpid, getppid, setpgid, Pid};
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Bytes of each output stream kept for error messages.
const TAIL: usize = 4096;

/// A running external command; killed (with its whole process tree) when dropped.
pub struct Program {
    pub label: String,
    child: Child,
    output: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    finished: Option<ExitStatus>,
}

/// Keeps the last `TAIL` bytes a stream produced.
fn keep_tail(mut stream: impl Read + Send + 'static, sink: Arc<Mutex<Vec<u8>>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
            s.extend_from_slice(&buf[..n]);
            let excess = s.len().saturating_sub(TAIL);
            s.drain(..excess);
        }
    })
}

impl Program {
    /// Starts `command` (a shell command line) in `ns` with extra environment variables.
    pub fn spawn(label: &str, ns: &NetNs, command: &str, env: &[(&str, String)]) -> io::Result<Program> {
        // Inherited across fork (it only closes on exec), so the child can enter it before exec.
        let ns_fd: RawFd = ns.as_fd().as_raw_fd();
        let parent = getpid();
        let mut cmd = Command::new("unshare");
        cmd.args(["--pid", "--fork", "--kill-child", "--", "sh", "-c", command])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        // SAFETY: only async-signal-safe calls (setns, prctl, getppid, setpgid, _exit) run
        // between fork and exec; nix's wrappers around them neither allocate nor lock, and an
        // errno becomes an io::Error without allocating. The descriptor stays open in the
        // child until exec.
        unsafe {
            cmd.pre_exec(move || {
                setns(BorrowedFd::borrow_raw(ns_fd), CloneFlags::CLONE_NEWNET)?;
                // Cannot fail: SIGKILL is a valid signal.
                let _ = set_pdeathsig(Signal::SIGKILL);
                // The run may have died between fork and prctl; then nobody would kill us.
                if getppid() != parent {
                    // Raw libc: nix has no _exit, and std's exit is not safe after fork.
                    libc::_exit(1);
                }
                // Own process group: a Ctrl-C in the terminal reaches the run, which stops the
                // programs itself, rather than every program at once.
                // Best effort: a program in the run's group still works.
                let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("{label}: cannot start `unshare` (util-linux): {e}")))?;
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        if let Some(s) = child.stdout.take() {
            readers.push(keep_tail(s, output.clone()));
        }
        if let Some(s) = child.stderr.take() {
            readers.push(keep_tail(s, output.clone()));
        }
        Ok(Program { label: label.to_string(), child, output, readers, finished: None })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, if the program has ended.
    pub fn poll(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.finished.is_none() {
            self.finished = self.child.try_wait()?;
        }
        Ok(self.finished)
    }

    /// The end of what the program printed (stdout and stderr interleaved).
    pub fn output_tail(&self) -> String {
        let s = self.output.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&s).trim().to_string()
    }

    /// Says how a program that ended early ended.
    pub fn describe_exit(&self, status: ExitStatus) -> String {
        let how = match (status.code(), status.signal()) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            _ => "ended".to_string(),
        };
        let tail = self.output_tail();
        if tail.is_empty() {
            format!("{} {how} (it printed nothing)", self.label)
        } else {
            format!("{} {how}; its last output:\n{tail}", self.label)
        }
    }

    /// Kills the program's whole tree (via `unshare`, see the module comment) and reaps it.
    pub fn kill(&mut self) {
        if self.finished.is_none() {
            let _ = self.child.kill();
            self.finished = self.child.wait().ok();
        }
        for r in self.readers.drain(..) {
            // The pipes close when the last process of the tree is gone; the kernel kills the
            // PID namespace's processes right after `unshare`, so this does not wait long.
            let _ = r.join();
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        self.kill();
    }
}

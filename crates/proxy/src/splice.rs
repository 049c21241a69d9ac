//! Zero-copy response bodies (Linux `splice(2)`): the body of an HTTP/1.x upstream response
//! with a Content-Length, going to a cleartext HTTP/1.1 client, is moved from the upstream
//! socket to the client socket through a pipe owned by the client connection, without
//! passing through user space. The head is parsed and rewritten as usual; the framing is
//! unchanged (the client gets a Content-Length body), so the bytes on the wire are the
//! same as on the copying path.
//!
//! Ordering: bytes enter the pipe only when the client's output queue is empty, so what
//! the pipe holds always goes out before what is queued after it (the client side drains
//! the pipe first). Anything unsupported (`EINVAL`: a socket type splice refuses) falls
//! back to the copying path before a byte moved.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Most bytes moved into the pipe at once (the default pipe capacity).
const PIPE_MAX: usize = 64 * 1024;

/// Zero-copy state of an HTTP/1.x upstream connection's current response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zc {
    /// Copying path.
    Off,
    /// Eligible: the head is being read (in small reads, so that most of the body stays in
    /// the socket for `splice`).
    AwaitHead,
    /// A Content-Length body: `left` bytes of it are still in the upstream socket.
    Body {
        /// Body bytes not yet taken from the upstream.
        left: u64,
        /// The connection persists after the response (from its head).
        keep: bool,
        /// Some of the body was spliced (no way back to the copying path).
        spliced: bool,
    },
}

/// A non-blocking pipe and the bytes it holds.
#[derive(Debug)]
pub struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    /// Bytes in the pipe, not yet written to the client.
    pub len: usize,
}

fn splice(from: RawFd, to: RawFd, n: usize) -> io::Result<usize> {
    loop {
        #[allow(unsafe_code)] // splice(2) has no safe wrapper in std
        // SAFETY: plain descriptors, null offsets (sockets and pipes have none).
        let r = unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                n,
                libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
            )
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

impl Pipe {
    /// A new non-blocking, close-on-exec pipe.
    pub fn new() -> io::Result<Pipe> {
        let mut fds = [0 as libc::c_int; 2];
        #[allow(unsafe_code)] // pipe2(2) has no safe wrapper in std
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        #[allow(unsafe_code)]
        // SAFETY: both descriptors were just opened and are owned by nothing else.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Pipe { r, w, len: 0 })
    }

    /// Moves up to `max` bytes (at most the pipe's capacity) from socket `from` into the
    /// pipe. `Ok(0)`: the peer closed.
    pub fn fill_from(&mut self, from: RawFd, max: u64) -> io::Result<usize> {
        let n = usize::try_from(max).unwrap_or(PIPE_MAX).min(PIPE_MAX);
        let got = splice(from, self.w.as_raw_fd(), n)?;
        self.len += got;
        Ok(got)
    }

    /// Writes what the pipe holds to socket `to` until it is empty or the socket would
    /// block (`Ok(false)`: bytes remain).
    pub fn drain_to(&mut self, to: RawFd) -> io::Result<bool> {
        while self.len > 0 {
            match splice(self.r.as_raw_fd(), to, self.len) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.len -= n.min(self.len),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// Whether zero-copy bodies are used: on unless `H2LAB_PROXY_SPLICE=0` (a diagnostic switch
/// for before/after measurements; what the proxy sends is the same either way).
pub fn enabled() -> bool {
    std::env::var_os("H2LAB_PROXY_SPLICE").map_or(true, |v| v != "0")
}

/// What [`move_body`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// One side would block (or has nothing): driven again by its readiness.
    Blocked,
    /// The whole body left the upstream (some may still wait in the pipe): the response
    /// is complete; `keep`: the upstream connection persists.
    Done {
        /// The connection persists after the response.
        keep: bool,
    },
    /// The upstream closed (or failed) before the end of the body.
    UpstreamEnd,
    /// Writing to the client failed: it is gone.
    ClientGone,
    /// Not possible here: use the copying path (nothing was moved).
    Unsupported,
}

/// Moves response body bytes from the upstream socket `ufd` to the client `f` while both
/// sides take them: the pipe first, then the client's queued output, then more from the
/// upstream. `zc` is updated; `want_read` is cleared when the upstream would block.
pub fn move_body(
    zc: &mut Zc,
    want_read: &mut bool,
    ufd: RawFd,
    f: &mut crate::front::Front,
) -> Moved {
    let Zc::Body {
        mut left,
        keep,
        mut spliced,
    } = *zc
    else {
        return Moved::Unsupported;
    };
    let Some(cfd) = f.io.plain_fd() else {
        return Moved::Unsupported;
    };
    if f.pipe.is_none() {
        match Pipe::new() {
            Ok(p) => f.pipe = Some(p),
            Err(_) => return Moved::Unsupported,
        }
    }
    let Some(p) = f.pipe.as_mut() else {
        return Moved::Unsupported;
    };
    loop {
        if left == 0 {
            *zc = Zc::Off;
            return Moved::Done { keep };
        }
        match p.drain_to(cfd) {
            Ok(true) => {}
            Ok(false) => return Moved::Blocked,
            Err(_) => return Moved::ClientGone,
        }
        match f.io.flush(&mut f.out) {
            Ok(false) => {}
            Ok(true) => return Moved::Blocked,
            Err(_) => return Moved::ClientGone,
        }
        if !*want_read {
            return Moved::Blocked;
        }
        match p.fill_from(ufd, left) {
            Ok(0) => return Moved::UpstreamEnd,
            Ok(n) => {
                left -= n as u64;
                spliced = true;
                *zc = Zc::Body {
                    left,
                    keep,
                    spliced: true,
                };
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                *want_read = false;
                return Moved::Blocked;
            }
            Err(e) if !spliced && e.raw_os_error() == Some(libc::EINVAL) => {
                *zc = Zc::Off;
                return Moved::Unsupported;
            }
            Err(_) => return Moved::UpstreamEnd,
        }
    }
}

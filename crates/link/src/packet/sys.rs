//! The system calls of packet mode, all in one place: network namespaces held only by open
//! file descriptors, TUN devices, interface configuration by `ioctl` (and netlink where a user
//! namespace refuses the ioctl), per-namespace sysctls.
//!
//! Nothing here is bound to a path in the file system (no `ip netns add`): a namespace lives
//! as long as a descriptor of it (or a thread or process inside it) does, so everything
//! vanishes with the process, whatever ends it.
#![allow(unsafe_code)] // namespaces, TUN and interface ioctls have no safe wrapper in std

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `errno` of the last failed call as an `io::Error`.
fn last() -> io::Error {
    io::Error::last_os_error()
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(last())
    } else {
        Ok(r)
    }
}

/// Moves the calling thread into a new, empty network namespace and returns a descriptor of
/// it (`/proc/thread-self/ns/net`).
pub fn unshare_net() -> io::Result<OwnedFd> {
    // SAFETY: unshare has no memory effects; it changes only the calling thread's namespace.
    check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
    Ok(File::open("/proc/thread-self/ns/net")?.into())
}

/// The calling thread's current network namespace, as a descriptor.
pub fn current_net() -> io::Result<OwnedFd> {
    Ok(File::open("/proc/thread-self/ns/net")?.into())
}

/// Moves the calling thread into the network namespace `ns`.
pub fn enter_net(ns: RawFd) -> io::Result<()> {
    // SAFETY: setns changes only the calling thread's namespace; `ns` is a descriptor the
    // caller keeps open for the duration of the call.
    check(unsafe { libc::setns(ns, libc::CLONE_NEWNET) })?;
    Ok(())
}

/// The inode number of the namespace `ns` refers to (as in `net:[4026532...]`).
pub fn ns_inode(ns: &OwnedFd) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let f = File::from(ns.try_clone()?);
    Ok(f.metadata()?.ino())
}

/// For a child about to `exec`: joins `ns` and asks for SIGKILL when the parent thread dies,
/// so no command outlives the link. Only async-signal-safe calls (used in `pre_exec`).
pub fn child_enter(ns: RawFd) -> io::Result<()> {
    // SAFETY: prctl and setns are async-signal-safe system calls with no memory effects.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
        check(libc::setns(ns, libc::CLONE_NEWNET))?;
    }
    Ok(())
}

fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    let bytes = name.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name too long",
        ));
    }
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(req)
}

/// Creates the TUN device `name` (IP packets, no packet-information header) in the calling
/// thread's network namespace; the device lives as long as the returned descriptor.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: a plain open of a NUL-terminated path.
    let fd = check(unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = ifreq(name)?;
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads (and writes back the name into) the ifreq we pass.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) })?;
    Ok(fd)
}

/// A datagram socket in the calling thread's namespace, for interface ioctls.
fn ctl_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket() has no memory effects.
    let fd =
        check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(ip: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; the kernel reads it as sockaddr_in.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

/// Configures interface `name` in the calling thread's namespace: address and prefix, MTU and
/// transmit queue length (each when given), and up.
pub fn configure(
    name: &str,
    addr: Option<(Ipv4Addr, u8)>,
    mtu: Option<u32>,
    txqueuelen: Option<u32>,
) -> io::Result<()> {
    let sock = ctl_socket()?;
    let s = sock.as_raw_fd();
    if let Some((ip, prefix)) = addr {
        let mut req = ifreq(name)?;
        req.ifr_ifru.ifru_addr = sockaddr(ip);
        // SAFETY: SIOCSIFADDR reads the ifreq we pass.
        check(unsafe { libc::ioctl(s, libc::SIOCSIFADDR as _, &mut req) })?;
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        let mut req = ifreq(name)?;
        req.ifr_ifru.ifru_netmask = sockaddr(Ipv4Addr::from(mask));
        // SAFETY: as above.
        check(unsafe { libc::ioctl(s, libc::SIOCSIFNETMASK as _, &mut req) })?;
    }
    if let Some(mtu) = mtu {
        let mut req = ifreq(name)?;
        req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
        // SAFETY: as above.
        check(unsafe { libc::ioctl(s, libc::SIOCSIFMTU as _, &mut req) })?;
    }
    if let Some(qlen) = txqueuelen {
        // By netlink, not SIOCSIFTXQLEN: inside a user namespace the kernel refuses that
        // ioctl (EPERM) while it accepts the netlink request from the namespace's root.
        super::netlink::set_txqueuelen(name, qlen)?;
    }
    let mut req = ifreq(name)?;
    // SAFETY: SIOCGIFFLAGS writes the flags into the ifreq we pass.
    check(unsafe { libc::ioctl(s, libc::SIOCGIFFLAGS as _, &mut req) })?;
    // SAFETY: the kernel just filled ifru_flags.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    req.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    // SAFETY: SIOCSIFFLAGS reads the ifreq we pass.
    check(unsafe { libc::ioctl(s, libc::SIOCSIFFLAGS as _, &mut req) })?;
    Ok(())
}

/// Sends SIGKILL to the process group `pgid` (a group this process created for a child it
/// started, with `CommandExt::process_group(0)`: the child's pid).
pub fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    if pgid > 1 {
        // SAFETY: kill() has no memory effects; a negative pid names a process group.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// Reads a sysctl of the calling thread's network namespace (`net/ipv4/...`).
pub fn read_sysctl(key: &str) -> io::Result<String> {
    let mut s = String::new();
    File::open(format!("/proc/sys/{key}"))?.read_to_string(&mut s)?;
    Ok(s.trim().to_owned())
}

/// Writes a sysctl of the calling thread's network namespace.
pub fn write_sysctl(key: &str, value: &str) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/sys/{key}"))?
        .write_all(value.as_bytes())
}

/// Reads one packet; `Ok(None)` when none is waiting.
pub fn read_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = last();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(n as usize))
}

/// Writes one packet; `false` if the device refused it.
pub fn write_packet(fd: RawFd, buf: &[u8]) -> bool {
    // SAFETY: `buf` is valid for `buf.len()` bytes of reads.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    n == buf.len() as isize
}

/// `CLOCK_MONOTONIC` now, in ns (the clock of [`arm_timer`]'s deadlines).
pub fn mono_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a live timespec; CLOCK_MONOTONIC always exists.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t);
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A timer descriptor on `CLOCK_MONOTONIC`, readable when its deadline has passed.
pub fn timerfd() -> io::Result<OwnedFd> {
    // SAFETY: timerfd_create has no memory effects.
    let fd = check(unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Arms `fd` to expire at the absolute `CLOCK_MONOTONIC` time `at_ns` (`TFD_TIMER_ABSTIME`:
/// no drift from the time spent between reading the clock and arming); 0 disarms it.
pub fn arm_timer(fd: RawFd, at_ns: u64) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: (at_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (at_ns % 1_000_000_000) as libc::c_long,
        },
    };
    // SAFETY: `spec` is a live itimerspec; the old value is not asked for.
    check(unsafe {
        libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
    })
    .map(drop)
}

/// An eventfd that wakes the link thread.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd() has no memory effects.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Signals an eventfd.
pub fn wake(fd: RawFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes from a local buffer.
    unsafe {
        libc::write(fd, one.as_ptr().cast(), 8);
    }
}

/// Waits until one of `fds` is readable or `timeout_ns` passes (`None`: no timeout). Returns
/// the readiness of each (`revents != 0`).
pub fn poll(fds: &[RawFd], timeout_ns: Option<u64>, ready: &mut [bool]) -> io::Result<()> {
    let mut p = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; 4];
    for (slot, &fd) in p.iter_mut().zip(fds) {
        slot.fd = fd;
        slot.events = libc::POLLIN;
    }
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `p` holds `fds.len()` (at most 4) initialized pollfds; `tp` is null or points at
    // a live timespec.
    let rc = unsafe {
        libc::ppoll(
            p.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tp,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        let e = last();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    for (r, slot) in ready.iter_mut().zip(p.iter()) {
        *r = rc > 0 && slot.revents != 0;
    }
    Ok(())
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// Enters a new user namespace mapping the current user (and group) to root inside, as
/// `unshare -r` does. Must run before the process starts any thread.
pub fn enter_user_namespace() -> io::Result<()> {
    // SAFETY: these return ids and cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // SAFETY: unshare has no memory effects (it fails with EINVAL in a threaded process).
    check(unsafe { libc::unshare(libc::CLONE_NEWUSER) })?;
    let _ = std::fs::write("/proc/self/setgroups", "deny");
    std::fs::write("/proc/self/uid_map", format!("0 {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("0 {gid} 1"))?;
    Ok(())
}

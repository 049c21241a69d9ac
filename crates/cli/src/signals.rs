//! Signal handling for every sub-command, in one place.
//!
//! Two shapes: a run that polls a [`StopFlag`] (`bench`, `compare`, `link`) has SIGINT/SIGTERM
//! set the flag ([`stop_on_signals`]); a server that blocks until told to stop (`serve`,
//! `proxy`) waits on a [`SignalPipe`]. In both, where noted, a second SIGINT/SIGTERM while the
//! first is being handled exits at once with [`EXIT_INTERRUPTED`].

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use h2lab_engine::StopFlag;
use signal_hook::consts::{SIGINT, SIGTERM};

/// Exit status of an interrupted run (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// SIGINT/SIGTERM set the stop flag; a second signal while the flag is set exits at once
/// with [`EXIT_INTERRUPTED`].
pub fn stop_on_signals(stop: &StopFlag) -> io::Result<()> {
    exit_on_second(&stop.0)
}

/// Registers, for SIGINT and SIGTERM, an exit with [`EXIT_INTERRUPTED`] when `seen` is already
/// set, then setting `seen`. Registration order is run order: the exit check sees the flag of
/// an earlier signal only.
fn exit_on_second(seen: &Arc<AtomicBool>) -> io::Result<()> {
    for sig in [SIGINT, SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(
            sig,
            i32::from(EXIT_INTERRUPTED),
            Arc::clone(seen),
        )?;
        signal_hook::flag::register(sig, Arc::clone(seen))?;
    }
    Ok(())
}

/// Signals write a byte to a socket pair; [`SignalPipe::wait`] blocks on the other end.
pub struct SignalPipe {
    rx: UnixStream,
}

impl SignalPipe {
    /// SIGINT and SIGTERM; a second one while the first is being handled exits at once
    /// ([`EXIT_INTERRUPTED`]).
    pub fn stop_signals() -> io::Result<SignalPipe> {
        let seen = Arc::new(AtomicBool::new(false));
        exit_on_second(&seen)?;
        SignalPipe::on(&[SIGINT, SIGTERM])
    }

    /// Any of `signals` (signal-hook's numbers), with no other action.
    pub fn on(signals: &[i32]) -> io::Result<SignalPipe> {
        let (rx, tx) = UnixStream::pair()?;
        for &sig in signals {
            signal_hook::low_level::pipe::register(sig, tx.try_clone()?)?;
        }
        Ok(SignalPipe { rx })
    }

    /// Blocks until a signal arrives.
    pub fn wait(mut self) {
        self.next();
    }

    /// Blocks until the next signal: `true` when one arrived, `false` when the pipe failed.
    pub fn next(&mut self) -> bool {
        let mut b = [0u8; 1];
        loop {
            match self.rx.read(&mut b) {
                Ok(1) => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                _ => return false,
            }
        }
    }
}

//! A handle that stops a running server: sets a flag and wakes every event loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mio::Waker;

/// Cloneable stop handle. [`Shutdown::trigger`] makes every worker close its connections and
/// [`crate::run`] return. Triggering before `run` starts is allowed (it then returns at once).
#[derive(Clone, Default)]
pub struct Shutdown {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    flag: AtomicBool,
    wakers: Mutex<Vec<Arc<Waker>>>,
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shutdown")
            .field("triggered", &self.is_triggered())
            .finish()
    }
}

impl Shutdown {
    /// A fresh, untriggered handle.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the server to stop. Idempotent.
    pub fn trigger(&self) {
        self.inner.flag.store(true, Ordering::SeqCst);
        let wakers = self
            .inner
            .wakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for w in wakers.iter() {
            // A failed wake means the loop is already gone; nothing to do.
            let _ = w.wake();
        }
    }

    /// Whether [`Shutdown::trigger`] was called.
    pub fn is_triggered(&self) -> bool {
        self.inner.flag.load(Ordering::SeqCst)
    }

    /// Registers an event-loop waker; it is woken by `trigger` (and at once if already
    /// triggered). Public so that other event loops (`h2lab proxy`) stop on the same handle.
    pub fn register(&self, waker: Arc<Waker>) {
        self.inner
            .wakers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(waker.clone());
        if self.is_triggered() {
            let _ = waker.wake();
        }
    }
}

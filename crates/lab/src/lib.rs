//! h2lab's protocol lab: the experiments that answer "which protocol, for which payloads, at
//! which concurrency, on which network".
//!
//! - [`link`]: `h2lab link`, a user-space network emulator (added RTT, bandwidth, bounded
//!   queue, jitter, loss) that the other lab commands start in-process.
//!
//! `compare` (the protocol matrix) and `page` (browser-like page loads) live beside it.

pub mod link;

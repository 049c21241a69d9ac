//! The lab's experiment kernel: what `compare`, `page` and `upstream` share about measuring.
//!
//! - [`policy`]: [`RunPolicy`], every timing number (windows, warm-ups,
//!   settles, drain caps, cycle floors, retry factors, overheads) in one value, read by the
//!   measurers and by compare's cost model alike;
//! - [`order`]: the order of a round's runs (forwards and backwards in turn, rotated);
//! - [`rounds`]: a round of runs back to back with the machine's load judged over it and,
//!   with `strict`, busy rounds measured again; the one retry of a run that completed
//!   nothing; a whole engine run with that retry;
//! - [`pairs`]: the like-for-like pairs of protocols every experiment decides, as rows of
//!   one table;
//! - [`clocks`]: per-thread CPU clocks over a run's measured period;
//! - [`spell`]: slow spells, rounds in which every arm ran slower together;
//! - [`wall`]: where a run's wall time went;
//! - [`machine`]: facts about the machine and the clock for every report.
//!
//! Nothing here imports an experiment: `compare`, `page` and `upstream` import the kernel.

pub mod clocks;
pub mod machine;
pub mod order;
pub mod pairs;
pub mod policy;
pub mod rounds;
pub mod spell;
pub mod wall;

pub use machine::{timed, unix_now, Machine};
pub use policy::RunPolicy;

//! Real anchor servers (nghttpd, nginx, h2o, apache2) on loopback, on ports chosen at run time.
//!
//! - [`kind`]: which server ([`AnchorKind`]);
//! - [`builder`]: the options and the start, retried on fresh ports ([`AnchorBuilder`]);
//! - [`config`]: each server's command line and configuration file, from the templates;
//! - [`layout`]: the ports and sockets of one start attempt;
//! - [`ready`]: when a started server is ready (its own processes hold its listeners);
//! - [`running`]: the running server, its addresses and its process group ([`AnchorServer`]).

mod builder;
mod config;
mod kind;
mod layout;
mod ready;
mod running;

pub use builder::AnchorBuilder;
pub use kind::AnchorKind;
pub use running::AnchorServer;

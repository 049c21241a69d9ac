//! Shared support for the wire crate's integration tests.

pub mod corpus;

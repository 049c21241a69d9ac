//! Helpers of the experiments' tests: [`isolation`], the CPU-split assertion.

pub mod isolation;

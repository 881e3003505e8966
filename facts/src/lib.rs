//! # pitfall-facts
//!
//! The facts a manifest usually lacks, as sourced tables: what a GPU is
//! (`hardware`), and more to come. Each table is a data file under
//! `data/`, embedded at build time, parsed once on first use, and every
//! entry names the source it was read from.

pub mod hardware;

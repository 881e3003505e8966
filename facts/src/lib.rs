//! # pitfall-facts
//!
//! The facts a manifest usually lacks, as sourced tables: what a GPU is
//! ([`gpus`]), what a cloud instance holds ([`instances`]), what a model
//! is ([`models`]), and what a release was built with ([`releases`]).
//! Each table is a data file under `data/`, embedded at build time and
//! parsed once on first use; every entry names the source it was read
//! from ([`source::Source`]), and each table's tests check it is well
//! formed and sourced.

pub mod gpus;
pub mod instances;
pub mod models;
pub mod releases;
pub mod source;

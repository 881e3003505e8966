//! The server's one integration-test binary.

mod api;
mod as_of;
mod authz;
mod browser;
mod bundle;
mod common;
mod config_file;
mod contrast;
mod drain;
mod explain_corpus;
mod faults;
mod from_text;
mod hostile;
mod hostile_requests;
mod image;
mod live;
mod observability;
mod processes;
mod schemathesis;
mod shutdown;
mod slots;
mod soak;
mod startup;
mod store;
mod watches;
mod web;

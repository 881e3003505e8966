//! The server's one integration-test binary.

mod api;
mod bundle;
mod browser;
mod common;
mod contrast;
mod hostile;
mod live;
mod processes;
mod store;
mod web;

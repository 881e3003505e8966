//! The server's one integration-test binary.

mod common;
mod store;

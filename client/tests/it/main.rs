#![allow(unreachable_pub)] // test helpers are `pub` inside a test binary
//! The client against real servers: a `pitfall-server` in this process on
//! a loopback port (every typed call, with the server's own answers and
//! errors), and a scripted loopback server that answers 503, 429, closes
//! or stalls, to prove the retry, backoff and timeout logic on the wire.

mod api;
mod retry;
mod scripted;
mod server;

//! The API's wire types live in `pitfall-api`, shared with the client so
//! both ends use one definition; how the server's errors become the
//! envelope's body is `crate::error`'s.

pub use pitfall_api::types::*;

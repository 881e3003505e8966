//! The API's wire types live in `pitfall-api`, shared with the client so
//! both ends use one definition; the server adds only how its errors
//! become the envelope's body.

pub use pitfall_api::types::*;

use crate::error::AppError;

impl From<&AppError> for ErrorBody {
    fn from(e: &AppError) -> ErrorBody {
        e.describe().1
    }
}

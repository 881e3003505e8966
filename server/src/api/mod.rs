//! The v1 API's handlers, one module per resource, and its wire types.

pub mod accounts;
pub mod bundle;
pub mod check;
pub mod explain;
pub mod fix;
pub mod from_text;
pub mod ops;
pub mod review;
pub mod revisions;
pub mod rules;
pub mod schemas;
pub mod types;
pub mod watches;

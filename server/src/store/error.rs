//! The store's errors: what the caller did wrong (not found, conflict, not
//! an owner, a transition review does not allow) apart from the database's
//! own failures.

use super::VersionState;

/// A storage operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The rule, version, account or token does not exist; says which.
    #[error("{0}")]
    NotFound(String),
    /// The write contradicts what is stored (a version that exists with
    /// other bytes, a taken account name).
    #[error("{0}")]
    Conflict(String),
    /// An account that does not own a rule tried to publish a version of it.
    #[error("{account} is not an owner of rule {rule_id}")]
    NotOwner {
        /// The rule.
        rule_id: String,
        /// The account's name.
        account: String,
    },
    /// Review does not move a version from `from` to `to`.
    #[error("a {from} version cannot become {to}")]
    InvalidTransition {
        /// The current state.
        from: VersionState,
        /// The state asked for.
        to: VersionState,
    },
    /// The input is malformed (a sha256 that does not match the bytes, a
    /// version that is not semver, an unknown database URL).
    #[error("{0}")]
    Invalid(String),
    /// Stored data the store cannot read back (e.g. metadata JSON that no
    /// longer parses): a bug or a manual edit.
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    /// The database failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The migrations failed.
    #[error("migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// Shorthand for the store's results.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

//! Fresh databases for tests, on both backends: a SQLite file in a
//! temporary directory and a new PostgreSQL database, each removed when its
//! [`TestDb`] is dropped.
//!
//! PostgreSQL is required: when it is unreachable the test fails with how
//! to start it, rather than silently testing one backend.

#![allow(dead_code, unreachable_pub)] // each test module uses a part of this

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use pitfall_server::store::Backend;
use sqlx::{Connection, Executor, PgConnection};

/// The PostgreSQL server tests create their databases on (trust auth).
pub const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// Overrides [`DEFAULT_PG_URL`]: a URL of a database the tests may connect
/// to as a user allowed to `CREATE DATABASE`.
pub const PG_URL_VAR: &str = "PITFALL_TEST_DATABASE_URL";

/// A database that exists for one test.
#[derive(Debug)]
pub struct TestDb {
    backend: Backend,
    url: String,
    /// For SQLite: the directory holding the file (removed on drop).
    _dir: Option<tempfile::TempDir>,
    /// For PostgreSQL: the admin URL and the database to drop.
    pg: Option<(String, String)>,
}

impl TestDb {
    /// The URL to give `Store::connect`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Which backend this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }
}

/// A fresh, empty database on each backend: SQLite, then PostgreSQL.
pub async fn databases() -> Vec<TestDb> {
    vec![sqlite(), postgres().await]
}

/// A fresh SQLite database (a file that does not exist yet).
pub fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!("sqlite://{}", dir.path().join("registry.db").display());
    TestDb { backend: Backend::Sqlite, url, _dir: Some(dir), pg: None }
}

/// A fresh PostgreSQL database `pitfall_test_<unique>`.
pub async fn postgres() -> TestDb {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let admin = std::env::var(PG_URL_VAR).unwrap_or_else(|_| DEFAULT_PG_URL.to_owned());
    let mut conn = PgConnection::connect(&admin).await.unwrap_or_else(|e| {
        panic!(
            "PostgreSQL is unreachable at {admin} ({e}). The storage tests run on both backends. \
             Start it with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, \
             or set {PG_URL_VAR} to a server where this user may CREATE DATABASE."
        )
    });
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let name = format!(
        "pitfall_test_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        nanos
    );
    conn.execute(format!("CREATE DATABASE {name}").as_str()).await.expect("CREATE DATABASE");
    let _ = conn.close().await;
    let url = with_database(&admin, &name);
    TestDb { backend: Backend::Postgres, url, _dir: None, pg: Some((admin, name)) }
}

/// `admin` with its database name replaced by `name`.
fn with_database(admin: &str, name: &str) -> String {
    let (base, query) = admin.split_once('?').map_or((admin, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((admin, name)) = self.pg.take() else { return };
        // Drop runs inside the test's runtime, which cannot block on itself:
        // drop the database from a thread with a runtime of its own.
        // WITH (FORCE) ends connections the test's pools still hold.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                let mut conn = PgConnection::connect(&admin).await?;
                conn.execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                    .await?;
                conn.close().await?;
                Ok::<(), sqlx::Error>(())
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("warning: could not drop a test database: {dropped:?}");
        }
    }
}

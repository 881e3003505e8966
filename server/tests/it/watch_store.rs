//! Watch storage on both backends, without a server process: the
//! delivery log read as of one moment; watch secrets sealed under the
//! current key at start (from the clear, or the previous key after a
//! rotation) until the store records that none is left; the fact
//! index of every replica following deleted and replaced manifests.

use std::sync::Arc;
use std::time::Duration;

use pitfall_server::secret_box::{SealedSecret, SealingKey, SealingKeys};
use pitfall_server::store::{
    Actor, DeliveryRecord, NewEvent, NewWatch, NewWatchManifest, Role, SecretSealing, Store,
    TryOutcome, WatchChange, now_ms,
};
use pitfall_server::watch::{WatchOptions, Watcher};
use sqlx::{Connection as _, Executor as _};

use crate::common::{self, TestDb};

async fn connect(db: &TestDb) -> Store {
    Store::connect(db.url()).await.unwrap_or_else(|e| panic!("connect {}: {e}", db.url()))
}

/// A watch of one manifest, owned by a fresh account; its id.
async fn watch(store: &Store, key: &SealingKey, name: &str) -> i64 {
    fleet(store, key, name, 1).await
}

/// A watch of `hosts` manifests (vLLM on an H100 each), owned by a fresh
/// account; its id.
async fn fleet(store: &Store, key: &SealingKey, name: &str, hosts: usize) -> i64 {
    let account = match store.account_by_name("owner").await.expect("account") {
        Some(account) => account,
        None => {
            store.create_account("owner", Role::Contributor, &Actor::System).await.expect("account")
        }
    };
    store
        .create_watch(
            account.id,
            NewWatch {
                name: name.to_owned(),
                webhook_url: "https://hooks.example.com/p".into(),
                secret: key.seal("a-webhook-secret-for-tests").expect("sealed"),
                min_severity: "warning".into(),
                manifests: hosts_of(name, hosts),
                evaluated_revision: store.revision().await.expect("revision"),
            },
        )
        .await
        .expect("watch")
}

/// `hosts` manifests labelled after `name`.
fn hosts_of(name: &str, hosts: usize) -> Vec<NewWatchManifest> {
    (0..hosts)
        .map(|i| NewWatchManifest {
            label: format!("{name}-{i}"),
            manifest:
                r#"{"manifest_version": 1, "packages": [{"name": "vllm", "version": "0.27.1"}],
                "accelerators": [{"vendor": "nvidia", "model": "H100", "count": 1}]}"#
                    .into(),
            findings: Vec::new(),
        })
        .collect()
}

/// Enqueues a ping for `watch`; its event id.
async fn ping(store: &Store, watch: i64, n: usize) -> String {
    let event_id = format!("w{watch}-ping-{n}");
    store
        .enqueue_watch_event(&NewEvent {
            watch_id: watch,
            event_id: event_id.clone(),
            kind: "ping",
            body: "{}".into(),
        })
        .await
        .expect("enqueued");
    event_id
}

/// What the log may never show: a delivery still pending (or given up)
/// whose last try succeeded, or a delivered one whose last try did not.
/// `record_delivery_try` writes the try and the state in one transaction,
/// so only a read that mixes two moments sees either.
fn torn(d: &DeliveryRecord) -> bool {
    let succeeded = d.tries.last().and_then(|t| t.status).is_some_and(|s| (200..300).contains(&s));
    succeeded != (d.state == "delivered")
}

/// The reader stops between its two reads on a lock the test holds on
/// `watch_attempts` (PostgreSQL makes a statement wait for its table's
/// lock), the try is recorded and committed meanwhile, then the reader
/// goes on. Read in one `REPEATABLE READ` snapshot, the log shows the
/// delivery pending with no try; read statement by statement (as before),
/// it showed it pending with a try that succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_delivery_log_is_one_snapshot_when_a_try_commits_between_its_reads_on_postgres() {
    let db = common::postgres().await;
    let store = connect(&db).await;
    let key = SealingKey::generate().expect("key");
    let watch = watch(&store, &key, "torn reads").await;
    let event = ping(&store, watch, 0).await;
    let claimed = store.claim_delivery(now_ms() + 60_000).await.expect("claim").expect("claimed");
    assert_eq!(claimed.event_id, event);

    let mut writer = sqlx::PgConnection::connect(db.url()).await.expect("writer");
    writer.execute("BEGIN").await.expect("begin");
    writer.execute("LOCK TABLE watch_attempts IN ACCESS EXCLUSIVE MODE").await.expect("lock");
    let reading = tokio::spawn({
        let store = store.clone();
        async move { store.watch_deliveries(watch, 50).await.expect("log") }
    });
    // The reader has read the delivery and waits for the tries' table.
    let mut watcher = sqlx::PgConnection::connect(db.url()).await.expect("watcher");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND query LIKE '%FROM watch_attempts%'",
        )
        .fetch_one(&mut watcher)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the reader never reached the tries");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // As `record_delivery_try` writes a success: the state and the try together.
    let at = now_ms();
    sqlx::query(
        "UPDATE watch_deliveries SET state = 'delivered', lease_until = NULL, last_status = 200, \
         delivered_at = $1 WHERE id = $2",
    )
    .bind(at)
    .bind(claimed.id)
    .execute(&mut writer)
    .await
    .expect("state");
    sqlx::query(
        "INSERT INTO watch_attempts (delivery_id, at, status, error, elapsed_ms) VALUES ($1, $2, 200, NULL, 3)",
    )
    .bind(claimed.id)
    .bind(at)
    .execute(&mut writer)
    .await
    .expect("try");
    writer.execute("COMMIT").await.expect("commit");

    let log = tokio::time::timeout(Duration::from_secs(20), reading)
        .await
        .expect("the reader finished")
        .expect("joined");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].state, "pending", "the delivery as it was when the read began");
    assert!(log[0].tries.is_empty(), "and its tries as of the same moment: {:?}", log[0]);
    // Read afresh, both moved together.
    let after = store.watch_deliveries(watch, 50).await.expect("log");
    assert_eq!(after[0].state, "delivered");
    assert_eq!(after[0].tries.len(), 1);
    store.close().await;
    drop(db);
}

/// Deliveries tried and recorded while the log is read over and over: no
/// read shows a try without its delivery's state. SQLite's readers never
/// wait for a writer (WAL), so the reader cannot be stopped between its
/// reads as on PostgreSQL; this races them instead, a writer recording a
/// try every few hundred microseconds (statement by statement, the log
/// read torn within the first few hundred reads here). On PostgreSQL too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_read_of_the_delivery_log_shows_a_try_without_its_state() {
    for db in common::databases().await {
        let store = connect(&db).await;
        let key = SealingKey::generate().expect("key");
        let watch = watch(&store, &key, "racing reads").await;
        let rounds = 300;
        let writer = tokio::spawn({
            let store = store.clone();
            async move {
                for n in 0..rounds {
                    ping(&store, watch, n).await;
                    let claimed = store
                        .claim_delivery(now_ms() + 60_000)
                        .await
                        .expect("claim")
                        .expect("claimed");
                    // Every other delivery fails once before it succeeds.
                    if n % 2 == 1 {
                        let failed = TryOutcome::Failed {
                            status: Some(500),
                            error: "500".into(),
                            retry_at: Some(now_ms()),
                        };
                        assert!(
                            store.record_delivery_try(&claimed, &failed, 1).await.expect("try")
                        );
                        let again = store
                            .claim_delivery(now_ms() + 60_000)
                            .await
                            .expect("claim")
                            .expect("claimed again");
                        let ok = TryOutcome::Delivered { status: 200 };
                        assert!(store.record_delivery_try(&again, &ok, 1).await.expect("try"));
                    } else {
                        let ok = TryOutcome::Delivered { status: 204 };
                        assert!(store.record_delivery_try(&claimed, &ok, 1).await.expect("try"));
                    }
                }
            }
        });
        let mut reads = 0;
        while !writer.is_finished() {
            let log = store.watch_deliveries(watch, 5).await.expect("log");
            reads += 1;
            if let Some(d) = log.iter().find(|d| torn(d)) {
                panic!("{}: read {reads} shows a torn delivery: {d:?}", db.backend().as_str());
            }
        }
        writer.await.expect("writer");
        assert!(
            reads > 10,
            "{}: the reader raced the writer ({reads} reads)",
            db.backend().as_str()
        );
        let log = store.watch_deliveries(watch, 200).await.expect("log");
        assert!(log.iter().all(|d| d.state == "delivered" && !torn(d)));
        store.close().await;
    }
}

/// Runs `f` on a pool of its own on the database (as another process, or
/// an older server, would write it).
async fn with_pool<T>(db: &TestDb, f: impl AsyncFnOnce(&sqlx::AnyPool) -> T) -> T {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(db.url()).await.expect("pool");
    let value = f(&pool).await;
    pool.close().await;
    value
}

/// Watch `id`'s secret column as stored.
async fn stored_secret(db: &TestDb, id: i64) -> String {
    with_pool(db, async |pool| {
        sqlx::query_scalar("SELECT secret FROM watches WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .expect("a watch row")
    })
    .await
}

/// Writes `text` into watch `id`'s secret column, as a server from before
/// sealing did.
async fn store_in_the_clear(db: &TestDb, id: i64, text: &str) {
    with_pool(db, async |pool| {
        let done = sqlx::query("UPDATE watches SET secret = $1 WHERE id = $2")
            .bind(text)
            .bind(id)
            .execute(pool)
            .await
            .expect("update");
        assert_eq!(done.rows_affected(), 1);
    })
    .await;
}

/// `watch_state.secrets_sealed_under`.
async fn sealed_under(db: &TestDb) -> Option<String> {
    with_pool(db, async |pool| {
        sqlx::query_scalar("SELECT secrets_sealed_under FROM watch_state WHERE id = 1")
            .fetch_one(pool)
            .await
            .expect("watch_state")
    })
    .await
}

/// What a start does with watch secrets: a database with some in the
/// clear and no record has them sealed and the record written; a start
/// after it does not read the table (a row put in the clear behind its
/// back stays as it is).
#[tokio::test]
async fn a_start_seals_what_is_in_the_clear_once_then_skips_the_table() {
    for db in common::databases().await {
        let backend = db.backend().as_str();
        let store = connect(&db).await;
        let key = SealingKey::generate().expect("key");
        let keys = SealingKeys::new(key.clone());
        let ids = [
            watch(&store, &key, "a").await,
            watch(&store, &key, "b").await,
            watch(&store, &key, "c").await,
        ];
        // As rows from before sealing: "Sealed:" in another case is a
        // secret in the clear too (SQLite's LIKE would take it as sealed).
        let clear = ["a-legacy-secret-0123456789", "Sealed:a-legacy-secret-in-the-clear"];
        store_in_the_clear(&db, ids[0], clear[0]).await;
        store_in_the_clear(&db, ids[1], clear[1]).await;
        let untouched = stored_secret(&db, ids[2]).await;
        assert_eq!(sealed_under(&db).await, None, "{backend}: no record on a new database");

        assert_eq!(
            store.seal_watch_secrets(&keys).await.expect("sealing"),
            SecretSealing::Scanned { sealed: 2, unopenable: 0, recorded: true },
            "{backend}"
        );
        for (id, secret) in ids.iter().zip(clear) {
            let stored = stored_secret(&db, *id).await;
            assert!(
                stored.starts_with(&key.stored_prefix()) && !stored.contains(secret),
                "{stored}"
            );
            let opened = key.open(&SealedSecret::from_stored(stored)).expect("opens");
            assert_eq!(opened, secret, "{backend}");
        }
        assert_eq!(stored_secret(&db, ids[2]).await, untouched, "a sealed row is left as it is");
        assert_eq!(sealed_under(&db).await.as_deref(), Some(key.id()), "{backend}");

        // The next start does not read the table: a row put in the clear
        // behind the record's back (no server writes one) stays so.
        assert_eq!(store.seal_watch_secrets(&keys).await.expect("again"), SecretSealing::Skipped);
        store_in_the_clear(&db, ids[0], clear[0]).await;
        assert_eq!(store.seal_watch_secrets(&keys).await.expect("again"), SecretSealing::Skipped);
        assert_eq!(
            stored_secret(&db, ids[0]).await,
            clear[0],
            "{backend}: the row was not touched"
        );
        store.close().await;
    }
}

/// A rotation in the store: a start holding the new key and the previous
/// one re-seals every row under the new key (the one in the clear too)
/// and records it; a process that has not read the rotation yet, writing
/// under the previous key, clears the record, and the next start re-seals
/// its row. A start that holds neither key leaves the rows as they are,
/// counts them and records nothing.
#[tokio::test]
async fn a_start_after_a_rotation_reseals_under_the_new_key() {
    for db in common::databases().await {
        let backend = db.backend().as_str();
        let store = connect(&db).await;
        let (old, new) =
            (SealingKey::generate().expect("key"), SealingKey::generate().expect("key"));
        let rows = [
            (watch(&store, &old, "a").await, "a-webhook-secret-for-tests"),
            (watch(&store, &old, "b").await, "a-webhook-secret-for-tests"),
            (watch(&store, &old, "c").await, "a-legacy-secret-0123456789"),
        ];
        store_in_the_clear(&db, rows[2].0, rows[2].1).await;
        let before = SealingKeys::new(old.clone());
        assert!(matches!(
            store.seal_watch_secrets(&before).await.expect("sealing"),
            SecretSealing::Scanned { sealed: 1, recorded: true, .. }
        ));
        assert_eq!(store.watch_secrets_not_under(&new).await.expect("count"), 3);

        let rotating = SealingKeys::rotating(new.clone(), old.clone());
        assert_eq!(
            store.seal_watch_secrets(&rotating).await.expect("sealing"),
            SecretSealing::Scanned { sealed: 3, unopenable: 0, recorded: true },
            "{backend}"
        );
        for (id, secret) in rows {
            let stored = SealedSecret::from_stored(stored_secret(&db, id).await);
            assert_eq!(stored.key_id(), Some(new.id()), "{backend}");
            assert_eq!(new.open(&stored).as_deref(), Ok(secret), "the new key alone opens it");
        }
        assert_eq!(sealed_under(&db).await.as_deref(), Some(new.id()));
        assert_eq!(store.watch_secrets_not_under(&new).await.expect("count"), 0);
        assert_eq!(
            store.seal_watch_secrets(&rotating).await.expect("again"),
            SecretSealing::Skipped
        );

        // A process still on the old key writes a watch: the record goes.
        let late = watch(&store, &old, "written-late").await;
        assert_eq!(sealed_under(&db).await, None, "{backend}: a write under another key clears it");
        assert_eq!(
            store.seal_watch_secrets(&rotating).await.expect("sealing"),
            SecretSealing::Scanned { sealed: 1, unopenable: 0, recorded: true },
            "{backend}"
        );
        let stored = SealedSecret::from_stored(stored_secret(&db, late).await);
        assert_eq!(stored.key_id(), Some(new.id()));
        // A write under the recorded key leaves the record.
        watch(&store, &new, "written-new").await;
        assert_eq!(sealed_under(&db).await.as_deref(), Some(new.id()));

        // A start holding neither key (a replica without the shared file).
        let foreign = SealingKeys::new(SealingKey::generate().expect("key"));
        let all = stored_secret(&db, rows[0].0).await;
        assert_eq!(
            store.seal_watch_secrets(&foreign).await.expect("sealing"),
            SecretSealing::Scanned { sealed: 0, unopenable: 5, recorded: false },
            "{backend}"
        );
        assert_eq!(stored_secret(&db, rows[0].0).await, all, "left as it is");
        assert_eq!(sealed_under(&db).await.as_deref(), Some(new.id()), "the record is left");
        store.close().await;
    }
}

/// Two replicas starting at once on a database with 40 secrets in the
/// clear or under the previous key: each row is sealed once (the sums
/// agree), every one opens to its secret with the new key, and the record
/// is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_starting_together_seal_each_row_once() {
    for db in common::databases().await {
        let backend = db.backend().as_str();
        let (a, b) = (connect(&db).await, connect(&db).await);
        let (old, new) =
            (SealingKey::generate().expect("key"), SealingKey::generate().expect("key"));
        let mut rows = Vec::new();
        for n in 0..40 {
            let id = watch(&a, &old, &format!("w{n}")).await;
            let secret = if n % 2 == 0 {
                let secret = format!("a-legacy-secret-number-{n:04}");
                store_in_the_clear(&db, id, &secret).await;
                secret
            } else {
                "a-webhook-secret-for-tests".to_owned()
            };
            rows.push((id, secret));
        }
        let keys = SealingKeys::rotating(new.clone(), old.clone());
        let (ra, rb) = tokio::join!(a.seal_watch_secrets(&keys), b.seal_watch_secrets(&keys));
        let sealed = |r: SecretSealing| match r {
            SecretSealing::Scanned { sealed, unopenable, recorded } => {
                assert!(
                    recorded && unopenable == 0,
                    "{backend}: none is left when either finishes"
                );
                sealed
            }
            SecretSealing::Skipped => 0,
        };
        let (ra, rb) = (sealed(ra.expect("a")), sealed(rb.expect("b")));
        assert_eq!(ra + rb, 40, "{backend}: each row sealed once ({ra} + {rb})");
        for (id, secret) in &rows {
            let stored = SealedSecret::from_stored(stored_secret(&db, *id).await);
            assert_eq!(new.open(&stored).as_deref(), Ok(secret.as_str()), "{backend}");
        }
        assert_eq!(sealed_under(&db).await.as_deref(), Some(new.id()));
        a.close().await;
        b.close().await;
    }
}

/// A replica: its own pool, engine, registry (no rules) and watcher.
async fn replica(db: &TestDb, key: &SealingKey) -> Arc<Watcher> {
    let store = connect(db).await;
    let engine = pitfall_engine::Engine::new(pitfall_engine::Limits::default()).expect("engine");
    let registry = Arc::new(
        pitfall_server::Registry::open(store, engine, key.clone()).await.expect("registry"),
    );
    Watcher::new(
        registry,
        WatchOptions::from_settings(
            &pitfall_server::ServerLimits::default().watch,
            Duration::from_secs(1),
        ),
    )
}

/// Each replica's index size after its next pass.
async fn indexed_after_a_pass(replicas: &[&Arc<Watcher>]) -> Vec<usize> {
    let mut sizes = Vec::new();
    for r in replicas {
        r.pass().await.expect("pass");
        sizes.push(r.indexed_manifests().await);
    }
    sizes
}

/// Manifests replaced by a PATCH and a deleted watch's manifests leave
/// the fact index of every replica at its next pass, whichever replica
/// wrote (before, only a rule change that admitted them removed them). A
/// replica that did not catch up while a deletion was kept (a day;
/// aged here) builds its index afresh and is exact too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_manifests_leave_every_replicas_index_at_its_next_pass() {
    for db in common::databases().await {
        let backend = db.backend().as_str();
        let key = SealingKey::generate().expect("key");
        let (a, b) = (replica(&db, &key).await, replica(&db, &key).await);
        let (sa, sb) = (a.registry().store(), b.registry().store());
        let pool_a = fleet(sa, &key, "pool-a", 3).await;
        let pool_b = fleet(sb, &key, "pool-b", 2).await;
        assert_eq!(indexed_after_a_pass(&[&a, &b]).await, [5, 5], "{backend}");

        let replaced = WatchChange {
            manifests: Some(hosts_of("pool-a-new", 1)),
            evaluated_revision: sa.revision().await.expect("revision"),
            ..WatchChange::default()
        };
        assert!(sb.change_watch(pool_a, replaced).await.expect("patch"));
        assert_eq!(indexed_after_a_pass(&[&a, &b]).await, [3, 3], "{backend}: replaced");
        assert!(sa.delete_watch(pool_b).await.expect("delete"));
        assert_eq!(indexed_after_a_pass(&[&a, &b]).await, [1, 1], "{backend}: deleted");

        // B stops catching up while pool-c is deleted; its deletion ages
        // past a day and the next deletion prunes it.
        let pool_c = fleet(sa, &key, "pool-c", 2).await;
        let pool_d = fleet(sa, &key, "pool-d", 1).await;
        assert_eq!(indexed_after_a_pass(&[&a, &b]).await, [4, 4], "{backend}");
        assert!(sa.delete_watch(pool_c).await.expect("delete"));
        with_pool(&db, async |pool| {
            sqlx::query("UPDATE watch_deletions SET deleted_at = 0")
                .execute(pool)
                .await
                .expect("aged")
        })
        .await;
        assert_eq!(indexed_after_a_pass(&[&a]).await, [2], "{backend}");
        assert!(sa.delete_watch(pool_d).await.expect("delete"));
        let kept: i64 = with_pool(&db, async |pool| {
            sqlx::query_scalar("SELECT COUNT(*) FROM watch_deletions")
                .fetch_one(pool)
                .await
                .expect("count")
        })
        .await;
        assert_eq!(kept, 1, "{backend}: the aged deletion was pruned");
        assert_eq!(indexed_after_a_pass(&[&a, &b]).await, [1, 1], "{backend}: B built afresh");
        a.registry().store().close().await;
        b.registry().store().close().await;
    }
}

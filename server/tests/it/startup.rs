//! Start-up and the bundled seed (`server::open`): a registry that never
//! held a rule is ready only once the bundled rules are in; one that holds
//! rules serves them at once and takes the bundled versions it lacks in as
//! its next revision, as it would a publish.

use std::time::{Duration, Instant};

use pitfall_engine::{Engine, Limits};
use pitfall_server::Config;
use pitfall_server::registry::seed_modules;
use pitfall_server::store::Store;

fn config(data_dir: &std::path::Path) -> Config {
    let dir = data_dir.display().to_string();
    // SQLite in the data dir, whatever the environment says.
    let url = format!("sqlite://{}/pitfall.db", dir);
    Config::from_args([
        "pitfall-server",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        &dir,
        "--database-url",
        &url,
    ])
    .expect("config")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundled_seed_waits_on_an_empty_registry_and_lands_beside_serving_on_a_full_one() {
    let bundled = pitfall_bundled_rules::MODULES;

    // Empty: ready with every bundled rule served.
    let empty = tempfile::tempdir().expect("tempdir");
    let registry = pitfall_server::server::open(&config(empty.path())).await.expect("opens");
    assert_eq!(
        registry.rules().rules().len(),
        bundled.len(),
        "an empty registry waits for the seed"
    );

    // Holding one rule (a bundled one, stored as a publish would): served
    // at once, the other bundled rules swapped in afterwards.
    let full = tempfile::tempdir().expect("tempdir");
    let config = config(full.path());
    let store = Store::connect(&config.database_url()).await.expect("store");
    let engine = Engine::new(Limits::default()).expect("engine");
    assert_eq!(seed_modules(&store, &engine, bundled[..1].to_vec()).await.expect("seed one"), 1);
    store.close().await;
    let registry = pitfall_server::server::open(&config).await.expect("opens");
    let at_open = registry.rules();
    // The other 32 compile and run their cases before they are stored,
    // which takes far longer than returning from `open`.
    assert_eq!(at_open.rules().len(), 1, "the stored rule is served before the seed lands");
    let deadline = Instant::now() + Duration::from_secs(120);
    while registry.rules().rules().len() < bundled.len() {
        assert!(Instant::now() < deadline, "the bundled rules were not served within 120 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let now = registry.rules();
    assert_ne!(now.revision(), at_open.revision(), "the seed lands as a new revision");
}

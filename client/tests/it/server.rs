//! A real registry server in this process, on `127.0.0.1:0`, with a few
//! bundled rules seeded and a token of each role.

#![allow(dead_code)] // each test uses a part of this

use pitfall_server::Config;
use pitfall_server::registry::seed_modules;
use pitfall_server::server::{Running, create_token, start};
use pitfall_server::store::{Role, Store};

/// The seeded rules (the G5g manifest hits both, the second as an error).
pub const SEEDED: &[&str] = &["rule-aarch64-official-image-needs-sm80", "rule-cuda-driver-too-old"];
/// A bundled rule left out of the seed, for publishing.
pub const PUBLISHED_CRATE: &str = "rule-vllm-bf16-needs-sm80";
/// Its id.
pub const PUBLISHED_ID: &str = "vllm-bf16-needs-sm80";

/// A running server; stops with its runtime when dropped.
pub struct Live {
    pub url: String,
    pub running: Running,
    pub maintainer: String,
    pub contributor: String,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl Live {
    /// Starts one with `extra` flags (e.g. `--max-batch 2`).
    pub fn start(extra: &[&str]) -> Live {
        let dir = tempfile::tempdir().expect("tempdir");
        let database = format!("sqlite://{}", dir.path().join("registry.db").display());
        let mut args = vec![
            "pitfall-server",
            "--listen",
            "127.0.0.1:0",
            "--seed-bundled",
            "false",
            "--database-url",
            &database,
        ];
        let data_dir = dir.path().display().to_string();
        args.extend(["--data-dir", &data_dir]);
        args.extend(extra);
        let config = Config::from_args(args).expect("config");
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let (running, maintainer, contributor) = runtime.block_on(async {
            let store = Store::connect(&config.database_url()).await.expect("store");
            let engine =
                pitfall_engine::Engine::new(pitfall_engine::Limits::default()).expect("engine");
            let modules = pitfall_bundled_rules::MODULES
                .iter()
                .copied()
                .filter(|m| SEEDED.contains(&m.crate_name))
                .collect();
            seed_modules(&store, &engine, modules).await.expect("seed");
            store.close().await;
            let maintainer =
                create_token(&config, "mia", Role::Maintainer, "test", false, Default::default())
                    .await
                    .expect("token");
            let contributor = create_token(
                &config,
                "alice",
                Role::Contributor,
                "test",
                false,
                Default::default(),
            )
            .await
            .expect("token");
            (start(config).await.expect("server starts"), maintainer, contributor)
        });
        Live {
            url: format!("http://{}", running.addr),
            running,
            maintainer,
            contributor,
            runtime,
            _dir: dir,
        }
    }
}

/// A shared fixture manifest's bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/../../shared/fixtures/manifests/{name}", env!("CARGO_MANIFEST_DIR")))
        .expect("fixture")
}

/// A bundled module's bytes.
pub fn bundled(crate_name: &str) -> &'static [u8] {
    pitfall_bundled_rules::MODULES
        .iter()
        .find(|m| m.crate_name == crate_name)
        .expect("bundled")
        .wasm
}

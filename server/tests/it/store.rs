//! The storage layer, on both backends. Every test runs its body once on a
//! fresh SQLite file and once on a fresh PostgreSQL database; the data are
//! the bundled rules' real metadata and modules.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use pitfall_contract::meta::Severity;
use pitfall_engine::Limits;
use pitfall_server::store::{
    Actor, NewVersion, Principal, Role, RuleQuery, Store, StoreError, VersionState, audit,
};
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::common::{self, TestDb};

/// Runs `body` on a fresh database of each backend, naming the backend
/// first so a failure says which one it was.
macro_rules! on_both_backends {
    ($(#[$attr:meta])* async fn $name:ident($db:ident) $body:block) => {
        $(#[$attr])*
        async fn $name() {
            for db in common::databases().await {
                eprintln!("--- {} on {}", stringify!($name), db.backend().as_str());
                let $db: &TestDb = &db;
                $body
            }
        }
    };
}

/// The bundled rules as versions to store (metadata read from the modules'
/// custom sections, without compiling them).
fn bundled() -> &'static [NewVersion] {
    static VERSIONS: OnceLock<Vec<NewVersion>> = OnceLock::new();
    VERSIONS.get_or_init(|| {
        pitfall_bundled_rules::MODULES
            .iter()
            .map(|m| {
                let info = pitfall_engine::inspect::inspect(m.wasm, &Limits::default())
                    .expect("bundled module inspects");
                NewVersion {
                    meta: info.meta,
                    tests: info.tests,
                    module: m.wasm.to_vec(),
                    sha256: sha256(m.wasm),
                    report: serde_json::json!({ "tests": { "passed": true } }),
                }
            })
            .collect()
    })
}

/// A bundled rule by id.
fn rule(id: &str) -> NewVersion {
    bundled()
        .iter()
        .find(|v| v.meta.id == id)
        .unwrap_or_else(|| panic!("no bundled rule {id}"))
        .clone()
}

/// `base` as another version (and, if given, another id), with distinct
/// bytes: the module plus a custom section, so it stays valid wasm.
fn variant(base: &NewVersion, id: Option<&str>, version: &str) -> NewVersion {
    let mut new = base.clone();
    if let Some(id) = id {
        new.meta.id = id.to_owned();
    }
    new.meta.version = version.to_owned();
    let name = b"test.variant";
    let payload = format!("{}@{version}", new.meta.id);
    let size = 1 + name.len() + payload.len();
    assert!(size < 128, "one-byte LEB128 section size");
    new.module.push(0); // custom section
    new.module.push(size as u8);
    new.module.push(name.len() as u8);
    new.module.extend_from_slice(name);
    new.module.extend_from_slice(payload.as_bytes());
    new.sha256 = sha256(&new.module);
    new
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

async fn connect(db: &TestDb) -> Store {
    Store::connect(db.url()).await.unwrap_or_else(|e| panic!("connect {}: {e}", db.url()))
}

/// An account with a token, acting as itself.
async fn account(store: &Store, name: &str, role: Role) -> Actor {
    let account = store.create_account(name, role, &Actor::System).await.expect("account");
    let (secret, _) = store.issue_token(account.id, "test", &Actor::System).await.expect("token");
    Actor::Account(store.authenticate(&secret).await.expect("authenticate").expect("valid token"))
}

fn principal(actor: &Actor) -> &Principal {
    match actor {
        Actor::Account(p) => p,
        Actor::System => panic!("not an account"),
    }
}

async fn served(store: &Store) -> Vec<(String, String)> {
    store
        .served_versions()
        .await
        .expect("served")
        .into_iter()
        .map(|s| (s.rule_id, s.version))
        .collect()
}

/// What the history says revision `revision` served.
async fn served_at(store: &Store, revision: i64) -> Vec<(String, String)> {
    store
        .served_at(revision)
        .await
        .expect("served at")
        .into_iter()
        .map(|s| (s.rule_id, s.version))
        .collect()
}

async fn ids(store: &Store, query: RuleQuery) -> Vec<String> {
    store.search(&query).await.expect("search").items.into_iter().map(|s| s.id).collect()
}

async fn audit_count(store: &Store) -> usize {
    store.audit(500, 0).await.expect("audit").len()
}

on_both_backends! {
    #[tokio::test]
    async fn migrations_are_idempotent_on_reconnect(db) {
        let store = connect(db).await;
        store.ping().await.expect("ping");
        store.seed(vec![rule("vllm-needs-sm70")]).await.expect("seed");
        let alice = store.create_account("alice", Role::Admin, &Actor::System).await.expect("account");
        store.close().await;
        let again = connect(db).await;
        assert_eq!(again.backend(), db.backend());
        assert_eq!(again.revision().await.expect("revision"), 1);
        assert_eq!(again.account_by_name("alice").await.expect("read"), Some(alice));
        let version = rule("vllm-needs-sm70").meta.version;
        assert_eq!(served(&again).await, vec![("vllm-needs-sm70".to_owned(), version)]);
    }
}

on_both_backends! {
    #[tokio::test]
    async fn seed_is_idempotent_and_bumps_the_revision_once(db) {
        let store = connect(db).await;
        assert_eq!(store.revision().await.expect("revision"), 0);
        let all = bundled().to_vec();
        assert_eq!(store.seed(all.clone()).await.expect("seed"), all.len());
        assert_eq!(store.revision().await.expect("revision"), 1);
        assert_eq!(audit_count(&store).await, all.len(), "one audit entry per stored version");
        assert_eq!(store.seed(all.clone()).await.expect("seed again"), 0);
        assert_eq!(store.revision().await.expect("revision"), 1, "a no-op seed does not bump");
        assert_eq!(audit_count(&store).await, all.len(), "a no-op seed writes no audit entry");
        let served = store.served_versions().await.expect("served");
        assert_eq!(served.len(), all.len());
        for s in &served {
            let original = all.iter().find(|v| v.meta.id == s.rule_id).expect("seeded");
            assert_eq!(s.module, original.module, "{} is served with its bytes", s.rule_id);
            assert_eq!(s.sha256, original.sha256);
        }
        let version = rule("vllm-needs-sm70").meta.version;
        let record = store.version("vllm-needs-sm70", &version).await.expect("read").expect("stored");
        assert_eq!(record.state, VersionState::Approved);
        assert_eq!(record.published_by, None);
        assert_eq!(record.meta, rule("vllm-needs-sm70").meta);
        assert_eq!(record.tests, rule("vllm-needs-sm70").tests);
        assert!(store.owners("vllm-needs-sm70").await.expect("owners").is_empty(), "the seed owns nothing");
    }
}

on_both_backends! {
    #[tokio::test]
    async fn a_published_version_is_served_only_once_approved(db) {
        let store = connect(db).await;
        let alice = account(&store, "alice", Role::Contributor).await;
        let maintainer = account(&store, "maria", Role::Maintainer).await;
        let new = rule("flash-attn2-needs-sm80");
        let record = store.insert_version(new.clone(), &alice, VersionState::Pending).await.expect("publish");
        assert_eq!(record.state, VersionState::Pending);
        assert_eq!(record.published_by.as_ref().map(|a| a.name.as_str()), Some("alice"));
        assert_eq!(record.size, new.module.len() as i64);
        assert_eq!(record.report, new.report);
        assert!(served(&store).await.is_empty(), "pending is not served");
        assert!(ids(&store, RuleQuery::default()).await.is_empty(), "pending is not listed by default");
        assert_eq!(store.pending_versions().await.expect("queue").len(), 1);
        assert_eq!(store.owners(&new.meta.id).await.expect("owners")[0].name, "alice");
        assert!(store.is_owner(&new.meta.id, principal(&alice).account_id).await.expect("owner"));

        let approved = store
            .set_state(&new.meta.id, &new.meta.version, VersionState::Approved, &maintainer, Some("sources check out"))
            .await
            .expect("approve");
        assert_eq!(approved.state, VersionState::Approved);
        assert_eq!(approved.reviewed_by.as_ref().map(|a| a.name.as_str()), Some("maria"));
        assert_eq!(approved.review_reason.as_deref(), Some("sources check out"));
        assert_eq!(served(&store).await, vec![(new.meta.id.clone(), new.meta.version.clone())]);
        assert!(store.pending_versions().await.expect("queue").is_empty());
        assert_eq!(store.module(&new.meta.id, &new.meta.version).await.expect("module"), Some(new.module.clone()));
        assert_eq!(store.module(&new.meta.id, "9.9.9").await.expect("module"), None);
    }
}

on_both_backends! {
    #[tokio::test]
    async fn the_highest_approved_version_is_served_in_semver_order(db) {
        let store = connect(db).await;
        let base = rule("vllm-bf16-needs-sm80");
        let id = base.meta.id.clone();
        for v in ["1.2.0", "1.9.0", "1.10.0", "1.10.0-rc.1"] {
            store.insert_version(variant(&base, None, v), &Actor::System, VersionState::Approved).await.expect("insert");
        }
        store.insert_version(variant(&base, None, "2.0.0"), &Actor::System, VersionState::Pending).await.expect("insert");
        assert_eq!(served(&store).await, vec![(id.clone(), "1.10.0".to_owned())], "1.10.0 > 1.9.0, release > rc, pending never");
        store.set_state(&id, "1.10.0", VersionState::Yanked, &Actor::System, Some("wrong remedy")).await.expect("yank");
        assert_eq!(served(&store).await, vec![(id.clone(), "1.10.0-rc.1".to_owned())]);
        store.set_state(&id, "2.0.0", VersionState::Approved, &Actor::System, None).await.expect("approve");
        assert_eq!(served(&store).await, vec![(id.clone(), "2.0.0".to_owned())]);
        let detail = store.rule(&id).await.expect("rule").expect("exists");
        let versions: Vec<_> = detail.versions.iter().map(|v| v.version.as_str()).collect();
        assert_eq!(versions, ["2.0.0", "1.10.0", "1.10.0-rc.1", "1.9.0", "1.2.0"], "highest first");
        assert_eq!(store.search(&RuleQuery::default()).await.expect("search").items[0].version, "2.0.0");
        let yanked = RuleQuery { state: Some(VersionState::Yanked), ..RuleQuery::default() };
        assert_eq!(store.search(&yanked).await.expect("search").items[0].version, "1.10.0");
    }
}

on_both_backends! {
    #[tokio::test]
    async fn published_versions_are_immutable(db) {
        let store = connect(db).await;
        let alice = account(&store, "alice", Role::Contributor).await;
        let original = rule("weights-exceed-vram");
        let id = original.meta.id.clone();
        store.insert_version(original.clone(), &alice, VersionState::Pending).await.expect("publish");
        let revision = store.revision().await.expect("revision");

        let other_bytes = variant(&original, None, &original.meta.version.clone());
        let e = store.insert_version(other_bytes.clone(), &alice, VersionState::Pending).await.expect_err("conflict");
        assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
        let e = store.insert_version(original.clone(), &alice, VersionState::Pending).await.expect_err("same bytes, account");
        assert!(matches!(e, StoreError::Conflict(_)), "an account republishing is a conflict: {e:?}");
        let e = store.insert_version(other_bytes, &Actor::System, VersionState::Approved).await.expect_err("system, other bytes");
        assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
        let same = store.insert_version(original.clone(), &Actor::System, VersionState::Approved).await.expect("idempotent");
        assert_eq!(same.state, VersionState::Pending, "the stored version is returned unchanged");
        assert_eq!(store.revision().await.expect("revision"), revision, "refused and no-op writes do not bump");

        let mut lying = variant(&original, None, "1.0.1");
        lying.sha256 = original.sha256.clone();
        let e = store.insert_version(lying, &alice, VersionState::Pending).await.expect_err("sha mismatch");
        assert!(matches!(e, StoreError::Invalid(_)), "{e:?}");

        // The schema refuses changes to published content, whoever asks.
        let raw = sqlx::AnyPool::connect(db.url()).await.expect("raw pool");
        for sql in [
            "UPDATE versions SET meta = '{}' WHERE rule_id = $1",
            "UPDATE versions SET sha256 = sha256 WHERE rule_id = $1",
            "DELETE FROM versions WHERE rule_id = $1",
        ] {
            let r = sqlx::query(sql).bind(&id).execute(&raw).await;
            assert!(r.is_err(), "{sql} must be refused");
        }
        let r = sqlx::query("UPDATE modules SET size = 0").execute(&raw).await;
        assert!(r.is_err(), "module bytes are immutable");
        raw.close().await;
        let stored = store.version(&id, &original.meta.version).await.expect("read").expect("stored");
        assert_eq!(stored.meta, original.meta);
    }
}

on_both_backends! {
    #[tokio::test]
    async fn only_owners_publish_new_versions_of_a_rule(db) {
        let store = connect(db).await;
        let alice = account(&store, "alice", Role::Contributor).await;
        let bob = account(&store, "bob", Role::Contributor).await;
        let base = rule("container-shm-ipc-limits");
        let id = base.meta.id.clone();
        store.insert_version(base.clone(), &alice, VersionState::Pending).await.expect("first publish");
        let revision = store.revision().await.expect("revision");
        let e = store.insert_version(variant(&base, None, "9.1.0"), &bob, VersionState::Pending).await.expect_err("not owner");
        assert!(matches!(&e, StoreError::NotOwner { rule_id, account } if *rule_id == id && account == "bob"), "{e:?}");
        assert_eq!(store.revision().await.expect("revision"), revision);
        assert!(store.version(&id, "9.1.0").await.expect("read").is_none(), "nothing of the refused write is kept");
        store.insert_version(variant(&base, None, "9.1.0"), &alice, VersionState::Pending).await.expect("owner publishes");
        store.insert_version(variant(&base, None, "9.2.0"), &Actor::System, VersionState::Pending).await.expect("system bypasses");
        assert!(!store.is_owner(&id, principal(&bob).account_id).await.expect("is_owner"));
        let owners: Vec<_> = store.owners(&id).await.expect("owners").into_iter().map(|a| a.name).collect();
        assert_eq!(owners, ["alice"]);
        // bob's own rule is his.
        store.insert_version(variant(&base, Some("bobs-own-rule"), "0.1.0"), &bob, VersionState::Pending).await.expect("new rule");
        assert!(store.is_owner("bobs-own-rule", principal(&bob).account_id).await.expect("is_owner"));
    }
}

on_both_backends! {
    #[tokio::test]
    async fn review_refuses_invalid_transitions(db) {
        use VersionState::*;
        let store = connect(db).await;
        let base = rule("vllm-fp8-min-capability");
        let id = base.meta.id.clone();
        for (v, path) in [
            ("1.0.0", &[Approved, Yanked][..]),
            ("1.1.0", &[Rejected][..]),
            ("1.2.0", &[Yanked][..]),
        ] {
            store.insert_version(variant(&base, None, v), &Actor::System, Pending).await.expect("insert");
            for to in path {
                store.set_state(&id, v, *to, &Actor::System, None).await.unwrap_or_else(|e| panic!("{v} -> {to}: {e}"));
            }
        }
        store.insert_version(variant(&base, None, "1.3.0"), &Actor::System, Pending).await.expect("insert");
        store.insert_version(variant(&base, None, "1.4.0"), &Actor::System, Approved).await.expect("insert");
        let revision = store.revision().await.expect("revision");
        for (v, from, to) in [
            ("1.0.0", Yanked, Approved),
            ("1.0.0", Yanked, Pending),
            ("1.1.0", Rejected, Approved),
            ("1.1.0", Rejected, Yanked),
            ("1.3.0", Pending, Pending),
            ("1.4.0", Approved, Pending),
            ("1.4.0", Approved, Rejected),
            ("1.4.0", Approved, Approved),
        ] {
            let e = store.set_state(&id, v, to, &Actor::System, None).await.expect_err("invalid");
            assert!(
                matches!(e, StoreError::InvalidTransition { from: f, to: t } if f == from && t == to),
                "{v}: {from} -> {to}: {e:?}"
            );
        }
        let e = store.set_state(&id, "7.0.0", Approved, &Actor::System, None).await.expect_err("missing");
        assert!(matches!(e, StoreError::NotFound(_)), "{e:?}");
        assert_eq!(store.revision().await.expect("revision"), revision, "refused transitions do not bump");
    }
}

on_both_backends! {
    #[tokio::test]
    async fn a_yanked_version_is_neither_served_nor_listed_by_default(db) {
        let store = connect(db).await;
        store.seed(bundled().to_vec()).await.expect("seed");
        let id = "vllm-needs-sm70";
        let version = rule(id).meta.version;
        assert!(ids(&store, RuleQuery { limit: Some(200), ..RuleQuery::default() }).await.iter().any(|i| i == id));
        store.set_state(id, &version, VersionState::Yanked, &Actor::System, Some("superseded")).await.expect("yank");
        assert!(!served(&store).await.iter().any(|(r, _)| r == id));
        let listed = ids(&store, RuleQuery { limit: Some(200), ..RuleQuery::default() }).await;
        assert!(!listed.iter().any(|i| i == id));
        assert_eq!(listed.len(), bundled().len() - 1);
        let yanked = RuleQuery { state: Some(VersionState::Yanked), ..RuleQuery::default() };
        assert_eq!(ids(&store, yanked).await, [id]);
        assert!(store.module(id, &version).await.expect("module").is_some(), "yanking hides, never deletes");
    }
}

/// A search text's words as the ranked search takes them: alphanumeric
/// runs, lowercased, at least two characters.
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// Everything a rule's search document holds.
fn document(v: &NewVersion) -> BTreeSet<String> {
    let m = &v.meta;
    let mut text = format!("{}\n{}\n{}\n{}", m.id, m.title, m.summary, m.message);
    for s in &m.error_signatures {
        text.push('\n');
        text.push_str(&s.template);
        text.push('\n');
        text.push_str(s.example.as_deref().unwrap_or(""));
    }
    words(&text)
}

on_both_backends! {
    #[tokio::test]
    async fn search_ranks_rules_by_the_error_text_users_see(db) {
        let store = connect(db).await;
        store.seed(bundled().to_vec()).await.expect("seed");
        let query = |q: &str| RuleQuery { q: Some(q.to_owned()), limit: Some(200), ..RuleQuery::default() };
        // Any word counts: the rules whose document holds at least one.
        let expected = |q: &str| -> BTreeSet<String> {
            let asked = words(q);
            bundled()
                .iter()
                .filter(|v| !document(v).is_disjoint(&asked))
                .map(|v| v.meta.id.clone())
                .collect()
        };
        for q in [
            "no kernel image is available",
            "NCCL",
            "head_dim",
            "flash attention",
            "sm_80 vllm",
            "vllm-needs-sm70",
            "kernel zzzzx",
        ] {
            let found = ids(&store, query(q)).await;
            assert_eq!(found.iter().cloned().collect::<BTreeSet<_>>(), expected(q), "q = {q:?}");
            assert!(!found.is_empty(), "q = {q:?}");
        }
        // Nothing searchable, or no word any rule holds: nothing.
        for q in ["%", "_", "%_\\", "zzzzx qqqqx"] {
            assert!(ids(&store, query(q)).await.is_empty(), "q = {q:?}");
        }
        // Better matches first: a rule holding every word of the query
        // ranks above any holding fewer.
        let q = "Bfloat16 is only supported on GPUs with compute capability of at least 8.0";
        let found = ids(&store, query(q)).await;
        let all_words = |id: &str| words(q).is_subset(&document(&rule(id)));
        let first_partial = found.iter().position(|id| !all_words(id)).unwrap_or(found.len());
        assert!(first_partial > 0, "{found:?}");
        assert!(found[first_partial..].iter().all(|id| !all_words(id)), "{found:?}");
        // A long paste, with the user's paths and numbers, still finds its rule first.
        let paste = "ERROR 03-14 20:19:53 [engine.py:411] File \"/home/ubuntu/vllm/vllm/worker/worker.py\", line 526, \
                     in _check_if_gpu_supports_dtype ValueError: Bfloat16 is only supported on GPUs with compute \
                     capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 \
                     instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.";
        let found = ids(&store, query(paste)).await;
        assert_eq!(found.first().map(String::as_str), Some("vllm-bf16-needs-sm80"), "{found:?}");
    }
}

on_both_backends! {
    #[tokio::test]
    async fn search_filters_and_paginates(db) {
        let store = connect(db).await;
        store.seed(bundled().to_vec()).await.expect("seed");
        let all = bundled();
        let has = |v: &NewVersion, sel: &str| v.meta.applies_to.iter().any(|s| s == sel);
        let expect = |f: &dyn Fn(&NewVersion) -> bool| -> BTreeSet<String> {
            all.iter().filter(|v| f(v)).map(|v| v.meta.id.clone()).collect()
        };
        let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
        let q = RuleQuery { limit: Some(200), ..RuleQuery::default() };

        // A ranged selector (`package:vllm<0.27.2rc0`) is found under its package.
        let about_vllm = |v: &NewVersion| {
            v.meta.applies_to.iter().any(|s| {
                matches!(pitfall_contract::selector::Selector::parse(s),
                    Ok(pitfall_contract::selector::Selector::Package { name, .. }) if name == "vllm")
            })
        };
        let vllm = set(ids(&store, RuleQuery { package: Some("vLLM".into()), ..q.clone() }).await);
        assert_eq!(vllm, expect(&about_vllm));
        assert!(!vllm.is_empty());
        let nvidia = set(ids(&store, RuleQuery { accelerator: Some("NVIDIA".into()), ..q.clone() }).await);
        assert_eq!(nvidia, expect(&|v| has(v, "accelerator:nvidia")));
        assert!(!nvidia.is_empty());
        let arm = set(ids(&store, RuleQuery { arch: Some("arm64".into()), ..q.clone() }).await);
        assert_eq!(arm, expect(&|v| v.meta.applies_to.iter().any(|s| s == "arch:aarch64" || s == "arch:arm64")));
        for severity in [Severity::Error, Severity::Warning, Severity::Info] {
            let found = set(ids(&store, RuleQuery { severity: Some(severity), ..q.clone() }).await);
            assert_eq!(found, expect(&|v| v.meta.severity == severity), "{severity:?}");
        }
        let both = set(ids(&store, RuleQuery { accelerator: Some("nvidia".into()), severity: Some(Severity::Error), ..q.clone() }).await);
        assert_eq!(both, expect(&|v| has(v, "accelerator:nvidia") && v.meta.severity == Severity::Error));
        assert!(ids(&store, RuleQuery { state: Some(VersionState::Pending), ..q.clone() }).await.is_empty());

        // Pages: the same order as one big page, totals right, no overlap.
        let everything = store.search(&q).await.expect("search");
        assert_eq!(everything.total, all.len() as i64);
        let order: Vec<_> = everything.items.iter().map(|s| (std::cmp::Reverse(s.severity), s.id.clone())).collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "ordered by severity (error first) then id");
        let mut paged = Vec::new();
        for page in 0.. {
            let p = store.search(&RuleQuery { limit: Some(7), offset: Some(page * 7), ..RuleQuery::default() }).await.expect("page");
            assert_eq!(p.total, all.len() as i64);
            assert!(p.items.len() <= 7);
            if p.items.is_empty() {
                break;
            }
            paged.extend(p.items.into_iter().map(|s| s.id));
        }
        assert_eq!(paged, everything.items.iter().map(|s| s.id.clone()).collect::<Vec<_>>());
        let capped = store.search(&RuleQuery { limit: Some(10_000), ..RuleQuery::default() }).await.expect("capped");
        assert_eq!(capped.limit, pitfall_server::store::MAX_PAGE_SIZE);

        // A pending version of a new rule shows under state=pending only.
        store.insert_version(variant(&all[0], Some("a-pending-rule"), "0.1.0"), &Actor::System, VersionState::Pending).await.expect("insert");
        assert_eq!(ids(&store, RuleQuery { state: Some(VersionState::Pending), ..q.clone() }).await, ["a-pending-rule"]);
        assert_eq!(store.search(&q).await.expect("search").total, all.len() as i64);
    }
}

on_both_backends! {
    #[tokio::test]
    async fn tokens_are_stored_as_hashes_and_revocable(db) {
        let store = connect(db).await;
        let alice = store.create_account("alice", Role::Maintainer, &Actor::System).await.expect("account");
        let (secret, info) = store.issue_token(alice.id, "ci", &Actor::System).await.expect("issue");
        assert!(secret.starts_with("pft_") && secret.len() == 4 + 64, "{secret}");
        assert_eq!((info.account_id, info.label.as_str(), info.revoked_at), (alice.id, "ci", None));
        let (other, _) = store.issue_token(alice.id, "laptop", &Actor::System).await.expect("issue");
        assert_ne!(secret, other);

        let p = store.authenticate(&secret).await.expect("auth").expect("valid");
        assert_eq!((p.account_id, p.name.as_str(), p.role, p.token_id), (alice.id, "alice", Role::Maintainer, info.id));
        assert_eq!(store.authenticate("pft_0000").await.expect("auth"), None);
        assert_eq!(store.authenticate("not a token").await.expect("auth"), None);
        let used = store.token(info.id).await.expect("token").expect("exists");
        assert!(used.last_used_at.is_some());

        // At rest: the hash, never the secret, in any column of any row.
        let raw = sqlx::AnyPool::connect(db.url()).await.expect("raw pool");
        let rows = sqlx::query("SELECT id, account_id, label, secret_sha256 FROM api_tokens").fetch_all(&raw).await.expect("rows");
        assert_eq!(rows.len(), 2);
        let stored: Vec<String> = rows.iter().map(|r| r.try_get("secret_sha256").expect("hash")).collect();
        assert!(stored.contains(&sha256(secret.as_bytes())));
        for row in &rows {
            for col in ["label", "secret_sha256"] {
                let v: String = row.try_get(col).expect("text");
                assert!(!v.contains(&secret[4..]) && !v.contains(&other[4..]), "a secret is stored in {col}");
            }
        }
        let audit_text: Vec<String> =
            sqlx::query("SELECT detail FROM audit_log").fetch_all(&raw).await.expect("audit").iter().map(|r| r.try_get("detail").expect("detail")).collect();
        assert!(audit_text.iter().all(|d| !d.contains(&secret[4..])), "a secret is in the audit log");
        raw.close().await;

        let revoked = store.revoke_token(info.id, &Actor::Account(p.clone())).await.expect("revoke");
        assert!(revoked.revoked_at.is_some());
        assert_eq!(store.authenticate(&secret).await.expect("auth"), None, "a revoked token authenticates no one");
        assert!(store.authenticate(&other).await.expect("auth").is_some(), "other tokens still work");
        let entries = audit_count(&store).await;
        store.revoke_token(info.id, &Actor::System).await.expect("revoke again is a no-op");
        assert_eq!(audit_count(&store).await, entries);
        let e = store.revoke_token(9999, &Actor::System).await.expect_err("missing");
        assert!(matches!(e, StoreError::NotFound(_)), "{e:?}");

        let listed = store.list_tokens(Some(alice.id)).await.expect("list");
        assert_eq!(listed.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["ci", "laptop"]);
        assert_eq!(store.list_tokens(None).await.expect("list").len(), 2);
        assert!(store.list_tokens(Some(alice.id + 1)).await.expect("list").is_empty());
        let e = store.issue_token(alice.id + 100, "x", &Actor::System).await.expect_err("no account");
        assert!(matches!(e, StoreError::NotFound(_)), "{e:?}");
    }
}

on_both_backends! {
    #[tokio::test]
    async fn accounts_have_unique_names_and_changeable_roles(db) {
        let store = connect(db).await;
        let admin = account(&store, "root", Role::Admin).await;
        let bob = store.create_account("bob", Role::Contributor, &admin).await.expect("create");
        let e = store.create_account("bob", Role::Admin, &admin).await.expect_err("taken");
        assert!(matches!(e, StoreError::Conflict(_)), "{e:?}");
        let e = store.create_account("", Role::Admin, &admin).await.expect_err("empty");
        assert!(matches!(e, StoreError::Invalid(_)), "{e:?}");
        let bob2 = store.set_role(bob.id, Role::Maintainer, &admin).await.expect("set role");
        assert_eq!(bob2.role, Role::Maintainer);
        assert_eq!(store.account(bob.id).await.expect("read").map(|a| a.role), Some(Role::Maintainer));
        let e = store.set_role(9999, Role::Admin, &admin).await.expect_err("missing");
        assert!(matches!(e, StoreError::NotFound(_)), "{e:?}");
        let names: Vec<_> = store.accounts().await.expect("list").into_iter().map(|a| a.name).collect();
        assert_eq!(names, ["bob", "root"]);
        let last = &store.audit(1, 0).await.expect("audit")[0];
        assert_eq!(last.action, audit::ACCOUNT_SET_ROLE);
        assert_eq!(last.actor.as_ref().map(|a| a.name.as_str()), Some("root"));
        assert_eq!(last.actor_token_id, Some(principal(&admin).token_id));
        assert_eq!(last.account_id, Some(bob.id));
        assert_eq!(last.detail, serde_json::json!({ "from": "contributor", "to": "maintainer" }));
    }
}

on_both_backends! {
    #[tokio::test]
    async fn every_write_is_audited_and_rule_writes_bump_the_revision_by_one(db) {
        let store = connect(db).await;
        let revision = store.revision().await.expect("revision");
        let mut entries = audit_count(&store).await;
        let admin = store.create_account("root", Role::Admin, &Actor::System).await.expect("account");
        let (_, token) = store.issue_token(admin.id, "cli", &Actor::System).await.expect("token");
        entries += 2;
        assert_eq!(audit_count(&store).await, entries);
        assert_eq!(store.revision().await.expect("revision"), revision, "account and token writes do not bump");
        let mut counters = (revision, entries);

        let base = variant(&rule("tensor-parallel-over-pcie-slow"), None, "8.0.0");
        let id = base.meta.id.clone();
        store.insert_version(base.clone(), &Actor::System, VersionState::Pending).await.expect("publish");
        expect_one_write(&store, &mut counters, audit::VERSION_PUBLISH, &id, "8.0.0").await;
        store.set_state(&id, "8.0.0", VersionState::Approved, &Actor::System, Some("ok")).await.expect("approve");
        expect_one_write(&store, &mut counters, audit::VERSION_STATE, &id, "8.0.0").await;
        store.insert_version(variant(&base, None, "8.0.1"), &Actor::System, VersionState::Pending).await.expect("publish");
        expect_one_write(&store, &mut counters, audit::VERSION_PUBLISH, &id, "8.0.1").await;
        store.set_state(&id, "8.0.1", VersionState::Rejected, &Actor::System, Some("no")).await.expect("reject");
        expect_one_write(&store, &mut counters, audit::VERSION_STATE, &id, "8.0.1").await;
        store.set_state(&id, "8.0.0", VersionState::Yanked, &Actor::System, Some("bad")).await.expect("yank");
        expect_one_write(&store, &mut counters, audit::VERSION_STATE, &id, "8.0.0").await;
        let last = &store.audit(1, 0).await.expect("audit")[0];
        assert_eq!(last.detail, serde_json::json!({ "from": "approved", "to": "yanked", "reason": "bad" }));
        assert_eq!(last.actor, None, "the system acted");

        store.revoke_token(token.id, &Actor::System).await.expect("revoke");
        assert_eq!(audit_count(&store).await, counters.1 + 1);
        assert_eq!(store.audit(1, 0).await.expect("audit")[0].action, audit::TOKEN_REVOKE);
        let page = store.audit(2, 1).await.expect("audit");
        assert_eq!(page.len(), 2);
        assert!(page[0].id > page[1].id, "newest first");
    }
}

/// Asserts that exactly one write happened since `counters` (revision,
/// audit entries) and that it was `action` on `id` `version`.
async fn expect_one_write(
    store: &Store,
    counters: &mut (i64, usize),
    action: &str,
    id: &str,
    version: &str,
) {
    counters.0 += 1;
    counters.1 += 1;
    assert_eq!(store.revision().await.expect("revision"), counters.0, "after {action} {version}");
    assert_eq!(audit_count(store).await, counters.1, "after {action} {version}");
    let last = &store.audit(1, 0).await.expect("audit")[0];
    assert_eq!(last.action, action);
    assert_eq!((last.rule_id.as_deref(), last.version.as_deref()), (Some(id), Some(version)));
}

on_both_backends! {
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_writers_on_two_pools_never_lose_a_revision(db) {
        // Two stores = two pools, as two server replicas would have.
        let stores = [connect(db).await, connect(db).await];
        let start = stores[0].revision().await.expect("revision");
        let base = rule("decode-throughput-estimate");
        const TASKS: usize = 8;
        const PER_TASK: usize = 4;
        let mut handles = Vec::new();
        for t in 0..TASKS {
            let store = stores[t % 2].clone();
            let base = base.clone();
            handles.push(tokio::spawn(async move {
                for i in 0..PER_TASK {
                    // Half the tasks publish into one shared rule, half into their own.
                    let id = if t % 2 == 0 { "shared-rule".to_owned() } else { format!("rule-of-task-{t}") };
                    let version = format!("1.{t}.{i}");
                    store
                        .insert_version(variant(&base, Some(&id), &version), &Actor::System, VersionState::Pending)
                        .await
                        .expect("concurrent publish");
                    store.set_state(&id, &version, VersionState::Approved, &Actor::System, None).await.expect("concurrent approve");
                }
            }));
        }
        for h in handles {
            h.await.expect("task");
        }
        let writes = (TASKS * PER_TASK * 2) as i64;
        for store in &stores {
            assert_eq!(store.revision().await.expect("revision"), start + writes, "every write bumped exactly once");
        }
        assert_eq!(audit_count(&stores[0]).await, TASKS * PER_TASK * 2);
        let served = served(&stores[1]).await;
        assert_eq!(served.len(), 1 + TASKS / 2);
        assert!(served.contains(&("shared-rule".to_owned(), format!("1.{}.{}", TASKS - 2, PER_TASK - 1))));
        // Each write recorded its revision and what it served, whichever
        // pool made it: the last one serves what the versions table does.
        assert_eq!(stores[0].recorded_revisions().await.expect("recorded"), (0, start + writes));
        assert_eq!(stores[0].revisions(None, 1000).await.expect("history").len() as i64, start + writes + 1);
        assert_eq!(served_at(&stores[1], start + writes).await, served);
    }
}

on_both_backends! {
    /// Every kind of applies_to selector is stored, capability ranges too
    /// (migration 0002; the first schema's CHECK refused them).
    #[tokio::test]
    async fn capability_selectors_are_stored_with_the_others(db) {
        use pitfall_contract::selector::Selector;
        use sqlx::Row;
        let store = connect(db).await;
        store.seed(bundled().to_vec()).await.expect("seed");
        store.close().await;
        let expected: BTreeSet<(String, String)> = bundled()
            .iter()
            .flat_map(|v| {
                v.meta.applies_to.iter().filter_map(|s| match Selector::parse(s) {
                    Ok(Selector::Capability(spec)) => Some((v.meta.id.clone(), spec.as_str().to_owned())),
                    _ => None,
                })
            })
            .collect();
        assert!(!expected.is_empty(), "some bundled rule has a capability range");
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(db.url()).await.expect("pool");
        let rows = sqlx::query("SELECT rule_id, value FROM version_selectors WHERE kind = 'capability'")
            .fetch_all(&pool)
            .await
            .expect("capability rows");
        let got: BTreeSet<(String, String)> =
            rows.iter().map(|r| (r.get::<String, _>(0), r.get::<String, _>(1))).collect();
        assert_eq!(got, expected);
        pool.close().await;
    }
}

on_both_backends! {
    /// The migrations are reversible: down to nothing, then up again, and
    /// the store works on the result.
    #[tokio::test]
    async fn migrations_go_down_to_nothing_and_up_again(db) {
        let store = connect(db).await;
        store.close().await;
        let migrator = match db.backend() {
            pitfall_server::store::Backend::Sqlite => sqlx::migrate!("../migrations/sqlite"),
            pitfall_server::store::Backend::Postgres => sqlx::migrate!("../migrations/postgres"),
        };
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(db.url()).await.expect("pool");
        migrator.undo(&pool, 0).await.expect("down migrations");
        let left = sqlx::query("SELECT revision FROM registry_state").fetch_one(&pool).await;
        assert!(left.is_err(), "the down migrations left registry_state behind");
        pool.close().await;
        let store = connect(db).await;
        assert_eq!(store.revision().await.expect("revision"), 0);
        assert_eq!(store.seed(bundled().to_vec()).await.expect("seed"), bundled().len());
    }
}

on_both_backends! {
    #[tokio::test]
    async fn review_sessions_are_stored_hashed_and_end_idle_old_signed_out_or_revoked(db) {
        use pitfall_server::store::{SESSION_IDLE_MS, SESSION_MAX_MS};
        let store = connect(db).await;
        let mia = store.create_account("mia", Role::Maintainer, &Actor::System).await.expect("account");
        let (secret, info) = store.issue_token(mia.id, "laptop", &Actor::System).await.expect("issue");
        let principal = store.authenticate(&secret).await.expect("auth").expect("valid");
        let raw = sqlx::AnyPool::connect(db.url()).await.expect("raw pool");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).expect("millis"))
            .expect("clock");

        let id = store.create_session(&principal).await.expect("session");
        assert!(id.starts_with("pfs_") && id.len() == 4 + 64, "{id}");
        assert_eq!(store.session(&id).await.expect("read").map(|p| p.token_id), Some(info.id));
        assert_eq!(store.session(&secret).await.expect("read"), None, "a token is no session id");
        let stored: Vec<String> = sqlx::query("SELECT id_sha256 FROM review_sessions")
            .fetch_all(&raw).await.expect("rows").iter().map(|r| r.try_get("id_sha256").expect("hash")).collect();
        assert_eq!(stored, vec![sha256(id.as_bytes())], "only the id's hash is kept");

        // Idle past 12 hours: ended.
        sqlx::query("UPDATE review_sessions SET last_seen_at = $1")
            .bind(now - SESSION_IDLE_MS - 1000).execute(&raw).await.expect("age");
        assert_eq!(store.session(&id).await.expect("read"), None, "idle for 12 h");
        // In use, but signed in over 7 days ago: ended.
        let old = store.create_session(&principal).await.expect("session");
        sqlx::query("UPDATE review_sessions SET created_at = $1, last_seen_at = $2 WHERE id_sha256 = $3")
            .bind(now - SESSION_MAX_MS - 1000).bind(now).bind(sha256(old.as_bytes()))
            .execute(&raw).await.expect("age");
        assert_eq!(store.session(&old).await.expect("read"), None, "older than 7 days");
        // A new session sweeps the ended ones.
        let fresh = store.create_session(&principal).await.expect("session");
        assert_eq!(store.session_count().await.expect("count"), 1);
        // Signed out: ended.
        store.end_session(&fresh).await.expect("sign out");
        assert_eq!(store.session(&fresh).await.expect("read"), None);
        // Revoking the token ends its sessions, and deletes them.
        let live = store.create_session(&principal).await.expect("session");
        assert!(store.session(&live).await.expect("read").is_some());
        store.revoke_token(info.id, &Actor::System).await.expect("revoke");
        assert_eq!(store.session(&live).await.expect("read"), None);
        assert_eq!(store.session_count().await.expect("count"), 0);
        store.close().await;
    }
}

on_both_backends! {
    /// Every write records its revision and what it served, so the set of
    /// any recorded revision can be read back; the changes it lists are
    /// the differences between neighbours.
    #[tokio::test]
    async fn the_history_keeps_what_each_revision_served(db) {
        let store = connect(db).await;
        let maintainer = account(&store, "maria", Role::Maintainer).await;
        let (a, b) = (rule("vllm-needs-sm70"), rule("flash-attn2-needs-sm80"));
        let higher = variant(&a, None, "9.0.0");
        let id = |v: &NewVersion| (v.meta.id.clone(), v.meta.version.clone());
        let mut expected: Vec<Vec<(String, String)>> = vec![vec![]];
        store.seed(vec![a.clone(), b.clone()]).await.expect("seed");
        expected.push(vec![id(&a), id(&b)]);
        store.insert_version(higher.clone(), &Actor::System, VersionState::Pending).await.expect("publish");
        expected.push(vec![id(&a), id(&b)]);
        store.set_state(&a.meta.id, "9.0.0", VersionState::Approved, &maintainer, None).await.expect("approve");
        expected.push(vec![id(&higher), id(&b)]);
        store.set_state(&a.meta.id, "9.0.0", VersionState::Yanked, &maintainer, None).await.expect("yank");
        expected.push(vec![id(&a), id(&b)]);
        store.set_state(&b.meta.id, &b.meta.version, VersionState::Yanked, &maintainer, None).await.expect("yank");
        expected.push(vec![id(&a)]);
        let last = store.revision().await.expect("revision");
        assert_eq!(store.recorded_revisions().await.expect("recorded"), (0, last));
        assert_eq!(served_at(&store, last).await, served(&store).await, "the last revision is what is served");
        for (revision, set) in expected.iter_mut().enumerate() {
            set.sort();
            assert_eq!(&served_at(&store, revision as i64).await, set, "revision {revision}");
        }

        let history = store.revisions(None, 100).await.expect("history");
        type Change<'a> = (String, &'a str, Option<String>, Option<String>);
        let changes: Vec<(i64, Vec<Change<'_>>)> = history
            .iter()
            .map(|r| {
                (r.revision, r.changes.iter().map(|c| (c.rule_id.clone(), c.kind.as_str(), c.from.clone(), c.to.clone())).collect())
            })
            .collect();
        let (a_id, a_v, b_id, b_v) = (a.meta.id.clone(), a.meta.version.clone(), b.meta.id.clone(), b.meta.version.clone());
        let mut seeded = vec![
            (a_id.clone(), "added", None, Some(a_v.clone())),
            (b_id.clone(), "added", None, Some(b_v.clone())),
        ];
        seeded.sort();
        assert_eq!(
            changes,
            vec![
                (5, vec![(b_id, "yanked", Some(b_v), None)]),
                (4, vec![(a_id.clone(), "yanked", Some("9.0.0".to_owned()), Some(a_v.clone()))]),
                (3, vec![(a_id, "version_changed", Some(a_v), Some("9.0.0".to_owned()))]),
                (2, vec![]),
                (1, seeded),
                (0, vec![]),
            ]
        );
        // Pages: below a revision, at most so many.
        let page: Vec<i64> = store.revisions(Some(4), 2).await.expect("page").iter().map(|r| r.revision).collect();
        assert_eq!(page, vec![3, 2]);
        assert!(history.windows(2).all(|w| w[0].recorded_at >= w[1].recorded_at), "newest first");

        // A revision's list says each version's state now.
        let listed = store.served_list_at(3).await.expect("list");
        let states: Vec<(&str, &str)> = listed.iter().map(|e| (e.version.as_str(), e.state.as_str())).collect();
        let mut expected_states = vec![("9.0.0", "yanked"), (b.meta.version.as_str(), "yanked")];
        if listed[0].rule_id != a.meta.id {
            expected_states.reverse();
        }
        assert_eq!(states, expected_states);
    }
}

on_both_backends! {
    /// A database that predates the history (migration 0006 undone)
    /// starts its history at the revision it is at, with what it serves;
    /// the revisions before are not recorded, and every write after is.
    #[tokio::test]
    async fn an_existing_database_starts_its_history_where_it_is(db) {
        let store = connect(db).await;
        let maintainer = account(&store, "maria", Role::Maintainer).await;
        let (a, b) = (rule("vllm-needs-sm70"), rule("flash-attn2-needs-sm80"));
        store.seed(vec![a.clone(), b.clone()]).await.expect("seed");
        store.set_state(&b.meta.id, &b.meta.version, VersionState::Yanked, &maintainer, None).await.expect("yank");
        let served_before = served(&store).await;
        store.close().await;
        let migrator = match db.backend() {
            pitfall_server::store::Backend::Sqlite => sqlx::migrate!("../migrations/sqlite"),
            pitfall_server::store::Backend::Postgres => sqlx::migrate!("../migrations/postgres"),
        };
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(db.url()).await.expect("pool");
        migrator.undo(&pool, 5).await.expect("0006 down");
        assert!(sqlx::query("SELECT 1 FROM served_spans").fetch_all(&pool).await.is_err(), "0006 is undone");
        pool.close().await;

        let store = connect(db).await;
        assert_eq!(store.revision().await.expect("revision"), 2);
        assert_eq!(store.recorded_revisions().await.expect("recorded"), (2, 2));
        assert_eq!(served_at(&store, 2).await, served_before);
        assert!(served_at(&store, 1).await.is_empty(), "revision 1 was never recorded");
        let history = store.revisions(None, 10).await.expect("history");
        assert_eq!(history.len(), 1);
        assert!(history[0].changes.is_empty(), "where history starts is no change");
        store.set_state(&a.meta.id, &a.meta.version, VersionState::Yanked, &maintainer, None).await.expect("yank");
        assert_eq!(store.recorded_revisions().await.expect("recorded"), (2, 3));
        assert!(served_at(&store, 3).await.is_empty());
        assert_eq!(served_at(&store, 2).await, served_before);
        let last = &store.revisions(None, 1).await.expect("history")[0];
        assert_eq!((last.revision, last.changes.len(), last.changes[0].kind.as_str()), (3, 1, "yanked"));
    }
}

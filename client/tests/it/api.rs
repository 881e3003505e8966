//! Every typed call against a real server: answers decode into the shared
//! wire types, and the server's error envelope arrives intact.

use pitfall_api::types::{BatchItem, ExplainRequest, SearchQuery};
use pitfall_api::{Bundle, PublicKey};
use pitfall_client::{BundleFetch, Client, Progress};
use pitfall_contract::parse_manifest;

use crate::server::{Live, PUBLISHED_CRATE, PUBLISHED_ID, SEEDED, bundled, fixture};

fn ids(answer: &pitfall_contract::report::CheckResponse) -> Vec<&str> {
    answer.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

#[test]
fn reads_checks_publish_review_and_the_bundle_round_trip() {
    let live = Live::start(&[]);
    let anonymous = Client::new(&live.url).expect("client");
    let alice = Client::builder(&live.url).token(&live.contributor).build().expect("client");
    let mia = Client::builder(&live.url).token(&live.maintainer).build().expect("client");

    let health = anonymous.health().expect("health");
    assert_eq!(health.rules, SEEDED.len());
    assert_eq!(anonymous.limits().expect("limits").max_batch, 256);

    let g5g = parse_manifest(&fixture("g5g-gemma4-vllm0271.json")).expect("manifest");
    let answer = anonymous.check(&g5g).expect("check");
    assert!(ids(&answer).contains(&"aarch64-official-image-needs-sm80"), "{:?}", ids(&answer));
    assert!(!ids(&answer).contains(&PUBLISHED_ID));
    assert_eq!(answer.ruleset_revision, health.ruleset_revision);

    let bad = anonymous
        .check_json(br#"{"manifest_version": 1, "accelerators": 3}"#)
        .expect_err("invalid");
    assert_eq!((bad.status(), bad.code()), (Some(400), Some("invalid_manifest")), "{bad}");
    assert!(bad.message().contains("accelerators"), "{bad}");

    // Publish: refused with its step, unauthorised without a token, then
    // accepted as pending.
    let refused = alice.publish(b"\0asm not really").expect_err("refused");
    assert_eq!(
        (refused.code(), refused.step()),
        (Some("publish_refused"), Some("validation")),
        "{refused}"
    );
    let anonymous_publish = anonymous.publish(bundled(PUBLISHED_CRATE)).expect_err("needs a token");
    assert_eq!(anonymous_publish.status(), Some(401));
    let pending = alice.publish(bundled(PUBLISHED_CRATE)).expect("published");
    assert_eq!((pending.rule_id.as_str(), pending.state.as_str()), (PUBLISHED_ID, "pending"));
    assert!(pending.report.is_object(), "the pipeline's report: {}", pending.report);
    assert_eq!(alice.whoami().expect("whoami").name, "alice");

    let forbidden = alice
        .approve(PUBLISHED_ID, &pending.version, None)
        .expect_err("contributors do not approve");
    assert_eq!(forbidden.status(), Some(403));
    let queue = mia.review_queue().expect("queue");
    assert_eq!(queue.iter().map(|v| v.rule_id.as_str()).collect::<Vec<_>>(), vec![PUBLISHED_ID]);
    let approved =
        mia.approve(PUBLISHED_ID, &pending.version, Some("sources check out")).expect("approved");
    assert_eq!(approved.state, "approved");
    assert_eq!(approved.review_reason.as_deref(), Some("sources check out"));
    assert!(ids(&anonymous.check(&g5g).expect("check")).contains(&PUBLISHED_ID));

    // Reads.
    let found = anonymous
        .search(&SearchQuery { q: Some("bfloat16".into()), ..SearchQuery::default() })
        .expect("search");
    assert!(found.items.iter().any(|r| r.id == PUBLISHED_ID), "{found:?}");
    let rule = anonymous.rule(PUBLISHED_ID).expect("rule");
    assert_eq!(rule.served_version.as_deref(), Some(pending.version.as_str()));
    assert_eq!(
        anonymous.version(PUBLISHED_ID, &pending.version).expect("version").sha256,
        pending.sha256
    );
    assert_eq!(
        anonymous.module(PUBLISHED_ID, &pending.version).expect("module"),
        bundled(PUBLISHED_CRATE)
    );
    assert_eq!(anonymous.rule("no-such-rule").expect_err("missing").status(), Some(404));

    // The bundle: all three served rules, signed by the server's key; a
    // conditional fetch with its tag costs a 304.
    let BundleFetch::Fetched { bytes, etag: Some(etag) } = anonymous.bundle(None).expect("bundle")
    else {
        panic!("a bundle with an entity tag")
    };
    let key: PublicKey = live.running.public_key;
    let bundle = Bundle::verify(&bytes, &key).expect("verifies with the server's key");
    assert_eq!(bundle.index.rules.len(), 3);
    assert_eq!(bundle.etag(), etag);
    assert_eq!(
        anonymous.bundle(Some(&etag)).expect("conditional"),
        BundleFetch::NotModified { etag: etag.clone() }
    );

    // A yank moves the revision: the old tag no longer matches.
    mia.yank(PUBLISHED_ID, &pending.version, Some("superseded")).expect("yanked");
    let BundleFetch::Fetched { bytes, .. } = anonymous.bundle(Some(&etag)).expect("bundle") else {
        panic!("changed")
    };
    assert_eq!(Bundle::verify(&bytes, &key).expect("verifies").index.rules.len(), 2);
}

#[test]
fn fleets_are_split_into_batches_the_server_accepts_and_answered_in_order() {
    let live = Live::start(&["--max-batch", "2"]);
    let client = Client::new(&live.url).expect("client");
    let g5g = parse_manifest(&fixture("g5g-gemma4-vllm0271.json")).expect("manifest");
    let healthy = parse_manifest(&fixture("h100x8-llama70b-healthy.json")).expect("manifest");
    let fleet: Vec<_> =
        (0..5).map(|i| if i % 2 == 0 { g5g.clone() } else { healthy.clone() }).collect();

    let over = client.check_batch(&fleet).expect_err("over the server's max batch");
    assert_eq!(over.code(), Some("batch_too_large"), "{over}");

    let mut seen = Vec::new();
    let results =
        client.check_all(&fleet, |p: Progress| seen.push((p.done, p.total))).expect("batches");
    assert_eq!(seen, vec![(2, 5), (4, 5), (5, 5)]);
    assert_eq!(results.len(), 5);
    for (i, item) in results.iter().enumerate() {
        let BatchItem::Answer(answer) = item else { panic!("{i}: {item:?}") };
        assert_eq!(answer.has_errors(), i % 2 == 0, "manifest {i}");
    }
}

#[test]
fn explain_and_fix_answer_in_the_shared_types() {
    let live = Live::start(&[]);
    let client = Client::new(&live.url).expect("client");
    let revision = client.health().expect("health").ruleset_revision;
    let g5g_text = fixture("g5g-gemma4-vllm0271.json");
    let g5g = parse_manifest(&g5g_text).expect("manifest");

    // A real log line of the driver rule's signature, explained, then
    // evaluated on the G5g, which has that breakage.
    let log = "Traceback (most recent call last):\n  File \"serve.py\", line 3, in <module>\n    torch.zeros(1).cuda()\nRuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx\n";
    let plain =
        client.explain(&ExplainRequest { log: log.into(), manifest: None }).expect("explain");
    assert_eq!(plain.causes.first().map(|c| c.rule_id.as_str()), Some("cuda-driver-too-old"));
    let cause = &plain.causes[0];
    assert!(cause.holes.iter().any(|h| h.kind == "int" && h.value == "11040"), "{cause:?}");
    assert_eq!(cause.lines, vec![4]);
    assert!(!plain.manifest_checked);
    assert_eq!(plain.ruleset_revision, revision);
    let manifest = serde_json::from_slice(&g5g_text).expect("json");
    let with_setup = client
        .explain(&ExplainRequest { log: log.into(), manifest: Some(manifest) })
        .expect("explain with a manifest");
    assert!(with_setup.manifest_checked);
    assert_eq!(with_setup.causes[0].outcome.as_deref(), Some("matched"));
    let empty = client
        .explain(&ExplainRequest { log: String::new(), manifest: None })
        .expect_err("an empty log");
    assert_eq!((empty.status(), empty.code()), (Some(400), Some("empty_log")), "{empty}");

    // The fix of the G5g against the seeded rules: the error it has now is
    // named, and a plan that clears errors is one the server checks clean.
    let fixed = client.fix(&g5g).expect("fix");
    assert_eq!(fixed.ruleset_revision, revision);
    let before: Vec<&str> = fixed.errors_before.iter().map(|r| r.rule_id.as_str()).collect();
    assert_eq!(before, vec!["cuda-driver-too-old"], "{fixed:?}");
    assert!(fixed.evaluations >= 1 && fixed.evaluations <= fixed.evaluation_bound, "{fixed:?}");
    let plan = fixed.plan.as_ref().expect("a plan on this hardware");
    assert!(fixed.status.clears_errors() && plan.clears_errors, "{fixed:?}");
    assert!(!plan.steps.is_empty());
    assert!(plan.steps.iter().any(|s| s.answers.rule_id == "cuda-driver-too-old"), "{plan:?}");
    let after = client.check(&plan.patched_manifest).expect("check the patched manifest");
    assert!(!after.has_errors(), "the patched manifest still errs: {after:?}");
    assert_eq!(client.fix_json(&g5g_text).expect("fix as text"), fixed);

    let bad = client.fix_json(br#"{"manifest_version": 1, "packages": 3}"#).expect_err("invalid");
    assert_eq!((bad.status(), bad.code()), (Some(400), Some("invalid_manifest")), "{bad}");
    assert!(bad.message().contains("packages"), "{bad}");
}

//! The web pages driven in-process with `oneshot`: statuses, escaping,
//! sizes, forms without JavaScript, the review flow with its cookie and
//! CSRF checks, and golden files of the rendered pages (`web/golden/`;
//! `PITFALL_BLESS=1` rewrites them after an intended change: review the
//! diff).

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use pitfall_engine::{Engine, Limits};
use pitfall_server::registry::{Registry, seed_modules};
use pitfall_server::store::{Actor, Role, Store};
use pitfall_server::{AppState, ServerLimits, app};
use tower::ServiceExt;

use crate::common::{TestDb, databases, sqlite};

/// Left out of the seed, published through the API, reviewed on the page.
const PENDING_CRATE: &str = "rule-vllm-bf16-needs-sm80";
const PENDING_ID: &str = "vllm-bf16-needs-sm80";
/// Every page must stay under this.
const MAX_PAGE_BYTES: usize = 200 * 1024;

struct Site {
    _db: TestDb,
    state: AppState,
    maintainer: String,
    contributor: String,
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Site {
    /// Every bundled rule seeded (but `PENDING_CRATE` when `hold_one`).
    async fn new(db: TestDb, hold_one: bool) -> Site {
        let store = Store::connect(db.url()).await.expect("store");
        let engine = Engine::new(Limits::default()).expect("engine");
        let modules = pitfall_bundled_rules::MODULES
            .iter()
            .copied()
            .filter(|m| !hold_one || m.crate_name != PENDING_CRATE)
            .collect();
        seed_modules(&store, &engine, modules).await.expect("seed");
        let mut tokens = Vec::new();
        for (name, role) in [("mia", Role::Maintainer), ("alice", Role::Contributor)] {
            let account = store.create_account(name, role, &Actor::System).await.expect("account");
            tokens.push(
                store.issue_token(account.id, "test", &Actor::System).await.expect("token").0,
            );
        }
        let registry = Arc::new(
            Registry::open(
                store,
                engine,
                pitfall_server::secret_box::SealingKey::generate().expect("sealing key"),
            )
            .await
            .expect("registry"),
        );
        let [maintainer, contributor] = <[String; 2]>::try_from(tokens).expect("two tokens");
        Site {
            _db: db,
            state: AppState::new(registry, ServerLimits::default()),
            maintainer,
            contributor,
        }
    }

    async fn send(&self, request: Request<Body>) -> Answer {
        let response = app(self.state.clone()).oneshot(request).await.expect("answered");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.expect("body").to_bytes();
        Answer { status, headers, body: String::from_utf8(bytes.to_vec()).expect("utf-8") }
    }

    async fn get(&self, path: &str) -> Answer {
        self.get_with(path, &[]).await
    }

    async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Answer {
        let mut request = Request::builder().uri(path).header("accept", "text/html");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(Body::empty()).expect("request")).await
    }

    async fn post_form(
        &self,
        path: &str,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Answer {
        let body = serde_urlencoded::to_string(form).expect("form");
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("host", "pitfall.test");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(Body::from(body)).expect("request")).await
    }
}

fn q(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).expect("query")
}

/// The G5g field report's setup, as the check form takes it.
fn g5g_form() -> String {
    q(&[
        ("arch", "aarch64"),
        ("gpu", "T4G"),
        ("packages", "vllm==0.27.1\ntorch==2.12.0"),
        ("image", "vllm/vllm-openai:v0.27.1-aarch64"),
        ("model", "google/gemma-4-E2B-it"),
        ("dtype", "bfloat16"),
        ("tp", "1"),
    ])
}

fn assert_page(answer: &Answer, status: StatusCode, what: &str) {
    assert_eq!(answer.status, status, "{what}: {}", &answer.body[..answer.body.len().min(2000)]);
    let kind = answer.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(kind.starts_with("text/html"), "{what}: content-type {kind}");
    assert!(answer.body.len() < MAX_PAGE_BYTES, "{what}: {} bytes", answer.body.len());
    for needle in [
        "<html lang=\"en\">",
        "<main id=\"main\"",
        "<nav aria-label=\"Main\">",
        "name=\"viewport\"",
        "Skip to content",
    ] {
        assert!(answer.body.contains(needle), "{what}: no {needle}");
    }
    assert!(answer.headers.get("content-security-policy").is_some(), "{what}: no CSP");
    // Nothing from outside: every src and href is on this site (or a source link).
    for attr in ["src=\"http", "href=\"//", "src=\"//"] {
        assert!(!answer.body.contains(attr), "{what}: loads from outside ({attr})");
    }
}

#[tokio::test]
async fn every_page_answers_html_under_200_kb_on_both_backends() {
    for db in databases().await {
        let backend = db.backend();
        let site = Site::new(db, false).await;
        let pages = [
            "/".to_owned(),
            "/rules".to_owned(),
            format!("/rules?{}", q(&[("q", "no kernel image is available")])),
            "/rules?package=vllm&accelerator=T4G&severity=error".to_owned(),
            "/rules/vllm-heterogeneous-head-dim".to_owned(),
            format!("/check?{}", g5g_form()),
            "/check".to_owned(),
            "/matrix?package=vllm".to_owned(),
            "/matrix?package=torch&arch=aarch64".to_owned(),
            "/contribute".to_owned(),
            "/review".to_owned(),
        ];
        for path in &pages {
            let answer = site.get(path).await;
            assert_page(&answer, StatusCode::OK, &format!("{backend:?} {path}"));
            eprintln!("page size {:>7} bytes  {path}", answer.body.len());
        }
        let css = site.get("/static/style.css").await;
        assert_eq!(css.status, StatusCode::OK);
        assert!(css.headers["content-type"].to_str().unwrap_or("").starts_with("text/css"));
        let js = site.get("/static/app.js").await;
        assert_eq!(js.status, StatusCode::OK);
        assert!(js.body.len() < 4096, "the script stays small: {} bytes", js.body.len());
    }
}

#[tokio::test]
async fn the_home_form_searches_by_error_text_and_reaches_the_rule() {
    let site = Site::new(sqlite(), false).await;
    let home = site.get("/").await;
    assert!(
        home.body.contains("<form class=\"search explain\" action=\"/explain\" method=\"post\""),
        "a plain form: works without JS"
    );
    assert!(home.body.contains("<textarea id=\"log\" name=\"log\""));
    // What the browser sends when the form is submitted: the user's own
    // text comes back with the matched line marked, the cause and the fix.
    let log = "INFO 05-01 10:00:00 [api_server.py:1] starting\n\
               ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. \
               Your Tesla T4 GPU has compute capability 7.5.\n";
    let explained = site.post_form("/explain", &[("log", log)], &[]).await;
    assert_page(&explained, StatusCode::OK, "explained");
    assert!(explained.body.contains("href=\"/rules/vllm-bf16-needs-sm80\""), "{}", explained.body);
    assert!(explained.body.contains("<mark id=\"line-2\">"), "the matched line is marked");
    assert!(explained.body.contains("Fix:"));
    assert!(explained.body.contains("action=\"/check\""), "check my setup too");
    let nothing = site.post_form("/explain", &[("log", "SyntaxError: invalid syntax")], &[]).await;
    assert_page(&nothing, StatusCode::OK, "nothing explained");
    assert!(nothing.body.contains("No known breakage matches this log"));
    let empty = site.post_form("/explain", &[("log", "  ")], &[]).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    // Search by words from the rules page.
    // What the browser sends when the form is submitted.
    let results =
        site.get(&format!("/rules?{}", q(&[("q", "no kernel image is available")]))).await;
    assert_page(&results, StatusCode::OK, "results");
    assert!(
        results.body.contains("href=\"/rules/aarch64-official-image-needs-sm80\""),
        "{}",
        results.body
    );
    assert!(results.body.contains("<mark>kernel</mark>"), "the matched words are marked");
    let rule = site.get("/rules/aarch64-official-image-needs-sm80").await;
    assert_page(&rule, StatusCode::OK, "rule");
    for needle in [
        "no kernel image is available",
        "How to fix it",
        "Test cases",
        "Versions",
        "data-copy",
        "Check this manifest",
    ] {
        assert!(rule.body.contains(needle), "rule page lacks {needle}");
    }
    // Filters and an empty result.
    let none = site.get("/rules?q=zzzzqq").await;
    assert_page(&none, StatusCode::OK, "no result");
    assert!(none.body.contains("No rule matches."));
    let bad = site.get("/rules?severity=fatal").await;
    assert_page(&bad, StatusCode::BAD_REQUEST, "bad severity");
}

#[tokio::test]
async fn results_are_paginated() {
    let site = Site::new(sqlite(), false).await;
    let first = site.get("/rules").await;
    let pages = pitfall_bundled_rules::MODULES.len().div_ceil(20);
    assert!(pages >= 2, "the bundle fills more than a page");
    assert!(first.body.contains(&format!("Page 1 of {pages}")), "20 rules a page");
    assert!(first.body.contains("href=\"/rules?page=2\""));
    let second = site.get("/rules?page=2").await;
    assert_page(&second, StatusCode::OK, "page 2");
    assert!(
        second.body.contains(&format!("Page 2 of {pages}")) && second.body.contains("rel=\"prev\"")
    );
}

#[tokio::test]
async fn every_user_supplied_text_comes_back_escaped() {
    let site = Site::new(sqlite(), false).await;
    let attack = "<script>alert(1)</script>";
    let paths = [
        format!("/rules?{}", q(&[("q", attack)])),
        format!("/rules?{}", q(&[("q", "x"), ("package", attack), ("accelerator", attack)])),
        format!("/check?{}", q(&[("model", attack), ("image", "x"), ("packages", "vllm==0.27.1")])),
        format!("/check?{}", q(&[("packages", attack)])),
        format!("/check?{}", q(&[("manifest", attack)])),
        format!(
            "/check?{}",
            q(&[(
                "manifest",
                &format!("{{\"manifest_version\": 1, \"workload\": {{\"model\": \"{attack}\"}}}}")
            )])
        ),
        format!("/matrix?{}", q(&[("package", "vllm"), ("model", attack)])),
        "/rules/%3Cscript%3Ealert(1)%3C%2Fscript%3E".to_owned(),
        "/no-such-page-%3Cscript%3Ealert(1)%3C%2Fscript%3E".to_owned(),
    ];
    for path in &paths {
        let answer = site.get(path).await;
        assert!(!answer.body.contains(attack), "{path} echoes the script unescaped");
        assert!(!answer.body.contains("<script>alert"), "{path}");
        if answer.status == StatusCode::OK || answer.status == StatusCode::BAD_REQUEST {
            assert!(
                answer.body.contains("&lt;script&gt;alert(1)&lt;"),
                "{path} does not show the text escaped"
            );
        }
    }
    // A pasted log is shown back escaped, matched or not, and carried
    // escaped to the check form.
    for log in [
        format!(
            "{attack}\nValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your {attack} GPU has compute capability 7.5."
        ),
        attack.to_owned(),
    ] {
        let answer = site.post_form("/explain", &[("log", &log)], &[]).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(!answer.body.contains("<script>alert"), "the explain page echoes the script");
        assert!(answer.body.contains("&lt;script&gt;alert(1)&lt;"));
        let check = site.get(&format!("/check?{}", q(&[("log", &log)]))).await;
        assert!(!check.body.contains("<script>alert"), "the check form echoes the script");
    }
}

#[tokio::test]
async fn the_check_form_with_the_g5g_setup_shows_the_head_dim_finding() {
    let site = Site::new(sqlite(), false).await;
    let answer = site.get(&format!("/check?{}", g5g_form())).await;
    assert_page(&answer, StatusCode::OK, "check");
    for id in [
        "gemma4-transformers-5-15-breaks-vllm",
        "vllm-bf16-needs-sm80",
        "aarch64-official-image-needs-sm80",
    ] {
        assert!(answer.body.contains(&format!("href=\"/rules/{id}\"")), "no {id} finding");
    }
    assert!(answer.body.contains("finding finding-error"));
    assert!(answer.body.contains("install transformers 5.14.1 exactly"), "remedy actions in words");
    // The permalink reproduces the check: it is the form's own GET address.
    let start = answer.body.find("href=\"/check?").expect("a permalink") + 6;
    let link = &answer.body[start..start + answer.body[start..].find('"').expect("end")];
    let again = site.get(&link.replace("&amp;", "&")).await;
    assert_page(&again, StatusCode::OK, "permalink");
    assert!(again.body.contains("href=\"/rules/gemma4-transformers-5-15-breaks-vllm\""));

    // The same setup pasted as a manifest.
    let fixture = std::fs::read_to_string(format!(
        "{}/../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture");
    let pasted = site.get(&format!("/check?{}", q(&[("manifest", &fixture)]))).await;
    assert_page(&pasted, StatusCode::OK, "pasted");
    assert!(pasted.body.contains("href=\"/rules/gemma4-transformers-5-15-breaks-vllm\""));
    // Under the findings, the fix: its steps and the rewritten command.
    let fix = &pasted.body[pasted.body.find("How to make it work").expect("the fix section")..];
    assert!(fix.contains("These changes clear every error"), "a plan");
    assert!(fix.contains("vllm: add --dtype half"), "a step in words");
    assert!(fix.contains("vllm serve google/gemma-4-E2B-it --dtype half"), "the serve line");
    assert!(fix.contains("docker run --ipc=host"), "the container setting");
}

/// A report of the corpus (tests/reports/), as posted.
fn report_file(report: &str, file: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../tests/reports/{report}/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("corpus file")
}

#[tokio::test]
async fn the_check_page_takes_an_environment_paste_and_a_serve_command() {
    let site = Site::new(sqlite(), false).await;
    // sgl-project/sglang#4814: 8 × RTX 4090, SGLang with custom all-reduce on tp 2.
    let paste = report_file("sglang-4814", "env.txt");
    let serve = report_file("sglang-4814", "serve.txt");
    let answer = site.post_form("/check", &[("env", &paste), ("serve", &serve)], &[]).await;
    assert_page(&answer, StatusCode::OK, "paste check");
    assert!(answer.body.contains("Read from your paste"), "the formats read");
    assert!(answer.body.contains("sglang-check-env"));
    assert!(answer.body.contains("<code>drivers.nvidia</code>"), "what the paste lacked");
    assert!(answer.body.contains("Assumed from the tables"), "the enriched values listed");
    assert!(answer.body.contains("gpus table"), "with their table");
    // The link reproduces the check from the manifest built, not the paste.
    let start = answer.body.find("href=\"/check?manifest=").expect("a permalink") + 6;
    let link = &answer.body[start..start + answer.body[start..].find('"').expect("end")];
    let again = site.get(&link.replace("&amp;", "&")).await;
    assert_page(&again, StatusCode::OK, "permalink");

    // Text that is no environment report is refused next to its box.
    let refused = site.post_form("/check", &[("env", "hello there")], &[]).await;
    assert_page(&refused, StatusCode::BAD_REQUEST, "not a paste");
    assert!(refused.body.contains("id=\"env-error\""), "{}", refused.body);
    let bad_serve =
        site.post_form("/check", &[("env", &paste), ("serve", "vllm serve 'unclosed")], &[]).await;
    assert_page(&bad_serve, StatusCode::BAD_REQUEST, "bad serve command");
    assert!(bad_serve.body.contains("id=\"serve-error\""));
}

#[tokio::test]
async fn input_errors_are_shown_next_to_their_fields() {
    let site = Site::new(sqlite(), false).await;
    let answer = site
        .get(&format!(
            "/check?{}",
            q(&[("arch", "sparc"), ("gpu", "Voodoo"), ("packages", "vllm"), ("tp", "zero")])
        ))
        .await;
    assert_page(&answer, StatusCode::BAD_REQUEST, "bad form");
    for field in ["arch", "gpu", "packages", "tp"] {
        assert!(answer.body.contains(&format!("id=\"{field}-error\"")), "no error for {field}");
        assert!(
            answer.body.contains(&format!("aria-describedby=\"{field}")),
            "{field} not described by its error"
        );
    }
    assert!(!answer.body.contains("id=\"model-error\""));
    let not_json = site.get(&format!("/check?{}", q(&[("manifest", "{not json")]))).await;
    assert_page(&not_json, StatusCode::BAD_REQUEST, "not json");
    assert!(
        not_json.body.contains("id=\"manifest-error\"")
            && not_json.body.contains("this is not JSON")
    );
    let wrong = site
        .get(&format!(
            "/check?{}",
            q(&[("manifest", "{\"manifest_version\": 1, \"accelerators\": 3}")])
        ))
        .await;
    assert_page(&wrong, StatusCode::BAD_REQUEST, "invalid manifest");
    assert!(
        wrong.body.contains("id=\"manifest-error\"") && wrong.body.contains("accelerators"),
        "the message names the field"
    );
}

#[tokio::test]
async fn matrix_cells_come_from_the_real_rules_and_link_to_their_findings() {
    let site = Site::new(sqlite(), false).await;
    let matrix = site.get("/matrix?package=vllm&arch=aarch64").await;
    assert_page(&matrix, StatusCode::OK, "matrix");
    assert!(matrix.body.contains("<th scope=\"col\">0.27.1</th>"));
    assert!(matrix.body.contains("<th scope=\"row\">T4G</th>"));
    // T4G under any vLLM on aarch64 fails (no sm_75 kernels in the wheels).
    let row = &matrix.body[matrix.body.find("<th scope=\"row\">T4G</th>").expect("row")..];
    let row = &row[..row.find("</tr>").expect("row end")];
    assert!(row.contains("cell cell-error"), "{row}");
    let start = row.find("href=\"").expect("a link") + 6;
    let link = row[start..start + row[start..].find('"').expect("end")].replace("&amp;", "&");
    assert!(link.starts_with("/check?"), "{link}");
    let findings = site.get(&link).await;
    assert_page(&findings, StatusCode::OK, "cell link");
    assert!(findings.body.contains("finding finding-error"), "the cell's findings");
    // An H100 on x86_64 with the newest vLLM has no error.
    let x86 = site.get("/matrix?package=vllm").await;
    let row = &x86.body[x86.body.find("<th scope=\"row\">H100</th>").expect("row")..];
    let row = &row[..row.find("</tr>").expect("row end")];
    let last = &row[row.rfind("<td>").expect("a cell")..];
    assert!(!last.contains("cell-error"), "{last}");
}

#[tokio::test]
async fn unknown_pages_get_an_html_404_and_the_api_keeps_its_envelope() {
    let site = Site::new(sqlite(), false).await;
    let page = site.get("/no-such-page").await;
    assert_page(&page, StatusCode::NOT_FOUND, "unknown page");
    let rule = site.get("/rules/no-such-rule").await;
    assert_page(&rule, StatusCode::NOT_FOUND, "unknown rule");
    assert!(rule.body.contains("no rule no-such-rule"));
    let api = site.get("/v1/no-such-route").await;
    assert_eq!(api.status, StatusCode::NOT_FOUND);
    assert!(api.body.starts_with("{\"error\""), "{}", api.body);
    let api_rule = site.get("/v1/rules/no-such-rule").await;
    assert!(api_rule.body.starts_with("{\"error\""), "{}", api_rule.body);
    // A client that does not ask for HTML gets the envelope, even off /v1.
    let plain =
        site.send(Request::builder().uri("/nothing").body(Body::empty()).expect("request")).await;
    assert!(plain.body.starts_with("{\"error\""));
}

fn cookie_of(answer: &Answer) -> String {
    let set = answer
        .headers
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a cookie")
        .to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/"),
        "{set}"
    );
    set.split(';').next().expect("name=value").to_owned()
}

fn csrf_of(body: &str) -> String {
    let start = body.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    body[start..start + body[start..].find('"').expect("end")].to_owned()
}

#[tokio::test]
async fn maintainers_review_pending_versions_with_forms() {
    for db in databases().await {
        let site = Site::new(db, true).await;
        // A contributor publishes through the API: pending.
        let wasm = pitfall_bundled_rules::MODULES
            .iter()
            .find(|m| m.crate_name == PENDING_CRATE)
            .expect("bundled")
            .wasm;
        let published = site
            .send(
                Request::builder()
                    .method(Method::POST)
                    .uri("/v1/rules")
                    .header("authorization", format!("Bearer {}", site.contributor))
                    .body(Body::from(wasm.to_vec()))
                    .expect("request"),
            )
            .await;
        assert_eq!(published.status, StatusCode::CREATED, "{}", published.body);
        // The version the bundled module carries (it moves when the rule does).
        let version = pitfall_engine::inspect::embedded(wasm)
            .expect("the bundled module's metadata")
            .0
            .version;

        let anonymous = site.get("/review").await;
        assert_page(&anonymous, StatusCode::OK, "sign-in");
        assert!(anonymous.body.contains("action=\"/review/session\" method=\"post\""));
        assert!(!anonymous.body.contains(PENDING_ID));

        let wrong = site.post_form("/review/session", &[("token", "pft_00")], &[]).await;
        assert_page(&wrong, StatusCode::UNAUTHORIZED, "unknown token");
        let contributor =
            site.post_form("/review/session", &[("token", &site.contributor)], &[]).await;
        assert_page(&contributor, StatusCode::FORBIDDEN, "contributor");
        let cross_site = site
            .post_form(
                "/review/session",
                &[("token", &site.maintainer)],
                &[("origin", "https://evil.test")],
            )
            .await;
        assert_eq!(cross_site.status, StatusCode::FORBIDDEN);

        let signed_in = site
            .post_form(
                "/review/session",
                &[("token", &site.maintainer)],
                &[("origin", "http://pitfall.test")],
            )
            .await;
        assert_eq!(signed_in.status, StatusCode::SEE_OTHER);
        let cookie = cookie_of(&signed_in);
        assert!(!signed_in.body.contains(&site.maintainer));
        // The cookie names a server-side session, never the API token; over
        // plain http it is not `Secure`, and it lasts at most 7 days.
        assert!(cookie.starts_with("pitfall_session=pfs_"), "{cookie}");
        assert!(!cookie.contains(&site.maintainer), "the token is not the cookie");
        let set = signed_in.headers["set-cookie"].to_str().expect("cookie").to_owned();
        assert!(set.contains("Max-Age=604800") && !set.contains("Secure"), "{set}");
        let store = site.state.registry().store().clone();
        let sessions = store.session_count().await.expect("count");

        let queue = site.get_with("/review", &[("cookie", &cookie)]).await;
        assert_page(&queue, StatusCode::OK, "queue");
        for needle in [
            PENDING_ID,
            "Tests</dt><dd>",
            "passed",
            "bytes, ABI 1",
            "/approve\" method=\"post\"",
            "Signed in as <strong>mia</strong>",
        ] {
            assert!(queue.body.contains(needle), "queue lacks {needle}");
        }
        assert!(!queue.body.contains(&site.maintainer), "the token is never echoed");
        let csrf = csrf_of(&queue.body);
        // The pending rule's page is visible to the signed-in maintainer only.
        assert_eq!(site.get(&format!("/rules/{PENDING_ID}")).await.status, StatusCode::NOT_FOUND);
        assert_eq!(
            site.get_with(&format!("/rules/{PENDING_ID}"), &[("cookie", &cookie)]).await.status,
            StatusCode::OK
        );

        let action = format!("/review/{PENDING_ID}/{version}/approve");
        let no_csrf = site
            .post_form(&action, &[("csrf", "0"), ("reason", "ok")], &[("cookie", &cookie)])
            .await;
        assert_page(&no_csrf, StatusCode::FORBIDDEN, "csrf");
        let foreign = site
            .post_form(
                &action,
                &[("csrf", &csrf)],
                &[("cookie", &cookie), ("origin", "https://evil.test")],
            )
            .await;
        assert_eq!(foreign.status, StatusCode::FORBIDDEN);
        let no_cookie = site.post_form(&action, &[("csrf", &csrf)], &[]).await;
        assert_eq!(no_cookie.status, StatusCode::UNAUTHORIZED);

        let approved = site
            .post_form(
                &action,
                &[("csrf", &csrf), ("reason", "sources check out")],
                &[("cookie", &cookie)],
            )
            .await;
        assert_eq!(approved.status, StatusCode::SEE_OTHER, "{}", approved.body);
        let location = approved.headers["location"].to_str().expect("location").to_owned();
        let after = site.get_with(&location, &[("cookie", &cookie)]).await;
        assert!(
            after.body.contains(&format!("{PENDING_ID} {version} approved.")),
            "{}",
            after.body
        );
        assert!(after.body.contains("No version is waiting for review."));
        // Checks serve it now, and its page shows the review.
        let rule = site.get(&format!("/rules/{PENDING_ID}")).await;
        assert_page(&rule, StatusCode::OK, "approved rule");
        assert!(rule.body.contains("mia: sources check out"));
        let again = site.post_form(&action, &[("csrf", &csrf)], &[("cookie", &cookie)]).await;
        assert_page(&again, StatusCode::CONFLICT, "approve twice");

        let out =
            site.post_form("/review/signout", &[("csrf", &csrf)], &[("cookie", &cookie)]).await;
        assert_eq!(out.status, StatusCode::SEE_OTHER);
        assert!(out.headers["set-cookie"].to_str().unwrap_or("").contains("Max-Age=0"));
        // Sign-out ended the session on the server: the old cookie, kept
        // (or stolen), opens nothing.
        assert_eq!(store.session_count().await.expect("count"), sessions - 1);
        let replayed = site.get_with("/review", &[("cookie", &cookie)]).await;
        assert_page(&replayed, StatusCode::OK, "sign-in after sign-out");
        assert!(!replayed.body.contains(PENDING_ID) && replayed.body.contains("/review/session"));

        // Over https (a proxy says so), the cookie is `Secure`.
        let https = site
            .post_form(
                "/review/session",
                &[("token", &site.maintainer)],
                &[("x-forwarded-proto", "https")],
            )
            .await;
        assert_eq!(https.status, StatusCode::SEE_OTHER);
        let set = https.headers["set-cookie"].to_str().expect("cookie").to_owned();
        assert!(set.contains("; Secure"), "{set}");
        let cookie = cookie_of(&https);
        assert_eq!(site.get_with("/review", &[("cookie", &cookie)]).await.status, StatusCode::OK);
        assert!(
            site.get_with("/review", &[("cookie", &cookie)]).await.body.contains("Signed in as")
        );

        // Revoking the token ends its sessions.
        let token_id = store
            .authenticate(&site.maintainer)
            .await
            .expect("authenticate")
            .expect("the maintainer")
            .token_id;
        store.revoke_token(token_id, &pitfall_server::store::Actor::System).await.expect("revoke");
        let after_revoke = site.get_with("/review", &[("cookie", &cookie)]).await;
        assert!(!after_revoke.body.contains("Signed in as"), "a revoked token's session lives on");
        assert!(after_revoke.body.contains("/review/session"));
    }
}

// --- golden files -------------------------------------------------------

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../web/golden")
}

/// Replaces RFC 3339 times (publication dates differ per run) by a marker.
fn scrub(html: &str) -> String {
    let bytes = html.as_bytes();
    let mut out = String::with_capacity(html.len());
    let mut i = 0;
    while i < html.len() {
        let looks_like_time = bytes.len() >= i + 24
            && bytes[i..i + 4].iter().all(u8::is_ascii_digit)
            && bytes[i + 4] == b'-'
            && bytes[i + 10] == b'T'
            && bytes[i + 23] == b'Z';
        if looks_like_time {
            out.push_str("<TIME>");
            i += 24;
        } else {
            let c = html[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

#[tokio::test]
async fn rendered_pages_match_their_golden_files() {
    let site = Site::new(sqlite(), false).await;
    let bless = std::env::var_os("PITFALL_BLESS").is_some();
    let pages = [
        ("home", "/".to_owned()),
        (
            "search-no-kernel-image",
            format!("/rules?{}", q(&[("q", "no kernel image is available")])),
        ),
        ("rule-vllm-heterogeneous-head-dim", "/rules/vllm-heterogeneous-head-dim".to_owned()),
        ("check-g5g", format!("/check?{}", g5g_form())),
        ("check-errors", format!("/check?{}", q(&[("arch", "sparc"), ("tp", "0")]))),
        ("matrix-vllm", "/matrix?package=vllm".to_owned()),
        ("contribute", "/contribute".to_owned()),
        ("review-sign-in", "/review".to_owned()),
        ("not-found", "/no-such-page".to_owned()),
    ];
    let mut mismatches = Vec::new();
    for (name, path) in pages {
        let answer = site.get(&path).await;
        let html = scrub(&answer.body);
        let file = golden_dir().join(format!("{name}.html"));
        if bless {
            std::fs::create_dir_all(golden_dir()).expect("golden dir");
            std::fs::write(&file, &html).expect("write golden");
            continue;
        }
        match std::fs::read_to_string(&file) {
            Ok(expected) if expected == html => {}
            Ok(_) => mismatches.push(format!("{name} ({path}) differs from {}", file.display())),
            Err(e) => mismatches.push(format!("{name}: {}: {e}", file.display())),
        }
    }
    assert!(
        mismatches.is_empty(),
        "pages changed (PITFALL_BLESS=1 to accept, then review the diff):\n{}",
        mismatches.join("\n")
    );
}

/// `/watches`: sign-in with any account's token (the review session's
/// rules), then only that account's watches, each with its last
/// evaluation, its findings and the deliveries that did not go through;
/// every user text escaped.
#[tokio::test]
async fn the_watches_page_shows_an_accounts_watches_and_failing_deliveries() {
    use pitfall_server::store::{
        ClaimedDelivery, NewEvent, NewWatch, NewWatchManifest, TryOutcome,
    };
    for db in databases().await {
        let site = Site::new(db, false).await;
        let store = site.state.registry().store().clone();
        let anonymous = site.get("/watches").await;
        assert_page(&anonymous, StatusCode::OK, "sign-in");
        assert!(anonymous.body.contains("action=\"/watches/session\" method=\"post\""));
        let wrong = site.post_form("/watches/session", &[("token", "pft_00")], &[]).await;
        assert_page(&wrong, StatusCode::UNAUTHORIZED, "unknown token");
        let cross_site = site
            .post_form(
                "/watches/session",
                &[("token", &site.contributor)],
                &[("origin", "https://evil.test")],
            )
            .await;
        assert_eq!(cross_site.status, StatusCode::FORBIDDEN);

        // Alice's watch of the G5g machine (through the API, evaluated),
        // and one of mia's she must not see.
        let g5g: serde_json::Value = serde_json::from_slice(
            &std::fs::read(format!(
                "{}/../../shared/fixtures/manifests/g5g-gemma4-vllm0271.json",
                env!("CARGO_MANIFEST_DIR")
            ))
            .expect("fixture"),
        )
        .expect("json");
        let body = serde_json::json!({
            "name": "<script>alert(1)</script> pool",
            "webhook_url": "https://hooks.example.com/pitfall",
            "manifests": {"g5g-<b>1</b>": g5g, "empty": {"manifest_version": 1}},
        });
        let created = site
            .send(
                Request::builder()
                    .method(Method::POST)
                    .uri("/v1/watches")
                    .header("authorization", format!("Bearer {}", site.contributor))
                    .body(Body::from(body.to_string()))
                    .expect("request"),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let watch: serde_json::Value = serde_json::from_str(&created.body).expect("json");
        let id = watch["id"].as_i64().expect("id");
        let mia = store.account_by_name("mia").await.expect("mia").expect("exists");
        store
            .create_watch(
                mia.id,
                NewWatch {
                    name: "mia's private pool".into(),
                    webhook_url: "https://hooks.example.com/mia".into(),
                    secret: site
                        .state
                        .registry()
                        .secret_keys()
                        .seal("a-secret-of-sixteen-or-more")
                        .expect("sealed"),
                    min_severity: "warning".into(),
                    manifests: vec![NewWatchManifest {
                        label: "x".into(),
                        manifest: r#"{"manifest_version":1}"#.into(),
                        findings: Vec::new(),
                    }],
                    evaluated_revision: 0,
                },
            )
            .await
            .expect("mia's watch");
        // A delivery that failed and was given up.
        store
            .enqueue_watch_event(&NewEvent {
                watch_id: id,
                event_id: "w-ping-test".into(),
                kind: "ping",
                body: "{}".into(),
            })
            .await
            .expect("enqueued");
        let claimed: ClaimedDelivery =
            store.claim_delivery(i64::MAX / 2).await.expect("claim").expect("due");
        let outcome = TryOutcome::Failed {
            status: Some(502),
            error: "answered 502 <oops>".into(),
            retry_at: None,
        };
        assert!(store.record_delivery_try(&claimed, &outcome, 12).await.expect("recorded"));

        let signed_in = site
            .post_form(
                "/watches/session",
                &[("token", &site.contributor)],
                &[("origin", "http://pitfall.test")],
            )
            .await;
        assert_eq!(signed_in.status, StatusCode::SEE_OTHER);
        assert_eq!(signed_in.headers["location"], "/watches");
        let cookie = cookie_of(&signed_in);
        let page = site.get_with("/watches", &[("cookie", &cookie)]).await;
        assert_page(&page, StatusCode::OK, "watches");
        for needle in [
            "&lt;script&gt;alert(1)&lt;/script&gt; pool",
            "failing",
            "w-ping-test",
            "answered 502 &lt;oops&gt;",
            "<td>502</td>",
            "given up",
            "on 1 of 2 labels",
            "ruleset revision",
        ] {
            assert!(page.body.contains(needle), "{needle:?} missing from the page");
        }
        assert!(!page.body.contains("<script>alert(1)"), "unescaped");
        assert!(!page.body.contains("mia's private pool"), "another account's watch shown");
    }
}

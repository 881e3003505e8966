//! The web pages in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`, installed by `cargo xtask setup`), driven over the
//! WebDriver protocol against a real `pitfall-server` process on loopback:
//! search by an error text from the home page and reach the rule, run the
//! check form with the G5g setup and see the Gemma 4 finding, open the
//! matrix and follow a cell, move through the home page by keyboard, and
//! render at a phone's width without sideways scrolling. Screenshots go to
//! `target/tmp/web-screenshots/` for people to look at.
//!
//! The WebDriver client is the few calls these tests need, over plain HTTP.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::live::{Server, exchange};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
const WAIT: Duration = Duration::from_secs(30);

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_chromedriver() -> (Killed, SocketAddr) {
    for path in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            Path::new(path).exists(),
            "{path} is missing: the browser tests need Debian's chromium and chromium-driver; \
             `cargo xtask setup` installs them (apt-get install chromium chromium-driver)"
        );
    }
    let port =
        TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromedriver");
    let child = Killed(child);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let start = Instant::now();
    loop {
        if TcpStream::connect(addr).is_ok() {
            let (status, answer) = http(addr, "GET", "/status", None);
            if status == 200 && answer["value"]["ready"] == json!(true) {
                break;
            }
        }
        assert!(start.elapsed() < WAIT, "chromedriver did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, addr)
}

/// One WebDriver exchange: a JSON body, the JSON answer.
fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let (status, data) = exchange(addr, method, path, &[], body.as_bytes());
    (status, serde_json::from_slice(&data).unwrap_or(Value::Null))
}

/// A browser session.
struct Browser {
    driver: SocketAddr,
    session: String,
    base: String,
    shots: PathBuf,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = http(self.driver, "DELETE", &format!("/session/{}", self.session), None);
    }
}

impl Browser {
    fn open(driver: SocketAddr, server: SocketAddr, phone: bool) -> Browser {
        let mut options = json!({
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"],
        });
        if phone {
            options["mobileEmulation"] =
                json!({ "deviceMetrics": { "width": 390, "height": 844, "pixelRatio": 2 } });
        }
        let (status, answer) = http(
            driver,
            "POST",
            "/session",
            Some(
                &json!({ "capabilities": { "alwaysMatch": { "browserName": "chrome", "goog:chromeOptions": options } } }),
            ),
        );
        assert_eq!(status, 200, "new session: {answer}");
        let session = answer["value"]["sessionId"].as_str().expect("a session id").to_owned();
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-screenshots");
        std::fs::create_dir_all(&shots).expect("screenshot dir");
        Browser { driver, session, base: format!("http://{server}"), shots }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, answer) =
            http(self.driver, method, &format!("/session/{}{path}", self.session), body.as_ref());
        assert_eq!(status, 200, "{method} {path}: {answer}");
        answer["value"].clone()
    }

    fn go(&self, path: &str) {
        self.call("POST", "/url", Some(json!({ "url": format!("{}{path}", self.base) })));
    }

    fn url(&self) -> String {
        self.call("GET", "/url", None).as_str().unwrap_or("").to_owned()
    }

    fn source(&self) -> String {
        self.call("GET", "/source", None).as_str().unwrap_or("").to_owned()
    }

    fn find(&self, css: &str) -> String {
        let value =
            self.call("POST", "/element", Some(json!({ "using": "css selector", "value": css })));
        value[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}")).to_owned()
    }

    fn click(&self, css: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/value"), Some(json!({ "text": text })));
    }

    fn script(&self, script: &str) -> Value {
        self.call("POST", "/execute/sync", Some(json!({ "script": script, "args": [] })))
    }

    /// Presses keys (WebDriver key codes, e.g. `\u{E004}` for Tab).
    fn keys(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|c| {
                [
                    json!({ "type": "keyDown", "value": c.to_string() }),
                    json!({ "type": "keyUp", "value": c.to_string() }),
                ]
            })
            .collect();
        self.call(
            "POST",
            "/actions",
            Some(json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": actions }] })),
        );
    }

    fn wait_for_url(&self, part: &str) {
        let start = Instant::now();
        while !self.url().contains(part) {
            assert!(start.elapsed() < WAIT, "the page did not reach {part}: {}", self.url());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn screenshot(&self, name: &str) {
        let data = self.call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or(""))
            .expect("base64 png");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write screenshot");
        eprintln!("screenshot: {}", path.display());
    }

    /// The page's width beyond the viewport (0: no sideways scrolling).
    fn overflow(&self) -> i64 {
        self.script("return document.documentElement.scrollWidth - window.innerWidth;")
            .as_i64()
            .unwrap_or(i64::MAX)
    }
}

#[test]
fn search_check_and_matrix_in_headless_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None, true);
    let addr = server.addr;
    let (_driver, driver) = start_chromedriver();
    let browser = Browser::open(driver, addr, false);

    // Search by an error text on the rules page, reach the rule.
    browser.go("/");
    assert!(browser.source().contains("Hit an error in your ML stack?"));
    browser.screenshot("desktop-home");
    browser.go("/rules");
    browser.type_into("#q", "no kernel image is available\u{E007}");
    browser.wait_for_url("/rules?q=no+kernel+image+is+available");
    let results = browser.source();
    assert!(results.contains("href=\"/rules/aarch64-official-image-needs-sm80\""), "{results}");
    browser.screenshot("desktop-search");
    browser.click("a[href=\"/rules/aarch64-official-image-needs-sm80\"]");
    browser.wait_for_url("/rules/aarch64-official-image-needs-sm80");
    let rule = browser.source();
    assert!(rule.contains("no kernel image is available for execution on the device"));
    assert!(rule.contains("class=\"copy\""), "the script added copy buttons");
    browser.screenshot("desktop-rule");

    // The check form with the G5g field report's setup.
    browser.go("/check");
    browser.click("#arch option[value=\"aarch64\"]");
    browser.click("#gpu option[value=\"T4G\"]");
    browser.type_into("#packages", "vllm==0.27.1, torch==2.12.0");
    browser.type_into("#image", "vllm/vllm-openai:v0.27.1-aarch64");
    browser.type_into("#model", "google/gemma-4-E2B-it");
    browser.click("#dtype option[value=\"bfloat16\"]");
    browser.type_into("#tp", "1");
    browser.click("form[aria-labelledby=\"form-title\"] button[type=\"submit\"]");
    browser.wait_for_url("/check?arch=aarch64");
    let answer = browser.source();
    assert!(
        answer.contains("href=\"/rules/gemma4-transformers-5-15-breaks-vllm\""),
        "the Gemma 4 finding"
    );
    assert!(answer.contains("id=\"permalink\""));
    browser.screenshot("desktop-check-g5g");

    // The environment form with a real paste (vllm-project/vllm#463's
    // nvidia-smi: an A100 and a P100) and a vLLM command line.
    browser.go("/check");
    let paste = std::fs::read_to_string(format!(
        "{}/../tests/reports/vllm-463/env.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("paste");
    browser.type_into("#env", &paste);
    browser.type_into("#serve", "vllm serve facebook/opt-125m --dtype float16");
    browser.click("form[aria-labelledby=\"env-title\"] button[type=\"submit\"]");
    let start = Instant::now();
    while !browser.source().contains("Read from your paste") {
        assert!(start.elapsed() < WAIT, "no answer to the paste: {}", browser.source());
        std::thread::sleep(Duration::from_millis(100));
    }
    let answer = browser.source();
    assert!(answer.contains("<code>nvidia-smi</code>"), "the format read");
    assert!(answer.contains("id=\"permalink\""));
    assert!(!answer.contains("00000000:3F:00.0"), "no bus id in the page");
    browser.screenshot("desktop-check-paste");

    // The matrix: T4G on aarch64 fails under every vLLM; a cell links to its findings.
    browser.go("/matrix?package=vllm&arch=aarch64");
    let matrix = browser.source();
    assert!(matrix.contains("<table class=\"matrix\">"));
    browser.screenshot("desktop-matrix");
    let cell = browser.find("table.matrix tbody tr[data-gpu=\"T4G\"] a.cell");
    let class = browser.call("GET", &format!("/element/{cell}/attribute/class"), None);
    assert_eq!(class.as_str(), Some("cell cell-error"), "T4G's first cell");
    browser.call("POST", &format!("/element/{cell}/click"), Some(json!({})));
    browser.wait_for_url("/check?arch=aarch64&gpu=T4G");
    assert!(browser.source().contains("finding finding-error"));
}

#[test]
fn keyboard_navigation_and_a_phone_width() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None, true);
    let addr = server.addr;
    let (_driver, driver) = start_chromedriver();
    {
        let browser = Browser::open(driver, addr, false);
        browser.go("/");
        // The first Tab reaches the skip link; further Tabs reach the log box.
        browser.keys("\u{E004}");
        let first = browser.script("return document.activeElement.textContent;");
        assert_eq!(first.as_str(), Some("Skip to content"));
        let mut reached = false;
        for _ in 0..15 {
            browser.keys("\u{E004}");
            if browser.script("return document.activeElement.id;").as_str() == Some("log") {
                reached = true;
                break;
            }
        }
        assert!(reached, "Tab never reached the log box");
        // Type an error, Tab to the button, press Enter.
        browser.keys(
            "CUDA error: no kernel image is available for execution on the device\u{E004}\u{E007}",
        );
        browser.wait_for_url("/explain");
        assert!(browser.source().contains("id=\"causes-title\""));
        // The focused element shows a visible outline.
        browser.keys("\u{E004}");
        let outline =
            browser.script("return getComputedStyle(document.activeElement).outlineStyle;");
        assert_ne!(outline.as_str(), Some("none"), "focus is visible");
    }
    let phone = Browser::open(driver, addr, true);
    for (name, path) in [
        ("phone-home", "/"),
        ("phone-search", "/rules?q=no+kernel+image+is+available"),
        ("phone-rule", "/rules/vllm-heterogeneous-head-dim"),
        (
            "phone-check-g5g",
            "/check?arch=aarch64&gpu=T4G&packages=vllm%3D%3D0.27.1&model=google%2Fgemma-4-E2B-it&dtype=bfloat16",
        ),
        ("phone-matrix", "/matrix?package=vllm"),
        ("phone-contribute", "/contribute"),
    ] {
        phone.go(path);
        let width = phone.script("return window.innerWidth;").as_i64().unwrap_or(0);
        assert!(width <= 400, "a phone's viewport: {width}");
        assert!(
            phone.overflow() <= 0,
            "{path} scrolls sideways on a phone ({} px)",
            phone.overflow()
        );
        phone.screenshot(name);
    }
}

/// A real vLLM failure (`tests/reports/vllm-14817`: bfloat16 on a Tesla
/// T4), with the traceback each of four ranks printed after it, prefixed
/// as vLLM's workers prefix their lines: about 80 lines, as pasted.
fn vllm_traceback() -> String {
    let real = include_str!("../../../tests/reports/vllm-14817/error.txt");
    let mut log = String::from(real);
    let worker: Vec<&str> =
        real.lines().filter(|l| l.starts_with("ERROR") || l.starts_with("  ")).collect();
    for rank in 0..4 {
        for line in &worker {
            log.push_str(&format!("\n(VllmWorker rank={rank} pid={}) {line}", 17397 + rank));
        }
    }
    log
}

#[test]
fn a_pasted_vllm_traceback_is_explained_with_its_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), None, true);
    let (_driver, driver) = start_chromedriver();
    let browser = Browser::open(driver, server.addr, false);
    let log = vllm_traceback();
    let lines = log.lines().count();
    assert!((60..=100).contains(&lines), "an ~80-line paste: {lines}");

    browser.go("/");
    browser.type_into("#log", &log);
    browser.click("form.explain button[type=\"submit\"]");
    browser.wait_for_url("/explain");
    let page = browser.source();
    // The right rule first, with its fix, and the user's line marked.
    let first = page.find("class=\"finding finding-").expect("a cause");
    let cause = &page[first..];
    let rule = cause.find("href=\"/rules/").map(|i| &cause[i + 13..]).expect("a rule link");
    assert!(
        rule.starts_with("vllm-bf16-needs-sm80\""),
        "first cause: {}",
        &rule[..60.min(rule.len())]
    );
    assert!(cause.contains("Fix:"), "the fix is shown");
    assert!(page.contains("Your Tesla T4 GPU has compute capability 7.5"), "the user's own values");
    assert!(page.contains("<mark id=\"line-"), "the matched line is marked in the user's text");
    let marked = browser.find("mark");
    let text = browser.call("GET", &format!("/element/{marked}/text"), None);
    assert!(text.as_str().unwrap_or("").contains("Bfloat16 is only supported"), "{text}");
    browser.screenshot("desktop-explain");
    let png = browser.shots.join("desktop-explain.png");
    let _ = std::fs::copy(&png, "/tmp/explain-desktop.png");

    // "Check my setup too" carries the log to the check form.
    browser.click("form.check-too button");
    browser.wait_for_url("/check?log=");
    browser.click("#gpu option[value=\"T4\"]");
    browser.type_into("#packages", "vllm==0.7.3");
    browser.click("#dtype option[value=\"bfloat16\"]");
    browser.click("form[aria-labelledby=\"form-title\"] button[type=\"submit\"]");
    browser.wait_for_url("gpu=T4&packages=");
    let checked = browser.source();
    assert!(checked.contains("id=\"explained-title\""), "the log explained against the setup");
    assert!(checked.contains("Your setup has this breakage."), "the matched rule says so");
    browser.screenshot("desktop-explain-check");
    let _ =
        std::fs::copy(browser.shots.join("desktop-explain-check.png"), "/tmp/explain-check.png");
}

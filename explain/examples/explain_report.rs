//! Prints every rule a signature matches in a log, with its score, the
//! matched line and the filled signature: for calibrating the threshold.
//! `cargo run -p pitfall-explain --example explain_report -- LOG...`

use pitfall_contract::meta::RuleMeta;
use pitfall_explain::Explainer;

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules");
    let mut rules: Vec<RuleMeta> = Vec::new();
    for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let path = entry.path().join("rule.json");
        if let Ok(text) = std::fs::read_to_string(&path) {
            match serde_json::from_str(&text) {
                Ok(meta) => rules.push(meta),
                Err(e) => eprintln!("{}: {e}", path.display()),
            }
        }
    }
    rules.sort_by(|a, b| a.id.cmp(&b.id));
    let explainer = Explainer::new(rules.iter());
    for file in std::env::args().skip(1) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        let log = String::from_utf8_lossy(&bytes);
        println!("== {file}");
        for c in explainer.explain_above(&log, 0.0).causes {
            println!(
                "  {:.3} {}{} (component named: {}, words: {:?}) lines {:?}\n        {}",
                c.score,
                c.rule_id,
                if c.described { " [described]" } else { "" },
                c.names_component,
                c.shared_words,
                c.lines,
                &c.filled[..c.filled.len().min(160)]
            );
        }
    }
}

//! Turns a pasted log into the lines a signature can match: colours,
//! backticks, timestamps and log prefixes removed, each distinct line kept once with
//! every place it appeared (eight tensor-parallel ranks print the same
//! error eight times).

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

/// One distinct line of the log, as signatures see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The text with colours, backticks, prefixes and surrounding blanks
    /// removed.
    pub text: String,
    /// Where it appeared in the user's text: 1-based line numbers, first
    /// occurrence first.
    pub numbers: Vec<usize>,
}

/// A normalised log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Log {
    /// The distinct non-blank lines, in order of first appearance.
    pub lines: Vec<Line>,
    /// Components the log's own prefixes name (`vllm` for a vLLM logger
    /// line or worker prefix, `tgi`, `sglang`, `nccl`).
    pub components: Vec<&'static str>,
    /// How many lines the user's text had.
    pub lines_total: usize,
    /// The non-blank lines in the user's order, each as its position in
    /// `lines`: the structure of a traceback (a header repeated by every
    /// chained exception) is read from this.
    pub order: Vec<usize>,
}

/// One leading prefix that says nothing about the error: a timestamp, a
/// log level with its source location, a worker or rank tag, a compose
/// service, a quote marker. Repeated, so stacked prefixes all go.
static PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    let parts = [
        // Markdown quotes and the Python prompt a reporter pasted with.
        r"(?:>+|\.\.\.) ",
        // Worker tags: `(VllmWorker rank=0 pid=123)`, `(EngineCore_DP0 pid=9)`.
        r"\((?P<worker>[A-Za-z_][\w]*)(?: [\w=.-]+)*\) ",
        // Rank tags: `[rank0]:`, `[rank3]:[W123 ...]` keeps the second.
        r"\[rank\d+\]: ?",
        // ISO and common timestamps, bracketed or not.
        r"\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?(?: (?P<sgl>TP\d+|DP\d+[^\]]*))?\]?:? ",
        // vLLM's logger: `INFO 12-27 08:52:17 config.py:350] ` and
        // `ERROR 05-01 10:00:00 [core.py:123] `.
        r"(?P<vllm>(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)? \[?[\w./-]+:\d+\] )",
        // glog (Triton, TensorFlow): `E1029 03:56:30.380349 1 file.cc:899] `.
        r"[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ [\w./-]+:\d+\] ",
        // Bare times and log levels: `12:00:00 `, `ERROR `, `ERROR: ` left
        // after a timestamp (TGI: `ERROR text_generation_launcher: `).
        r"\d{2}:\d{2}:\d{2}(?:[.,]\d+)? ",
        r"(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL) (?P<tgi>text_generation_\w+: )?",
        // NCCL: `host:pid:tid [0] NCCL INFO `.
        r"[\w.-]+:\d+:\d+ (?:\[\d+\] )?(?P<nccl>NCCL) ",
        // docker compose: `vllm-1  | `.
        r"[\w.-]+ +\| ",
    ];
    let alternation = parts.join("|");
    #[allow(clippy::unwrap_used)] // a constant pattern, exercised by every test
    Regex::new(&format!("^(?:{alternation})")).unwrap()
});

/// Normalises `text`.
pub fn normalize(text: &str) -> Log {
    let mut lines: Vec<Line> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut components: Vec<&'static str> = Vec::new();
    let mut lines_total = 0;
    let mut order = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        lines_total = i + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        // A carriage return redraws the line: what is left is what the
        // terminal showed last.
        let raw = raw.rsplit('\r').next().unwrap_or(raw);
        // Backticks go: a tracker's Markdown eats the ones inside a line a
        // reporter quoted with backticks (`` `model type `x` but` ``), so
        // neither the log's nor the signatures' count (`signature.rs`).
        let plain = strip_ansi(raw).replace('`', "");
        let text = strip_prefixes(plain.trim(), &mut components);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        match seen.get(text) {
            Some(&at) => {
                lines[at].numbers.push(i + 1);
                order.push(at);
            }
            None => {
                seen.insert(text.to_owned(), lines.len());
                order.push(lines.len());
                lines.push(Line { text: text.to_owned(), numbers: vec![i + 1] });
            }
        }
    }
    if text.ends_with('\n') {
        lines_total -= 1;
    }
    Log { lines, components, lines_total, order }
}

/// `text` without terminal escape sequences (colours, cursor moves, OSC
/// titles).
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\u{1b}') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            // CSI: parameters and intermediates up to a final byte @..~.
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ST.
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

/// `text` without its leading prefixes; records the components they name.
fn strip_prefixes<'t>(mut text: &'t str, components: &mut Vec<&'static str>) -> &'t str {
    // Bounded: each round removes at least one byte.
    for _ in 0..8 {
        let Some(caps) = PREFIX.captures(text) else { break };
        let whole = caps.get(0).map_or(0, |m| m.end());
        if whole == 0 {
            break;
        }
        let mut note = |name: &'static str| {
            if !components.contains(&name) {
                components.push(name);
            }
        };
        if caps.name("vllm").is_some() {
            note("vllm");
        }
        if let Some(worker) = caps.name("worker") {
            let w = worker.as_str().to_ascii_lowercase();
            if w.contains("vllm") || w.starts_with("enginecore") || w.starts_with("apiserver") {
                note("vllm");
            }
        }
        if caps.name("sgl").is_some() {
            note("sglang");
        }
        if caps.name("tgi").is_some() {
            note("tgi");
        }
        if caps.name("nccl").is_some() {
            note("nccl");
        }
        text = text[whole..].trim_start();
    }
    text
}

/// Two lines of the user's text that may be one message wrapped by the
/// paste (a terminal, an issue's editor): `... shared memory,` then
/// `Required: 98304, Hardware limit: 65536.`, or `...so: undefined` then
/// `symbol: _ZN3c10...`. Holes never span a line, so such a message is
/// matched on the two joined by a space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapped {
    /// The joined text, with both lines' numbers.
    pub line: Line,
    /// Where the second line starts in the joined text.
    pub split: usize,
    /// The second line's position in [`Log::lines`].
    pub second: usize,
}

/// The longest line taken as the first half of a wrapped message: a
/// paste wraps at a terminal's or an editor's width.
const WRAP_WIDTH: usize = 200;

/// The adjacent line pairs of `log` that read as one wrapped message: the
/// first ends inside a sentence (a comma, or a word followed by a line
/// that starts in lower case).
pub fn wrapped(log: &Log) -> Vec<Wrapped> {
    let mut out = Vec::new();
    // A line repeated in the log is the second half of one join at most.
    let mut seconds = HashSet::new();
    for pair in log.order.windows(2) {
        let (a, b) = (&log.lines[pair[0]], &log.lines[pair[1]]);
        if pair[0] == pair[1] || a.text.len() > WRAP_WIDTH {
            continue;
        }
        let adjacent = a.numbers.iter().any(|n| b.numbers.contains(&(n + 1)));
        let last = a.text.chars().next_back();
        let first = b.text.chars().next();
        // A comma, a word going on in lowercase, or a label whose value
        // the paste put on the next line (`undefined symbol:` / the symbol).
        let continues = last == Some(',')
            || (last == Some(':') && first.is_some_and(|c| !c.is_whitespace()))
            || (last.is_some_and(char::is_alphanumeric) && first.is_some_and(char::is_lowercase));
        if !adjacent || !continues || !seconds.insert(pair[1]) {
            continue;
        }
        let split = a.text.len() + 1;
        let mut numbers = a.numbers.clone();
        numbers.extend(b.numbers.iter().copied().filter(|n| !a.numbers.contains(n)));
        let line = Line { text: format!("{} {}", a.text, b.text), numbers };
        out.push(Wrapped { line, split, second: pair[1] });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_colours_and_repeats_go() {
        let log = "\u{1b}[1;31mERROR\u{1b}[0m 05-01 10:00:00 [core.py:123] EngineCore failed\n\
            (VllmWorker rank=0 pid=123) ValueError: Bfloat16 is only supported\n\
            (VllmWorker rank=1 pid=124) ValueError: Bfloat16 is only supported\n\
            [rank0]: RuntimeError: CUDA error: no kernel image\n\
            \n\
            2024-05-01T12:00:00.123Z ERROR text_generation_launcher: Shard failed\n\
            worker2:182125:182663 [0] NCCL INFO init done\n\
            E1029 03:56:30.380349 1 model_repository_manager.cc:899] failed to load\n\
            > > ggml_cuda_init: failed\n";
        let n = normalize(log);
        let texts: Vec<&str> = n.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "EngineCore failed",
                "ValueError: Bfloat16 is only supported",
                "RuntimeError: CUDA error: no kernel image",
                "Shard failed",
                "init done",
                "failed to load",
                "ggml_cuda_init: failed",
            ]
        );
        assert_eq!(n.lines[1].numbers, [2, 3], "the second rank's copy is folded into the first");
        assert_eq!(n.lines_total, 9);
        assert_eq!(n.components, ["vllm", "tgi", "nccl"]);
    }

    #[test]
    fn text_that_is_not_a_prefix_stays() {
        for line in [
            "ValueError: The model's max seq len (29000) is larger",
            "torch.OutOfMemoryError: CUDA out of memory.",
            "File \"/x/vllm/engine.py\", line 3, in <module>",
            "12 GiB total",
        ] {
            assert_eq!(normalize(line).lines[0].text, line);
        }
    }

    #[test]
    fn carriage_returns_keep_what_was_shown_last() {
        let n = normalize("progress 10%\rprogress 100%\r\nOSError: boom\r\n");
        let texts: Vec<&str> = n.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["progress 100%", "OSError: boom"]);
    }
}

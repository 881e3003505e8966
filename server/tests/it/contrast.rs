//! Colour contrast of the web pages, computed from the stylesheet itself:
//! every text colour on the background it is drawn on meets WCAG AA
//! (4.5:1 for body text), in the light and in the dark scheme.

use std::collections::HashMap;

const STYLESHEET: &str = include_str!("../../../web/static/style.css");

/// (text, background) pairs as the stylesheet uses them.
const PAIRS: &[(&str, &str)] = &[
    ("fg", "bg"),
    ("fg", "panel"),
    ("muted", "bg"),
    ("muted", "panel"),
    ("link", "bg"),
    ("link", "panel"),
    ("bg", "link"),  // buttons
    ("bg", "error"), // danger buttons
    ("error", "bg"), // field errors
    ("error", "error-bg"),
    ("warning", "warning-bg"),
    ("info", "info-bg"),
    ("clear", "clear-bg"),
    ("fg", "warning-bg"), // <mark>
];

/// The custom properties of the first block after `marker`.
fn variables(after: &str) -> HashMap<String, [f64; 3]> {
    let start = STYLESHEET.find(after).unwrap_or_else(|| panic!("{after} not in style.css"));
    let block = &STYLESHEET[start..];
    let block = &block[block.find('{').expect("{") + 1..];
    // The dark scheme nests `:root {` inside the media query.
    let block = block
        .trim_start()
        .strip_prefix(":root")
        .map_or(block, |b| &b[b.find('{').expect("{") + 1..]);
    let block = &block[..block.find('}').expect("}")];
    block
        .split(';')
        .filter_map(|decl| {
            let (name, value) = decl.trim().split_once(':')?;
            let hex = value.trim().strip_prefix('#')?;
            let channel = |i: usize| {
                u8::from_str_radix(&hex[i..i + 2], 16).ok().map(|c| f64::from(c) / 255.0)
            };
            Some((
                name.trim().trim_start_matches("--").to_owned(),
                [channel(0)?, channel(2)?, channel(4)?],
            ))
        })
        .collect()
}

fn luminance(rgb: [f64; 3]) -> f64 {
    let linear = |c: f64| if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) };
    0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2])
}

fn contrast(a: [f64; 3], b: [f64; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

#[test]
fn text_colours_meet_wcag_aa_in_both_schemes() {
    let light = variables(":root");
    let mut dark = light.clone();
    dark.extend(variables("@media (prefers-color-scheme: dark)"));
    assert!(
        light.len() >= 10 && dark["bg"] != light["bg"],
        "the stylesheet's variables were not found"
    );
    let mut failures = Vec::new();
    for (scheme, vars) in [("light", &light), ("dark", &dark)] {
        for (text, background) in PAIRS {
            let ratio = contrast(vars[*text], vars[*background]);
            if ratio < 4.5 {
                failures.push(format!("{scheme}: --{text} on --{background} is {ratio:.2}:1"));
            }
        }
    }
    assert!(failures.is_empty(), "below WCAG AA (4.5:1):\n{}", failures.join("\n"));
    // The check itself can fail: black on white passes, grey on white does not.
    assert!(contrast([0.0; 3], [1.0; 3]) > 20.0);
    assert!(contrast([0.6; 3], [1.0; 3]) < 4.5);
}

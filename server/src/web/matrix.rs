//! `/matrix?package=vllm`: GPU models of the GPU table (one segment at a
//! time: data-center by default) × versions of a package, each cell
//! coloured by the worst finding the served rules give for a manifest
//! generated from that pair (through the check form's own manifest
//! builder, so each cell links to the same check on `/check`). A cell with
//! no finding where rules could not decide without the model's facts says
//! so ("needs a model"), apart from "no known breakage". The versions come
//! from the rules themselves: those their remedies name and those their
//! test cases use.

use std::collections::BTreeSet;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use minijinja::{Value, context};
use pitfall_contract::actions::Action;
use pitfall_contract::manifest_from_value;
use pitfall_engine::Rule;
use pitfall_facts::gpus;
use pitfall_version::Version;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::check::{ARCHES, CheckForm};
use super::rules::{bad_query, is_blank};
use super::{PageError, page, query_string, render};
use crate::app::{AppState, RequestDeadline};
use crate::error::AppError;

/// The most versions shown (the newest ones).
const MAX_VERSIONS: usize = 10;

/// `/matrix` query.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct MatrixQuery {
    #[serde(default, skip_serializing_if = "is_blank")]
    package: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    arch: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    segment: Option<String>,
}

/// The GPU table's segments, as the matrix offers them (rows per page).
const SEGMENTS: [(&str, &str); 5] = [
    ("datacenter", "Data center"),
    ("workstation", "Workstation"),
    ("geforce", "GeForce"),
    ("jetson", "Jetson"),
    ("radeon", "Radeon"),
];

/// Packages the served rules select on (`package:NAME`, with or without a range).
fn packages(rules: &[std::sync::Arc<Rule>]) -> Vec<String> {
    let set: BTreeSet<String> = rules
        .iter()
        .flat_map(|r| r.meta().applies_to.iter())
        .filter_map(|s| match pitfall_contract::selector::Selector::parse(s) {
            // A ranged selector (`package:vllm<0.27.2rc0`) is about its package.
            Ok(pitfall_contract::selector::Selector::Package { name, .. }) => Some(name),
            _ => None,
        })
        .collect();
    set.into_iter().collect()
}

/// Versions of `package` the rules name: in remedies and in test cases.
fn versions(rules: &[std::sync::Arc<Rule>], package: &str) -> Vec<String> {
    let mut found: BTreeSet<String> = BTreeSet::new();
    for rule in rules {
        for action in rule.meta().remedies.iter().flat_map(|r| r.actions.iter()) {
            match action {
                Action::UpgradePackage { package: p, to } if p.eq_ignore_ascii_case(package) => {
                    found.insert(to.clone());
                }
                Action::PinPackage { package: p, version } if p.eq_ignore_ascii_case(package) => {
                    found.insert(version.clone());
                }
                _ => {}
            }
        }
        for case in &rule.info.tests {
            let listed =
                case.manifest.as_ref().and_then(|m| m.get("packages")).and_then(|p| p.as_array());
            for p in listed.into_iter().flatten() {
                let name = p.get("name").and_then(|n| n.as_str()).unwrap_or("");
                if let (true, Some(v)) =
                    (name.eq_ignore_ascii_case(package), p.get("version").and_then(|v| v.as_str()))
                {
                    found.insert(v.to_owned());
                }
            }
        }
    }
    // Placeholders such as `{to}` are not versions.
    let mut parsed: Vec<(Version, String)> =
        found.into_iter().filter_map(|v| Version::parse(&v).ok().map(|p| (p, v))).collect();
    // Development and local builds make noisy columns; releases and release candidates stay.
    parsed.retain(|(p, _)| p.dev().is_none() && p.local().is_none());
    parsed.sort();
    parsed.dedup_by(|a, b| a.0 == b.0);
    let skip = parsed.len().saturating_sub(MAX_VERSIONS);
    parsed.into_iter().skip(skip).map(|(_, v)| v).collect()
}

/// `GET /matrix`.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    query: Result<Query<MatrixQuery>, QueryRejection>,
) -> Result<Response, PageError> {
    let Query(query) = query.map_err(bad_query)?;
    let rules = state.registry().rules();
    let package = query
        .package
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .unwrap_or("vllm")
        .to_ascii_lowercase();
    let arch = query
        .arch
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .unwrap_or("x86_64")
        .to_owned();
    if !ARCHES.contains(&arch.as_str()) {
        return Err(PageError::new(
            StatusCode::BAD_REQUEST,
            format!("arch: choose one of {}", ARCHES.join(", ")),
        ));
    }
    let model = query.model.as_deref().map(str::trim).filter(|m| !m.is_empty()).map(str::to_owned);
    let segment = query
        .segment
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("datacenter")
        .to_owned();
    if !SEGMENTS.iter().any(|(s, _)| *s == segment) {
        let names: Vec<&str> = SEGMENTS.iter().map(|(s, _)| *s).collect();
        return Err(PageError::new(
            StatusCode::BAD_REQUEST,
            format!("segment: choose one of {}", names.join(", ")),
        ));
    }
    let known = packages(rules.rules());
    let columns = versions(rules.rules(), &package);
    let gpus: Vec<String> =
        gpus::table().iter().filter(|g| g.segment == segment).map(|g| g.model.clone()).collect();

    // One form per cell; its manifest is what the cell's link checks.
    let mut cells = Vec::with_capacity(gpus.len() * columns.len());
    for gpu in &gpus {
        for version in &columns {
            let form = CheckForm {
                arch: Some(arch.clone()),
                gpu: Some(gpu.clone()),
                packages: Some(format!("{package}=={version}")),
                model: model.clone(),
                ..CheckForm::default()
            };
            let manifest = form.to_manifest().map_err(|e| {
                PageError::new(
                    StatusCode::BAD_REQUEST,
                    e.into_iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("; "),
                )
            })?;
            let manifest = manifest_from_value(manifest).map_err(|e| {
                AppError::Internal(anyhow::anyhow!(
                    "a generated manifest is invalid: {}",
                    e.message
                ))
            })?;
            cells.push((form, manifest));
        }
    }
    let engine = state.registry().engine().clone();
    let checker = rules.clone();
    let manifests: Vec<_> = cells.iter().map(|(_, m)| m.clone()).collect();
    // The cells side by side on the pool, each checked on its own thread,
    // all stopped at the request's deadline: the middleware's 503 would
    // not end a blocking thread's work.
    let deadline = deadline.0;
    let answers = tokio::task::spawn_blocking(move || {
        manifests
            .into_par_iter()
            .map(|m| checker.check_on_this_thread(&engine, m, deadline))
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(|e| AppError::Internal(anyhow::anyhow!("matrix task failed: {e}")))?
    .map_err(|past| {
        tracing::info!(%past, "the matrix stopped at its request's time bound");
        AppError::Timeout
    })?;

    let mut rows: Vec<Value> = Vec::with_capacity(gpus.len());
    let mut answers = answers.into_iter();
    let mut forms = cells.into_iter().map(|(f, _)| f);
    for gpu in &gpus {
        let mut row_cells = Vec::with_capacity(columns.len());
        for version in &columns {
            let (Some(answer), Some(form)) = (answers.next(), forms.next()) else { break };
            let worst = answer.findings.iter().map(|f| f.severity).max();
            // Rules that could not decide for lack of the model's facts:
            // with no finding, the cell is not "no known breakage".
            let undecided: Vec<&str> = answer
                .undetermined
                .iter()
                .filter(|u| u.missing.iter().any(|m| m.starts_with("workload.")))
                .map(|u| u.rule_id.as_str())
                .collect();
            let needs_model = worst.is_none() && !undecided.is_empty();
            let level =
                if needs_model { "undecided" } else { worst.map_or("clear", |s| s.as_str()) };
            let titles: Vec<&str> = answer.findings.iter().map(|f| f.title.as_str()).collect();
            row_cells.push(context! {
                version => version,
                level => level,
                mark => match worst {
                    None if needs_model => "?".to_owned(),
                    None => "\u{2713}".to_owned(),
                    Some(s) => {
                        let letter = s.as_str()[..1].to_ascii_uppercase();
                        if answer.findings.len() > 1 { format!("{letter}{}", answer.findings.len()) } else { letter }
                    }
                },
                count => answer.findings.len(),
                summary => if needs_model {
                    format!("needs a model: {} could not decide without its facts", undecided.join(", "))
                } else if titles.is_empty() {
                    "no finding".to_owned()
                } else if titles.len() > 3 {
                    format!("{}\nand {} more", titles[..3].join("\n"), titles.len() - 3)
                } else {
                    titles.join("\n")
                },
                link => format!("/check?{}", query_string(&form)),
            });
        }
        rows.push(context! { gpu => gpu, cells => row_cells });
    }
    let ctx = context! {
        package => package,
        arch => arch,
        segment => segment,
        segments => SEGMENTS.iter().map(|(s, label)| context! { value => s, label => label }).collect::<Vec<_>>(),
        model => model.unwrap_or_default(),
        packages => known,
        arches => ARCHES,
        versions => columns,
        rows => rows,
        revision => rules.revision(),
    };
    Ok(page(render("matrix.html", &format!("Compatibility matrix: {package}"), "matrix", ctx)?))
}

//! `/check`: paste a manifest, fill a short form, or paste an environment
//! report (collect_env, sglang.check_env, TGI --env, nvidia-smi) with the
//! serve command; the findings grouped by severity. The manifest and short
//! forms are GET forms, so their address reproduces the check; the
//! environment form is POSTed (a paste is too long for an address) and its
//! answer links to the manifest it built, identifiers redacted. The
//! manifest is built by `POST /v1/manifest/from-text`'s code and checked by
//! the API's `POST /v1/check` handler (same parsing, same cache, same rules).
//! A setup with an error also gets "How to make it work", the answer of
//! `POST /v1/fix`'s handler.

use std::collections::BTreeMap;

use axum::Form;
use axum::body::Body;
use axum::extract::rejection::{FormRejection, QueryRejection};
use axum::extract::{Extension, Query, State};
use axum::response::Response;
use minijinja::{Value, context};
use pitfall_contract::report::CheckResponse;
use pitfall_facts::gpus::{self, Resolution};
use pitfall_fix::{FixResponse, Status};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::rules::{action_words, bad_query, is_blank};
use super::{PageError, page, query_string, render};
use crate::api;
use crate::api::types::{CheckQuery, FromTextRequest};
use crate::error::AppError;
use crate::extract::ApiQuery;
use crate::state::{AppState, RequestDeadline};

/// CPU architectures the form offers (the manifest's normalised names).
pub(crate) const ARCHES: &[&str] = &["x86_64", "aarch64"];
/// dtypes the form offers.
const DTYPES: &[&str] = &["auto", "bfloat16", "float16", "float32"];
/// Serving engines recognised among the packages (sets `workload.engine`).
const ENGINES: &[&str] = &["vllm", "sglang"];
/// The largest tensor-parallel size the form takes.
const MAX_TP: u32 = 64;
/// Longest text accepted in a short form field.
const MAX_FIELD: usize = 300;

/// The check form: a pasted manifest, or the short fields.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub(crate) struct CheckForm {
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) manifest: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) arch: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) gpu: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) packages: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) image: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) model: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) dtype: Option<String>,
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) tp: Option<String>,
    /// An environment paste (the POSTed form).
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) env: Option<String>,
    /// The serve command that goes with it.
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) serve: Option<String>,
    /// A log carried from `/explain` ("check my setup too"): explained
    /// again against the setup checked.
    #[serde(default, skip_serializing_if = "is_blank")]
    pub(crate) log: Option<String>,
}

fn text(field: &Option<String>) -> Option<&str> {
    field.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl CheckForm {
    fn short_form_used(&self) -> bool {
        [&self.arch, &self.gpu, &self.packages, &self.image, &self.model, &self.dtype, &self.tp]
            .iter()
            .any(|f| !is_blank(f))
    }

    /// The manifest the short form describes, or an error per field.
    pub(crate) fn to_manifest(&self) -> Result<serde_json::Value, BTreeMap<&'static str, String>> {
        let mut errors = BTreeMap::new();
        let mut manifest = json!({ "manifest_version": 1 });
        if let Some(arch) = text(&self.arch) {
            if ARCHES.contains(&arch) {
                manifest["host"] = json!({ "arch": arch });
            } else {
                errors.insert("arch", format!("choose one of {}", ARCHES.join(", ")));
            }
        }
        let tp = match text(&self.tp) {
            None => None,
            Some(t) => match t.parse::<u32>() {
                Ok(n) if (1..=MAX_TP).contains(&n) => Some(n),
                _ => {
                    errors.insert("tp", format!("a whole number from 1 to {MAX_TP}"));
                    None
                }
            },
        };
        if let Some(gpu) = text(&self.gpu) {
            match gpus::resolve(gpu, None) {
                Resolution::Found(found) => {
                    let model = found.variant.map_or(&found.gpu.model, |v| &v.name);
                    manifest["accelerators"] = json!([{ "vendor": found.gpu.vendor, "model": model, "count": tp.unwrap_or(1) }]);
                }
                Resolution::Ambiguous(several) => {
                    let names: Vec<&str> = several.iter().map(|g| g.model.as_str()).collect();
                    errors.insert(
                        "gpu",
                        format!("{gpu:?} fits several GPUs ({}); choose one", names.join(", ")),
                    );
                }
                Resolution::Unknown => {
                    errors.insert(
                        "gpu",
                        format!("{gpu:?} is not in the GPU table; choose a model from the list"),
                    );
                }
            }
        }
        let mut engine = None;
        if let Some(packages) = text(&self.packages) {
            match parse_packages(packages) {
                Ok(list) => {
                    engine = list
                        .iter()
                        .map(|(name, _)| name.as_str())
                        .find(|n| ENGINES.contains(n))
                        .map(str::to_owned);
                    manifest["packages"] = list
                        .into_iter()
                        .map(|(name, version)| json!({ "name": name, "version": version, "ecosystem": "pypi" }))
                        .collect();
                }
                Err(message) => {
                    errors.insert("packages", message);
                }
            }
        }
        if let Some(image) = text(&self.image) {
            if image.len() <= MAX_FIELD && !image.chars().any(char::is_whitespace) {
                manifest["container"] = json!({ "image": image });
            } else {
                errors.insert(
                    "image",
                    format!("an image reference, without spaces, at most {MAX_FIELD} characters"),
                );
            }
        }
        let mut workload = serde_json::Map::new();
        if let Some(engine) = engine {
            workload.insert("engine".into(), engine.into());
        }
        if let Some(model) = text(&self.model) {
            if model.len() <= MAX_FIELD {
                workload.insert("model".into(), model.into());
            } else {
                errors.insert("model", format!("at most {MAX_FIELD} characters"));
            }
        }
        if let Some(dtype) = text(&self.dtype) {
            if DTYPES.contains(&dtype) {
                workload.insert("dtype".into(), dtype.into());
            } else {
                errors.insert("dtype", format!("choose one of {}", DTYPES.join(", ")));
            }
        }
        if let Some(tp) = tp {
            workload.insert("tensor_parallel_size".into(), tp.into());
        }
        if !workload.is_empty() {
            manifest["workload"] = workload.into();
        }
        if errors.is_empty() { Ok(manifest) } else { Err(errors) }
    }
}

/// `vllm==0.27.1`, `torch 2.12.0` or `vllm@0.27.1`, one per line or
/// separated by commas.
fn parse_packages(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut packages = Vec::new();
    for item in text.split(['\n', ',']).map(str::trim).filter(|s| !s.is_empty()) {
        let split = item
            .split_once("==")
            .or_else(|| item.split_once('@'))
            .or_else(|| item.split_once(char::is_whitespace));
        let Some((name, version)) = split
            .map(|(n, v)| (n.trim(), v.trim()))
            .filter(|(n, v)| !n.is_empty() && !v.is_empty())
        else {
            return Err(format!(
                "{item:?}: write each package as name==version, e.g. vllm==0.27.1"
            ));
        };
        let name_ok = name.len() <= 100
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let version_ok = version.len() <= 100 && !version.chars().any(char::is_whitespace);
        if !name_ok || !version_ok {
            return Err(format!(
                "{item:?}: a package name is letters, digits, '-', '_' or '.'; then == and a version"
            ));
        }
        packages.push((name.to_ascii_lowercase(), version.to_owned()));
    }
    if packages.len() > 50 {
        return Err("at most 50 packages".into());
    }
    Ok(packages)
}

/// Runs the API's check on a manifest's JSON text.
pub(crate) async fn run_check(
    state: &AppState,
    deadline: RequestDeadline,
    json: String,
) -> Result<CheckResponse, AppError> {
    let response = api::check::check(
        State(state.clone()),
        Extension(deadline),
        ApiQuery(CheckQuery::default()),
        Body::from(json),
    )
    .await?;
    // The API writes its answer as text once; the page reads it back.
    let text = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("reading the check answer: {e}")))?;
    serde_json::from_slice(&text)
        .map_err(|e| AppError::Internal(anyhow::anyhow!("the check answer: {e}")))
}

/// The findings grouped by severity, worst first, for the templates.
pub(crate) fn answer_view(answer: &CheckResponse) -> Value {
    let groups: Vec<Value> = ["error", "warning", "info"]
        .iter()
        .map(|severity| {
            let findings: Vec<Value> = answer
                .findings
                .iter()
                .filter(|f| f.severity.as_str() == *severity)
                .map(|f| {
                    context! {
                        rule_id => f.rule_id,
                        title => f.title,
                        message => f.message,
                        error_signatures => f.error_signatures,
                        remedies => f.remedies.iter().map(|r| context! {
                            summary => r.summary,
                            actions => r.actions.iter().map(|a| action_words(&serde_json::to_value(a).unwrap_or_default())).collect::<Vec<_>>(),
                        }).collect::<Vec<_>>(),
                        evidence => f.evidence.iter().map(|e| context! {
                            path => e.path,
                            value => e.value.as_str().map_or_else(|| e.value.to_string(), str::to_owned),
                            source => serde_json::to_value(e.source).ok().and_then(|s| s.as_str().map(str::to_owned)),
                        }).collect::<Vec<_>>(),
                        references => Value::from_serialize(&f.references),
                    }
                })
                .collect();
            context! { severity => severity, findings => findings }
        })
        .filter(|g| g.get_attr("findings").ok().and_then(|f| f.len()).unwrap_or(0) > 0)
        .collect();
    context! {
        groups => groups,
        total => answer.findings.len(),
        errors => answer.findings.iter().filter(|f| f.severity.as_str() == "error").count(),
        undetermined => Value::from_serialize(&answer.undetermined),
        rule_errors => Value::from_serialize(&answer.rule_errors),
        enriched => answer.enriched.iter().map(|e| context! {
            path => e.evidence.path,
            value => e.evidence.value.as_str().map_or_else(|| e.evidence.value.to_string(), str::to_owned),
            table => e.table,
            key => e.key,
            reference => e.reference,
        }).collect::<Vec<_>>(),
        unresolved => Value::from_serialize(&answer.unresolved),
        revision => answer.ruleset_revision,
        evaluated => answer.stats.rules_evaluated,
        rules_total => answer.stats.rules_total,
    }
}

/// Runs the API's fix on a manifest's JSON text.
pub(crate) async fn run_fix(
    state: &AppState,
    deadline: RequestDeadline,
    json: String,
) -> Result<FixResponse, AppError> {
    api::fix::fix_answer(state, deadline, Body::from(json)).await
}

/// "How to make it work": the plan's steps and commands, or why there is
/// none on this hardware and the plan on other hardware.
pub(crate) fn fix_view(answer: &FixResponse) -> Value {
    fn plan(plan: &pitfall_fix::Plan) -> Value {
        context! {
            cost => plan.cost_summary,
            steps => plan.steps.iter().map(|s| context! {
                text => s.text,
                rule_id => s.answers.rule_id,
                settles => s.undetermined,
            }).collect::<Vec<_>>(),
            serve => plan.artefacts.vllm_serve,
            env => plan.artefacts.env.iter().map(|e| match &e.value {
                Some(v) => format!("export {}={v}", e.name),
                None => format!("unset {}", e.name),
            }).collect::<Vec<_>>(),
            constraints => plan.artefacts.pip_constraints,
            docker => plan.artefacts.docker_run_flags,
            compose => plan.artefacts.compose,
            warnings => plan.leaves.warnings.iter().map(|r| r.rule_id.clone()).collect::<Vec<_>>(),
            settle_with => plan.leaves.settle_with,
        }
    }
    let headline = match answer.status {
        Status::Clear => "No error to fix.",
        Status::Plan => "These changes clear every error:",
        Status::Conflict => {
            "No set of changes clears every error on this hardware: remedies collide."
        }
        Status::HardwareOnly => "No set of changes clears every error on this hardware.",
        Status::NoPlan => "No plan was found.",
    };
    context! {
        headline => headline,
        plan => answer.plan.as_ref().map(plan),
        other => answer.on_other_hardware.as_ref().map(plan),
        conflicts => Value::from_serialize(&answer.conflicts),
        evaluations => answer.evaluations,
        may_not_be_minimal => answer.may_not_be_minimal,
    }
}

/// `GET /check`.
pub(crate) async fn page_handler(
    state: AppState,
    deadline: RequestDeadline,
    form: CheckForm,
) -> Result<Response, PageError> {
    let mut errors: BTreeMap<&'static str, String> = BTreeMap::new();
    let mut answer = None;
    let mut checked = None;
    let mut fix = None;
    let pasted = text(&form.manifest).map(str::to_owned);
    let mut from_text = None;
    let mut permalink_form = form.clone();
    if text(&form.env).is_some() || text(&form.serve).is_some() {
        let request = FromTextRequest {
            env: form.env.clone().unwrap_or_default(),
            serve_command: form.serve.clone(),
            // A log carried from /explain states facts of the same machine.
            log: form.log.clone(),
        };
        let (scan, problems) = api::from_text::build(&state, &request).await?;
        // On the page, a text that could not be read is the user's to fix.
        for problem in problems {
            let field = if problem.field == "serve_command" { "serve" } else { "env" };
            errors.insert(field, problem.message);
        }
        if errors.is_empty() {
            let built = api::from_text::response(scan);
            let json = serde_json::to_string_pretty(&built.manifest).unwrap_or_default();
            match run_check(&state, deadline, json.clone()).await {
                Ok(a) => {
                    answer = Some(answer_view(&a));
                    // The link reproduces the check from the manifest, not the paste.
                    permalink_form =
                        CheckForm { manifest: Some(json.clone()), ..CheckForm::default() };
                    checked = Some(json);
                    from_text = Some(Value::from_serialize(&built));
                }
                Err(e @ (AppError::BadRequest { .. } | AppError::Unprocessable { .. })) => {
                    errors.insert("env", e.describe().1.message);
                }
                Err(e) => return Err(e.into()),
            }
        }
    } else if let Some(json) = pasted.clone() {
        match serde_json::from_str::<serde_json::Value>(&json) {
            Err(e) => {
                errors.insert("manifest", format!("this is not JSON: {e}"));
            }
            Ok(_) => match run_check(&state, deadline, json.clone()).await {
                Ok(a) => {
                    answer = Some(answer_view(&a));
                    fix = fixed(&state, deadline, &a, &json).await?;
                    checked = Some(json);
                }
                Err(
                    e @ (AppError::BadRequest { .. }
                    | AppError::Unprocessable { .. }
                    | AppError::TooLarge { .. }),
                ) => {
                    errors.insert("manifest", e.describe().1.message);
                }
                Err(e) => return Err(e.into()),
            },
        }
    } else if form.short_form_used() {
        match form.to_manifest() {
            Err(e) => errors = e,
            Ok(manifest) => {
                let json = serde_json::to_string_pretty(&manifest).unwrap_or_default();
                match run_check(&state, deadline, json.clone()).await {
                    Ok(a) => {
                        answer = Some(answer_view(&a));
                        fix = fixed(&state, deadline, &a, &json).await?;
                        checked = Some(json);
                    }
                    Err(e @ (AppError::BadRequest { .. } | AppError::Unprocessable { .. })) => {
                        errors.insert("form", e.describe().1.message);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    let log = text(&form.log)
        .map(|l| super::explain::tail(l, super::explain::MAX_CARRIED_LOG_BYTES).to_owned());
    let mut explained = None;
    if let (Some(json), Some(log)) = (&checked, &log) {
        let manifest: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        let answer = api::explain::explain_log(&state, log, Some(manifest), deadline).await?;
        explained = Some(super::explain::explanation_view(log, &answer));
    }
    let permalink = (answer.is_some()).then(|| format!("/check?{}", query_string(&permalink_form)));
    let gpus: Vec<Value> = gpus::table()
        .iter()
        .map(|g| {
            let target = g.compute_capability.as_deref().map_or_else(
                || g.gfx_target.clone().unwrap_or_default(),
                |cc| format!("sm {cc}"),
            );
            context! { model => g.model, label => format!("{} ({}, {target})", g.model, g.architecture) }
        })
        .collect();
    let ctx = context! {
        form => Value::from_serialize(&form),
        log => log,
        explained => explained,
        pasted => pasted.is_some(),
        from_text => from_text,
        errors => Value::from_serialize(&errors),
        answer => answer,
        fix => fix,
        checked => checked,
        permalink => permalink,
        gpus => gpus,
        arches => ARCHES,
        dtypes => DTYPES,
    };
    let title = if answer_is_some(&ctx) { "Check results" } else { "Check a setup" };
    let response = page(render("check.html", title, "check", ctx)?);
    if errors.is_empty() {
        Ok(response)
    } else {
        // The form is shown again with its errors: the request was wrong.
        let (mut parts, body) = response.into_parts();
        parts.status = axum::http::StatusCode::BAD_REQUEST;
        Ok(Response::from_parts(parts, body))
    }
}

/// The fix view of a checked manifest that has an error, else none.
async fn fixed(
    state: &AppState,
    deadline: RequestDeadline,
    answer: &CheckResponse,
    json: &str,
) -> Result<Option<Value>, PageError> {
    if !answer.has_errors() {
        return Ok(None);
    }
    match run_fix(state, deadline, json.to_owned()).await {
        Ok(answer) => Ok(Some(fix_view(&answer))),
        // The findings stand without it: a fix past the request's time
        // bound leaves the section out rather than the page.
        Err(AppError::Timeout) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn answer_is_some(ctx: &Value) -> bool {
    ctx.get_attr("answer").is_ok_and(|a| !a.is_none() && !a.is_undefined())
}

/// `GET /check` (the form's fields in the query string).
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    form: Result<Query<CheckForm>, QueryRejection>,
) -> Result<Response, PageError> {
    let Query(form) = form.map_err(bad_query)?;
    page_handler(state, deadline, form).await
}

/// `POST /check` (the environment form, form-encoded).
pub(crate) async fn submit(
    State(state): State<AppState>,
    Extension(deadline): Extension<RequestDeadline>,
    form: Result<Form<CheckForm>, FormRejection>,
) -> Result<Response, PageError> {
    let form = match form {
        Ok(Form(form)) => form,
        Err(e) => {
            return Err(
                AppError::BadRequest { code: "invalid_form", message: e.body_text() }.into()
            );
        }
    };
    page_handler(state, deadline, form).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_form_builds_a_manifest() {
        let form = CheckForm {
            arch: Some("aarch64".into()),
            gpu: Some("T4G".into()),
            packages: Some("vllm==0.27.1\ntorch 2.12.0".into()),
            model: Some("google/gemma-4-E2B-it".into()),
            dtype: Some("bfloat16".into()),
            tp: Some("1".into()),
            ..CheckForm::default()
        };
        let manifest = form.to_manifest().expect("valid");
        assert_eq!(manifest["host"]["arch"], "aarch64");
        assert_eq!(manifest["accelerators"][0]["model"], "T4G");
        assert_eq!(manifest["packages"][1]["version"], "2.12.0");
        assert_eq!(manifest["workload"]["engine"], "vllm");
    }

    #[test]
    fn each_bad_field_gets_its_own_error() {
        let form = CheckForm {
            arch: Some("sparc".into()),
            gpu: Some("Voodoo 2".into()),
            packages: Some("vllm".into()),
            tp: Some("zero".into()),
            ..CheckForm::default()
        };
        let errors = form.to_manifest().expect_err("invalid");
        assert_eq!(errors.keys().copied().collect::<Vec<_>>(), ["arch", "gpu", "packages", "tp"]);
    }
}

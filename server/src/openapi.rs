//! `GET /v1/openapi.json`, generated from the code: the operations are
//! listed once here, and every request and answer schema is derived from
//! the Rust types the handlers (de)serialise. A test checks that every
//! operation listed is routed and every route is listed.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use crate::api::types::*;
use pitfall_api::watch::{
    ChangeWatchRequest, CreateWatchRequest, DeliveryView, PingQueued, WatchDetail, WatchView,
};
use pitfall_contract::Manifest;
use pitfall_contract::report::CheckResponse;

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone.
    Anonymous,
    /// A signed-in account (any role).
    Token,
    /// A maintainer or admin.
    Maintainer,
    /// An admin.
    Admin,
}

/// One documented operation.
#[derive(Debug)]
pub struct Operation {
    /// GET, POST, PUT, DELETE.
    pub method: &'static str,
    /// The path template, `{param}` style.
    pub path: &'static str,
    /// What it does.
    pub summary: &'static str,
    /// Who may call it.
    pub access: Access,
    /// The request body: content type and schema.
    request: Option<(&'static str, SchemaFn)>,
    /// The success answer: status, content type and schema.
    response: (u16, &'static str, SchemaFn),
    /// Query parameters: a type whose fields are the parameters.
    query: Option<SchemaFn>,
}

/// Produces a schema (usually a `$ref`) from the shared generator.
type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

fn binary(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "type": "string", "format": "binary" })
}

/// A bundle is binary; its signed index is documented as `BundleIndex`.
fn bundle_schema(generator: &mut SchemaGenerator) -> Schema {
    let index = generator.subschema_for::<pitfall_api::BundleIndex>();
    schemars::json_schema!({ "type": "string", "format": "binary", "description": "PITFALLB header, the signed JSON index, its ed25519 signature, the modules", "x-pitfall-index": index })
}

fn text(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "type": "string" })
}

const JSON: &str = "application/json";
const WASM: &str = "application/wasm";
const BUNDLE: &str = pitfall_api::bundle::MEDIA_TYPE;
const SCHEMA: &str = pitfall_api::schemas::MEDIA_TYPE;

macro_rules! op {
    ($method:literal $path:literal, $access:ident, $summary:literal,
     request: $req:expr, query: $query:expr, response: $status:literal $ctype:expr => $resp:expr) => {
        Operation {
            method: $method,
            path: $path,
            summary: $summary,
            access: Access::$access,
            request: $req,
            query: $query,
            response: ($status, $ctype, $resp),
        }
    };
}

/// Every operation of API v1.
pub fn operations() -> Vec<Operation> {
    vec![
        op!("GET" "/healthz", Anonymous, "Liveness, with the served ruleset revision.",
            request: None, query: None, response: 200 JSON => schema::<Health>),
        op!("GET" "/readyz", Anonymous, "Readiness: 503 while the store is unreachable.",
            request: None, query: None, response: 200 JSON => schema::<Health>),
        op!("GET" "/metrics", Anonymous, "Prometheus metrics (the OpenMetrics text format).",
            request: None, query: None, response: 200 "application/openmetrics-text" => text),
        op!("GET" "/v1/openapi.json", Anonymous, "This document.",
            request: None, query: None, response: 200 JSON => |_| schemars::json_schema!({ "type": "object" })),
        op!("GET" "/v1/limits", Anonymous, "The bounds on one request (batch size, manifest and body bytes).",
            request: None, query: None, response: 200 JSON => schema::<LimitsView>),
        op!("GET" "/v1/bundle", Anonymous, "The served rules as one ed25519-signed file (format: api/BUNDLE.md; its index schema is BundleIndex). ETag from the revision and content; If-None-Match answers 304.",
            request: None, query: None, response: 200 BUNDLE => bundle_schema),
        op!("POST" "/v1/check", Anonymous, "Check one manifest (v1) against the served rules, or with `revision` as the registry did at that recorded revision (its rules then, yanked ones included; the answer says `as_of: true` when that is not the served revision; an unrecorded revision is 404). The x-pitfall-ruleset-revision header names the revision that answered.",
            request: Some((JSON, schema::<Manifest>)), query: Some(schema::<CheckQuery>), response: 200 JSON => schema::<CheckResponse>),
        op!("POST" "/v1/check/batch", Anonymous, "Check many manifests; answers in order, each its full answer or its own error. `revision` as for /v1/check.",
            request: Some((JSON, schema::<BatchRequest>)), query: Some(schema::<CheckQuery>), response: 200 JSON => schema::<BatchResponse>),
        op!("POST" "/v1/manifest/from-text", Anonymous, "Build a manifest from an environment paste (collect_env, sglang.check_env, TGI --env, nvidia-smi) and a serve command; names what they did not say. Identifiers are redacted; nothing is stored.",
            request: Some((JSON, schema::<FromTextRequest>)), query: None, response: 200 JSON => schema::<FromTextResponse>),
        op!("POST" "/v1/fix", Anonymous, "The nearest configuration that passes: the cheapest remedies that clear every error finding of one manifest (v1), with the patched manifest, the ordered steps, what they leave, their cost and the commands; at most 256 checks, within the request's time bound.",
            request: Some((JSON, schema::<Manifest>)), query: None, response: 200 JSON => schema::<pitfall_fix::FixResponse>),
        op!("POST" "/v1/explain", Anonymous, "Explain a pasted log (at most 256 KiB; JSON, or the log as text/plain): the rules whose error signatures match it, ranked, each with the matched lines, the signature filled with the log's values and the finding with its remedies; with a manifest, each evaluated on it too (matched first). Below the threshold nothing is returned, and `related` offers the text search's leads.",
            request: Some((JSON, schema::<ExplainRequest>)), query: None, response: 200 JSON => schema::<ExplainResponse>),
        op!("GET" "/v1/schemas/{name}", Anonymous, "The JSON Schema (2020-12, with `$id`) of a CLI command's `--format json` output: check.json, scan.json, explain.json or fix.json.",
            request: None, query: None, response: 200 SCHEMA => |_| schemars::json_schema!({ "type": "object" })),
        op!("GET" "/v1/rules", Anonymous, "Search rules by text (titles, summaries, error signatures) and filters.",
            request: None, query: Some(schema::<SearchQuery>), response: 200 JSON => schema::<SearchResponse>),
        op!("POST" "/v1/rules", Token, "Publish a module (the body is the .wasm); its metadata is read from the module. Stored as pending.",
            request: Some((WASM, binary)), query: None, response: 201 JSON => schema::<VersionDetail>),
        op!("GET" "/v1/catalogue", Anonymous, "Every served rule: its component, its sources and the date its boundaries were checked, generated from the rules.",
            request: None, query: None, response: 200 JSON => schema::<pitfall_contract::meta::Catalogue>),
        op!("GET" "/v1/rules/{id}", Anonymous, "A rule and its versions.",
            request: None, query: None, response: 200 JSON => schema::<RuleDetail>),
        op!("GET" "/v1/rules/{id}/versions/{version}", Anonymous, "One version: metadata, tests, publish report, state.",
            request: None, query: None, response: 200 JSON => schema::<VersionDetail>),
        op!("GET" "/v1/rules/{id}/versions/{version}/module", Anonymous, "The version's module bytes.",
            request: None, query: None, response: 200 WASM => binary),
        op!("POST" "/v1/rules/{id}/versions/{version}/approve", Maintainer, "Approve a pending version: checks serve it.",
            request: Some((JSON, schema::<ReviewRequest>)), query: None, response: 200 JSON => schema::<VersionDetail>),
        op!("POST" "/v1/rules/{id}/versions/{version}/reject", Maintainer, "Reject a pending version.",
            request: Some((JSON, schema::<ReviewRequest>)), query: None, response: 200 JSON => schema::<VersionDetail>),
        op!("POST" "/v1/rules/{id}/versions/{version}/yank", Token, "Yank a version (its owner or a maintainer): no longer served; never deleted.",
            request: Some((JSON, schema::<ReviewRequest>)), query: None, response: 200 JSON => schema::<VersionDetail>),
        op!("GET" "/v1/review", Maintainer, "The review queue: pending versions, oldest first.",
            request: None, query: None, response: 200 JSON => schema::<Vec<VersionDetail>>),
        op!("GET" "/v1/whoami", Token, "The caller's account.",
            request: None, query: None, response: 200 JSON => schema::<AccountView>),
        op!("POST" "/v1/accounts", Admin, "Create an account.",
            request: Some((JSON, schema::<CreateAccountRequest>)), query: None, response: 201 JSON => schema::<AccountView>),
        op!("PUT" "/v1/accounts/{name}/role", Admin, "Change an account's role.",
            request: Some((JSON, schema::<SetRoleRequest>)), query: None, response: 200 JSON => schema::<AccountView>),
        op!("GET" "/v1/tokens", Token, "The caller's tokens (an admin's: everyone's), without secrets.",
            request: None, query: None, response: 200 JSON => schema::<Vec<TokenView>>),
        op!("POST" "/v1/tokens", Token, "Issue a token (to the caller, or as admin to any account). The secret is shown once.",
            request: Some((JSON, schema::<IssueTokenRequest>)), query: None, response: 201 JSON => schema::<IssuedToken>),
        op!("DELETE" "/v1/tokens/{id}", Token, "Revoke a token (the caller's own, or as admin any).",
            request: None, query: None, response: 200 JSON => schema::<TokenView>),
        op!("GET" "/v1/audit", Admin, "The audit log, newest first.",
            request: None, query: None, response: 200 JSON => schema::<Vec<AuditView>>),
        op!("GET" "/v1/revisions", Anonymous, "The recorded ruleset revisions, newest first, each with when it was committed and the served rules it changed (added, version_changed, yanked, removed); paged with `before`.",
            request: None, query: Some(schema::<RevisionsQuery>), response: 200 JSON => schema::<RevisionsResponse>),
        op!("GET" "/v1/revisions/{revision}", Anonymous, "The rule versions a recorded revision served, each with its state now.",
            request: None, query: None, response: 200 JSON => schema::<RevisionDetail>),
        op!("GET" "/v1/watches", Token, "The caller's watches (an admin's: everyone's).",
            request: None, query: None, response: 200 JSON => schema::<Vec<WatchView>>),
        op!("POST" "/v1/watches", Token, "Watch a manifest or a fleet (up to 10,000, each labelled): when the served ruleset changes, the findings that are new or gone are POSTed to the webhook (body: WatchEvent), signed with HMAC-SHA256 in `Pitfall-Signature: t=<unix seconds>,v1=<hex of HMAC(secret, \"t.body\")>`, with `Pitfall-Event-Id` (the idempotency id) and `Pitfall-Event`. A secret left out is made and shown once.",
            request: Some((JSON, schema::<CreateWatchRequest>)), query: None, response: 201 JSON => schema::<WatchDetail>),
        op!("GET" "/v1/watches/{id}", Token, "A watch (its owner's or, for an admin, any) with each label's findings at its last evaluation.",
            request: None, query: None, response: 200 JSON => schema::<WatchDetail>),
        op!("PATCH" "/v1/watches/{id}", Token, "Replace a watch's manifests (evaluated now, notifying nothing), webhook URL or least severity.",
            request: Some((JSON, schema::<ChangeWatchRequest>)), query: None, response: 200 JSON => schema::<WatchDetail>),
        op!("DELETE" "/v1/watches/{id}", Token, "Delete a watch, its manifests and its deliveries.",
            request: None, query: None, response: 200 JSON => schema::<WatchView>),
        op!("GET" "/v1/watches/{id}/deliveries", Token, "The delivery log, newest first: each event's state, tries, status codes and errors, all read as of one moment (a try shows with the state it left its event in).",
            request: None, query: Some(schema::<crate::api::watches::DeliveriesQuery>), response: 200 JSON => schema::<Vec<DeliveryView>>),
        op!("POST" "/v1/watches/{id}/test", Token, "Enqueue a signed ping to the webhook, delivered (and retried) as any event.",
            request: None, query: None, response: 202 JSON => schema::<PingQueued>),
    ]
}

/// The OpenAPI 3.0 document.
pub fn document() -> Value {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let error = schema::<ErrorEnvelope>(&mut generator);
    let mut paths = Map::new();
    for op in operations() {
        let mut operation = Map::new();
        operation.insert("summary".into(), json!(op.summary));
        // Ids derived from method and path: stable, unique, and what
        // tools such as schemathesis filter operations by.
        let operation_id = format!(
            "{}{}",
            op.method.to_ascii_lowercase(),
            op.path.replace(['{', '}'], "").replace(['/', '.'], "_")
        );
        operation.insert("operationId".into(), json!(operation_id));
        let mut parameters: Vec<Value> = path_params(op.path)
            .map(|name| json!({ "name": name, "in": "path", "required": true, "schema": path_param_schema(op.path, name) }))
            .collect();
        if let Some(query) = op.query {
            parameters.extend(query_params(query(&mut generator), &generator));
        }
        if !parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some((ctype, body)) = op.request {
            operation.insert(
                "requestBody".into(),
                json!({ "required": !OPTIONAL_BODY.contains(&op.path), "content": { ctype: { "schema": body(&mut generator) } } }),
            );
        }
        let (status, ctype, body) = op.response;
        let mut responses = Map::new();
        responses.insert(status.to_string(), json!({ "description": "success", "content": { ctype: { "schema": body(&mut generator) } } }));
        responses.insert("default".into(), json!({ "description": "an error, in the envelope", "content": { JSON: { "schema": error } } }));
        operation.insert("responses".into(), Value::Object(responses));
        if op.access != Access::Anonymous {
            operation.insert("security".into(), json!([{ "bearer": [] }]));
        }
        let entry = paths.entry(op.path.to_owned()).or_insert_with(|| json!({}));
        if let Value::Object(methods) = entry {
            methods.insert(op.method.to_ascii_lowercase(), Value::Object(operation));
        }
    }
    // What a webhook receives is no operation's answer; documented beside them.
    let _ = schema::<pitfall_api::watch::WatchEvent>(&mut generator);
    let mut document = json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Pitfall registry API",
            "version": "1",
            "description": "Known breakages of ML infrastructure: check a manifest, search and publish rules."
        },
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } }
        }
    });
    bound_integers(&mut document);
    document
}

/// Gives every integer schema the bounds of its Rust type. schemars names
/// the type in `format` (`uint32`, `int64`) with at most a minimum; without
/// a maximum the document would promise that a `u32` field takes any
/// integer, and a client (or schemathesis) sending 2^52 would get a 400 the
/// schema did not warn of.
fn bound_integers(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let bounds: Option<(i128, i128)> = match map.get("format").and_then(Value::as_str) {
                Some("uint8") => Some((0, u8::MAX.into())),
                Some("uint16") => Some((0, u16::MAX.into())),
                Some("uint32") => Some((0, u32::MAX.into())),
                Some("uint64" | "uint") => Some((0, u64::MAX.into())),
                Some("int8") => Some((i8::MIN.into(), i8::MAX.into())),
                Some("int16") => Some((i16::MIN.into(), i16::MAX.into())),
                Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
                Some("int64" | "int") => Some((i64::MIN.into(), i64::MAX.into())),
                _ => None,
            };
            if let Some((min, max)) = bounds {
                let number = |n: i128| {
                    u64::try_from(n)
                        .map(Value::from)
                        .unwrap_or_else(|_| Value::from(i64::try_from(n).unwrap_or(i64::MIN)))
                };
                map.entry("minimum").or_insert_with(|| number(min));
                map.entry("maximum").or_insert_with(|| number(max));
            }
            map.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// Operations whose body may be left out: a review's reason.
const OPTIONAL_BODY: &[&str] = &[
    "/v1/rules/{id}/versions/{version}/approve",
    "/v1/rules/{id}/versions/{version}/reject",
    "/v1/rules/{id}/versions/{version}/yank",
];

/// A path parameter's schema: token and watch ids are integers; a schema's name is
/// one of those published; rule ids, versions and account names are
/// strings.
fn path_param_schema(path: &str, name: &str) -> Value {
    if (path.starts_with("/v1/tokens/") || path.starts_with("/v1/watches/")) && name == "id" {
        json!({ "type": "integer", "format": "int64" })
    } else if name == "revision" {
        json!({ "type": "integer", "format": "uint64", "minimum": 0, "maximum": i64::MAX })
    } else if path.starts_with(pitfall_api::schemas::PATH_PREFIX) {
        let names: Vec<&str> =
            pitfall_api::schemas::Output::ALL.iter().map(|o| o.file_name()).collect();
        json!({ "type": "string", "enum": names })
    } else {
        json!({ "type": "string" })
    }
}

/// `{id}` and `{version}` in a path template.
fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
}

/// A query type's fields as query parameters (all optional).
fn query_params(schema: Schema, generator: &SchemaGenerator) -> Vec<Value> {
    // The subschema is a $ref to the definition that holds the fields.
    let resolved = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.rsplit('/').next())
        .and_then(|name| generator.definitions().get(name))
        .cloned()
        .unwrap_or_else(|| schema.to_value());
    let properties =
        resolved.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    properties
        .into_iter()
        .map(|(name, mut field)| {
            let description = field.as_object_mut().and_then(|f| f.remove("description")).unwrap_or(Value::Null);
            json!({ "name": name, "in": "query", "required": false, "description": description, "schema": field })
        })
        .collect()
}

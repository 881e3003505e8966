//! The Extism host of the per-call comparison (`--features extism`): one
//! Extism plug-in per compared rule, built from `bench/extism-plugin`
//! (extism-pdk, compiled to wasm32 by this crate's build script through
//! tools/wasm-build), with the rule's parameters in the plug-in config and
//! two host functions, `field` and `version_in`, that answer from the
//! prepared manifest's field map through the same `Session` the engine's
//! host calls use. The
//! plug-in's answer is turned into the same raw output and rendered by the
//! same `render` as the engine does, so both do the same work per call.
//!
//! Two ways, side by side ([`Isolation`]): Extism's default, one plug-in
//! instance reused across calls; and a plug-in built from a compiled one
//! for every call, the isolation our engine gives every evaluation
//! (nothing a call leaves in memory reaches the next manifest), at
//! Extism's price for it.

use extism::{CompiledPlugin, Manifest, Plugin, PluginBuilder, UserData, Wasm, host_fn};
use pitfall_contract::Prepared;
use pitfall_contract::cases::Evaluation;
use pitfall_contract::meta::RuleMeta;
use pitfall_contract::report::render;
use pitfall_contract::session::Session;

use crate::corpus::{RuleSpec, Template, package_name};

/// The plug-in, built by build.rs.
pub const PLUGIN: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/pitfall_bench_extism_plugin.wasm"));

/// The session of the call in progress.
type Current = Option<Session>;

host_fn!(field(current: Current; path: String) -> String {
    let current = current.get()?;
    let current = current.lock().map_err(|_| extism::Error::msg("poisoned"))?;
    let session = current.as_ref().ok_or_else(|| extism::Error::msg("no call in progress"))?;
    Ok(match session.field_kind(path.as_bytes()) {
        0 => "M".to_owned(),
        _ => match session.field_str(path.as_bytes()) {
            Ok(text) => format!("V{text}"),
            Err(_) => "O".to_owned(),
        },
    })
});

host_fn!(version_in(current: Current; path: String, spec: String) -> String {
    let current = current.get()?;
    let current = current.lock().map_err(|_| extism::Error::msg("poisoned"))?;
    let session = current.as_ref().ok_or_else(|| extism::Error::msg("no call in progress"))?;
    let answer = session.version_in(path.as_bytes(), spec.as_bytes())?;
    Ok(answer.to_string())
});

/// The plug-in builder of one compared rule: its parameters in the config,
/// `field` and `version_in` answering from the session in `current`.
fn builder(spec: &RuleSpec, current: &UserData<Current>) -> PluginBuilder<'static> {
    let template = match spec.template {
        Template::VersionRange => "0",
        Template::VersionAndCapability => "1",
        Template::GpuFamily => "2",
    };
    let manifest = Manifest::new([Wasm::data(PLUGIN)])
        .with_config_key("template", template)
        .with_config_key("package", package_name(spec.package))
        .with_config_key("range", spec.version_spec())
        .with_config_key("floor", format!("{:.1}", spec.capability_floor))
        .with_config_key("family_lo", format!("{:.1}", spec.family.0))
        .with_config_key("family_hi", format!("{:.1}", spec.family.1))
        .with_config_key("flag", format!("SYNTH_FLAG_{:02}", spec.flag));
    PluginBuilder::new(manifest)
        .with_wasi(false)
        .with_function("field", [extism::PTR], [extism::PTR], current.clone(), field)
        .with_function(
            "version_in",
            [extism::PTR, extism::PTR],
            [extism::PTR],
            current.clone(),
            version_in,
        )
}

/// How the plug-ins are used across calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// One plug-in instance per rule, reused across calls (Extism's default).
    Reused,
    /// A fresh plug-in per call from one compiled plug-in per rule
    /// (`Plugin::new_from_compiled`: a new store and instance, as our
    /// engine makes per evaluation).
    FreshPerCall,
}

/// One compared rule's plug-in, as its [`Isolation`] keeps it.
enum Loaded {
    Reused(Plugin),
    FreshPerCall(CompiledPlugin),
}

/// Extism plug-ins for the compared rules.
pub struct ExtismHost {
    plugins: Vec<(Loaded, RuleMeta)>,
    current: UserData<Current>,
}

impl std::fmt::Debug for ExtismHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtismHost").field("plugins", &self.plugins.len()).finish_non_exhaustive()
    }
}

impl ExtismHost {
    /// One plug-in (or compiled plug-in) per rule.
    pub fn new(rules: &[RuleSpec], isolation: Isolation) -> anyhow::Result<ExtismHost> {
        let current: UserData<Current> = UserData::new(None);
        let mut plugins = Vec::new();
        for spec in rules {
            let meta: RuleMeta = serde_json::from_value(crate::corpus::meta(spec))?;
            let builder = builder(spec, &current);
            let loaded = match isolation {
                Isolation::Reused => Loaded::Reused(builder.build()?),
                Isolation::FreshPerCall => Loaded::FreshPerCall(CompiledPlugin::new(builder)?),
            };
            plugins.push((loaded, meta));
        }
        Ok(ExtismHost { plugins, current })
    }
}

impl crate::compare::Host for ExtismHost {
    fn evaluate(&mut self, i: usize, prepared: &Prepared) -> Evaluation {
        let (loaded, meta) = &mut self.plugins[i];
        match loaded {
            Loaded::Reused(plugin) => call(plugin, meta, &self.current, prepared),
            Loaded::FreshPerCall(compiled) => match Plugin::new_from_compiled(compiled) {
                Ok(mut plugin) => call(&mut plugin, meta, &self.current, prepared),
                Err(e) => Evaluation::Failed(format!("{e:#}")),
            },
        }
    }
}

/// One call of `plugin` on `prepared`, its answer rendered as our engine
/// renders a rule's output.
fn call(
    plugin: &mut Plugin,
    meta: &RuleMeta,
    current: &UserData<Current>,
    prepared: &Prepared,
) -> Evaluation {
    let limit = pitfall_engine::Limits::default().max_output_bytes;
    let Ok(current) = current.get() else {
        return Evaluation::Failed("user data".into());
    };
    if let Ok(mut c) = current.lock() {
        *c = Some(Session::new(prepared.fields.clone(), limit));
    }
    let answer: Result<String, _> = plugin.call("evaluate", "");
    let Some(mut session) = current.lock().ok().and_then(|mut c| c.take()) else {
        return Evaluation::Failed("no session".into());
    };
    let answer = match answer {
        Ok(a) => a,
        Err(e) => return Evaluation::Failed(format!("{e:#}")),
    };
    let mut words = answer.split(' ');
    match words.next() {
        Some("0") => Evaluation::Clear,
        Some("2") => {
            let _ = session.missing(words.next().unwrap_or("").as_bytes());
            Evaluation::Undetermined(session.take_output().missing)
        }
        Some("1") => {
            // The first path a template rule reads is its package's version.
            let version_path = meta.reads.first().cloned().unwrap_or_default();
            let _ = session.evidence(version_path.as_bytes());
            let _ = session.param_field(b"version", version_path.as_bytes());
            if words.next() == Some("cc") {
                let cc = b"accelerators.0.compute_capability";
                let _ = session.evidence(cc);
                let _ = session.param_field(b"cc", cc);
            }
            let _ = session.remedy(0);
            match render(meta, &session.take_output(), &prepared.fields) {
                Ok(f) => Evaluation::Matched(Box::new(f.into())),
                Err(e) => Evaluation::Failed(format!("malformed output: {e}")),
            }
        }
        _ => Evaluation::Failed(format!("malformed answer {answer:?}")),
    }
}

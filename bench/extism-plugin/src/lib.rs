//! The three templates of pitfall-bench's synthetic corpus as one Extism
//! plug-in. The rule's parameters come from the plug-in's config (read
//! once per instance); each call reads the manifest's fields through the
//! host function `field` and asks whether its package's version is in its
//! range through `version_in`, both answered from the same flattened field
//! map (and the same comparison) as the Pitfall engine's host calls, and
//! returns the outcome as text: `0` (clear), `2 PATH` (undetermined, the
//! missing path), or `1 -` / `1 cc` (matched; the host quotes the version,
//! and the capability when the second word is `cc`, as the engine's
//! `param_field` does).

use std::sync::OnceLock;

use extism_pdk::*;

#[host_fn]
extern "ExtismHost" {
    /// `V<text>` for a scalar (its text), `O` for an object or array, `M`
    /// for missing.
    fn field(path: String) -> String;
    /// `1` or `0`, or a negative status (`-1` missing) as text.
    fn version_in(path: String, spec: String) -> String;
}

struct Params {
    template: u8,
    package: String,
    range: String,
    floor: f64,
    family: (f64, f64),
    flag: String,
}

static PARAMS: OnceLock<Params> = OnceLock::new();

fn params() -> Result<&'static Params, Error> {
    if let Some(p) = PARAMS.get() {
        return Ok(p);
    }
    let get = |key: &str| -> Result<String, Error> { config::get(key)?.ok_or_else(|| Error::msg(format!("no config {key}"))) };
    let p = Params {
        template: get("template")?.parse()?,
        package: get("package")?,
        range: get("range")?,
        floor: get("floor")?.parse()?,
        family: (get("family_lo")?.parse()?, get("family_hi")?.parse()?),
        flag: get("flag")?,
    };
    Ok(PARAMS.get_or_init(|| p))
}

enum Field {
    Missing,
    Other,
    Text(String),
}

fn read(path: &str) -> Result<Field, Error> {
    // SAFETY: `field` is the host function this plug-in is instantiated
    // with (the bench's Extism host defines it with this signature).
    let answer = unsafe { field(path.to_owned())? };
    Ok(match answer.as_bytes().first() {
        Some(b'V') => Field::Text(answer[1..].to_owned()),
        Some(b'O') => Field::Other,
        _ => Field::Missing,
    })
}

#[plugin_fn]
pub fn evaluate(_input: String) -> FnResult<String> {
    let p = params()?;
    let pkg = format!("packages.{}", p.package);
    if matches!(read(&pkg)?, Field::Missing) {
        return Ok("0".into());
    }
    let version_path = format!("{pkg}.version");
    // SAFETY: as in `read`: the host defines `version_in` with this signature.
    match unsafe { version_in(version_path.clone(), p.range.clone())? }.as_str() {
        "1" => {}
        "-1" => return Ok(format!("2 {version_path}")),
        _ => return Ok("0".into()),
    }
    let mut quoted = "-";
    if p.template != 0 {
        if matches!(read("accelerators.0")?, Field::Missing) {
            return Ok("0".into());
        }
        if !matches!(read("accelerators.0.vendor")?, Field::Text(v) if v == "nvidia") {
            return Ok("0".into());
        }
        let cc = match read("accelerators.0.compute_capability")? {
            Field::Missing => return Ok("2 accelerators.0.compute_capability".into()),
            Field::Text(t) => t,
            Field::Other => return Ok("0".into()),
        };
        let n: f64 = cc.trim().parse().unwrap_or(f64::NAN);
        let inside = if p.template == 1 {
            n < p.floor
        } else {
            n >= p.family.0 && n < p.family.1 && !matches!(read(&format!("env.{}", p.flag))?, Field::Missing)
        };
        if !inside {
            return Ok("0".into());
        }
        quoted = "cc";
    }
    Ok(format!("1 {quoted}"))
}

//! Where a webhook may point, and the one HTTP exchange of a delivery.
//!
//! A webhook URL is a request the server makes on a user's behalf, so it
//! must not reach what only the server can reach (SSRF): `https` only; no
//! credentials in the URL; and no loopback, private, link-local, shared
//! or otherwise special address, checked on every address the name
//! resolves to at delivery time, and the connection made to exactly those
//! addresses (a name that resolves elsewhere a second later gains
//! nothing). `--watch-allow-private-urls` lifts the address rule and allows
//! `http` (tests and development, where the receiver is on loopback).
//! Redirects are never followed, a try has one time bound for connect,
//! send and answer, and the answer's body is read to a bound and dropped.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};

/// The most of a receiver's answer read (then dropped): its status is
/// what counts.
const MAX_ANSWER_BYTES: u64 = 64 << 10;

/// Whether private and loopback targets (and `http`) are allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlPolicy {
    /// `--watch-allow-private-urls`.
    pub allow_private: bool,
}

/// Checks a webhook URL's form (its addresses are checked when it is
/// called); the reason it is refused. Without the flag, exactly the URLs
/// `pitfall_api::watch::WEBHOOK_URL_PATTERN` describes pass.
pub fn validate(url: &str, policy: UrlPolicy) -> Result<(), String> {
    if url.len() > 2048 {
        return Err("the URL is longer than 2048 bytes".into());
    }
    if !policy.allow_private {
        public_form(url)?;
    }
    let uri: ureq::http::Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if policy.allow_private => {}
        Some("http") => return Err("the URL must be https".into()),
        _ => return Err("the URL must be https://HOST/...".into()),
    }
    let authority = uri.authority().ok_or("the URL has no host")?;
    let text = authority.as_str();
    if let Some((_, port)) = text.rsplit_once(':')
        && !text.ends_with(']')
        && (port.is_empty()
            || !port.bytes().all(|b| b.is_ascii_digit())
            || authority.port_u16().is_none())
    {
        return Err("the port is not a number up to 65535".into());
    }
    if authority.as_str().contains('@') {
        return Err("the URL must not carry credentials".into());
    }
    let host = authority.host().trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err("the URL has no host".into());
    }
    if let Ok(ip) = host.parse::<IpAddr>()
        && !policy.allow_private
        && !is_public(ip)
    {
        return Err(format!("{ip} is not a public address"));
    }
    // Other names are judged by the addresses they resolve to, at
    // delivery (`GuardedResolver`).
    if !policy.allow_private && host.eq_ignore_ascii_case("localhost") {
        return Err("localhost is not a public address".into());
    }
    Ok(())
}

/// `https://NAME[:PORT][/PATH][?QUERY]` with a DNS name whose last label
/// is letters (so no IP literal), a port of 1 to 4 digits, and path and
/// query characters from a small safe set: the schema's pattern, by hand.
fn public_form(url: &str) -> Result<(), String> {
    let rest = url.strip_prefix("https://").ok_or("the URL must be https://NAME/...")?;
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let last = labels.last().copied().unwrap_or("");
    if labels.len() < 2
        || !labels.iter().all(|l| label_ok(l))
        || !(2..=63).contains(&last.len())
        || !last.bytes().all(|b| b.is_ascii_alphabetic())
    {
        return Err("the host must be a DNS name such as hooks.example.com".into());
    }
    if let Some(port) = port
        && (port.is_empty()
            || port.len() > 4
            || port.starts_with('0')
            || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("the port must be 1 to 9999".into());
    }
    let (path, query) = match tail.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (tail, None),
    };
    let safe = |b: u8, extra: &[u8]| {
        b.is_ascii_alphanumeric() || b"._~%/+=-".contains(&b) || extra.contains(&b)
    };
    if !path.bytes().all(|b| safe(b, b"")) || !query.unwrap_or("").bytes().all(|b| safe(b, b"&")) {
        return Err("the path and query may hold letters, digits and ._~%/+=-& only".into());
    }
    Ok(())
}

/// Whether an address is one a webhook may reach without the flag:
/// globally routable unicast.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || (first & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (first == 0x2001 && v6.segments()[1] == 0x0db8) // documentation
                || (first == 0x0064 && v6.segments()[1] == 0xff9b) // NAT64 to anything
                || v6.segments()[..6] == [0; 6]) // IPv4-compatible
        }
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    !(v4.is_private()
        || v4.is_loopback()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0
        || a >= 240
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && v4.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (b == 18 || b == 19))) // benchmarking
}

/// Resolves as the system does, then refuses the whole name if any
/// address is not public (unless allowed): the connection goes only to
/// the addresses returned here.
#[derive(Debug)]
struct GuardedResolver {
    policy: UrlPolicy,
    inner: DefaultResolver,
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.inner.resolve(uri, config, timeout)?;
        if !self.policy.allow_private
            && let Some(bad) = addrs.iter().find(|a: &&SocketAddr| !is_public(a.ip()))
        {
            return Err(ureq::Error::Io(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "the webhook's host resolves to {}, which is not a public address",
                    bad.ip()
                ),
            )));
        }
        Ok(addrs)
    }
}

/// An HTTP client for deliveries under `policy`, each exchange bounded by
/// `timeout`.
pub fn agent(policy: UrlPolicy, timeout: Duration) -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .max_redirects(0)
        .max_redirects_will_error(false)
        .http_status_as_error(false)
        .https_only(!policy.allow_private)
        .proxy(None)
        .user_agent(concat!("pitfall-webhook/", env!("CARGO_PKG_VERSION")))
        .build();
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::default(),
        GuardedResolver { policy, inner: DefaultResolver::default() },
    )
}

/// POSTs `body` with `headers`; the answer's status, or what failed.
pub fn post(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<u16, String> {
    let mut request = agent.post(url).header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    match request.send(body) {
        Ok(mut answer) => {
            let status = answer.status().as_u16();
            // Read (to a bound) so the connection may be reused; the
            // content is the receiver's business.
            let _ = answer.body_mut().with_config().limit(MAX_ANSWER_BYTES).read_to_vec();
            Ok(status)
        }
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: UrlPolicy = UrlPolicy { allow_private: false };
    const LOOSE: UrlPolicy = UrlPolicy { allow_private: true };

    #[test]
    fn webhook_urls_are_https_to_public_hosts_unless_the_flag_allows_more() {
        let cases: &[(&str, bool, bool)] = &[
            // url, allowed strict, allowed with the flag
            ("https://hooks.example.com/pitfall", true, true),
            ("https://hooks.example.com:8443/p?x=1", true, true),
            ("http://hooks.example.com/p", false, true),
            ("http://127.0.0.1:9000/hook", false, true),
            ("https://127.0.0.1/hook", false, true),
            ("https://localhost/hook", false, true),
            ("https://10.1.2.3/", false, true),
            ("https://192.168.0.1/", false, true),
            ("https://169.254.169.254/latest/meta-data", false, true),
            ("https://100.64.0.1/", false, true),
            ("https://[::1]/", false, true),
            ("https://[fd00::1]/", false, true),
            ("https://[fe80::1]/", false, true),
            ("https://[::ffff:10.0.0.1]/", false, true),
            // Without the flag, a name: the addresses it resolves to are
            // judged at delivery.
            ("https://8.8.8.8/", false, true),
            ("https://[2606:4700::1111]/", false, true),
            ("https://user:pw@hooks.example.com/", false, false),
            ("ftp://hooks.example.com/", false, false),
            ("hooks.example.com/path", false, false),
            ("not a url", false, false),
            ("https://k.0.VGvbWJjZXrtWfr:977*", false, false),
            ("https://hooks.example.com/a b", false, false),
            ("https://hooks.example.com/p?token=abc&x=1", true, true),
            ("https://hooks.example.com:99999/", false, false),
            ("https://-bad.example.com/", false, true),
        ];
        for &(url, strict, loose) in cases {
            assert_eq!(
                validate(url, STRICT).is_ok(),
                strict,
                "{url} strict: {:?}",
                validate(url, STRICT)
            );
            assert_eq!(
                validate(url, LOOSE).is_ok(),
                loose,
                "{url} loose: {:?}",
                validate(url, LOOSE)
            );
        }
    }

    /// The address check holds at connection time too: a name that
    /// resolves to loopback is refused without the flag.
    #[test]
    fn a_name_resolving_to_loopback_is_refused_at_delivery() {
        let agent = agent(STRICT, Duration::from_secs(2));
        let err = post(&agent, "https://localhost:9/hook", &[], b"{}").expect_err("refused");
        assert!(err.contains("not a public address"), "{err}");
    }
}

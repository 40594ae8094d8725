//! The one guard in front of every admin route, so that a web page open in the user's browser
//! cannot drive the endpoint (create znodes, install fault rules, expire sessions) through
//! cross-site requests, while curl, scripts and Keeper's own clients need no extra header:
//!
//! - a request with an `Origin` header that is not loopback (`http://127.0.0.1:…`,
//!   `http://localhost:…`, `http://[::1]:…`; `null` is not) is refused with 403, whatever its
//!   method;
//! - a write (any method but GET, HEAD and OPTIONS) that carries an `Origin` must come from
//!   this endpoint's own origin (the `Origin` names the `Host` the request was sent to), so a
//!   page served by another local program on another port cannot write either;
//! - a write whose `Sec-Fetch-Site` is anything but `same-origin` or `none` (a user typing a
//!   URL) is refused: every current browser sends it, including on the simple requests (an
//!   HTML form, a `fetch` without custom headers) that need no CORS preflight.
//!
//! A browser always sends `Origin` on a cross-origin write, and this server never grants a CORS
//! preflight, so a foreign page can neither write nor read an answer. A DNS-rebinding page is
//! same-origin for the browser, but its requests carry its own non-loopback `Origin` and are
//! refused by the first rule. curl and scripts send neither header and pass; the dashboard
//! (`/dashboard`) is same-origin and passes.

use std::net::IpAddr;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderName, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// A header older clients (the publisher, the Java and Python helpers) send on writes; the
/// guard no longer needs it, and ignores it.
pub const WRITE_HEADER: &str = "x-testkeeper";

const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// The middleware: refuses what [`refusal`] names, passes the rest on.
pub async fn guard(req: Request, next: Next) -> Response {
    match refusal(req.method(), req.headers()) {
        Some(why) => (StatusCode::FORBIDDEN, format!("{why}\n")).into_response(),
        None => next.run(req).await,
    }
}

/// Why a request is refused, or `None` when it may pass.
pub fn refusal(method: &Method, headers: &HeaderMap) -> Option<String> {
    let origin = headers.get(header::ORIGIN).map(|o| String::from_utf8_lossy(o.as_bytes()).into_owned());
    if let Some(origin) = &origin {
        if !is_loopback_origin(origin) {
            return Some(format!(
                "cross-origin request refused (Origin: {origin}); only loopback origins may use this endpoint"
            ));
        }
    }
    let write = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if write {
        write_refusal(method, headers)
    } else {
        None
    }
}

/// Why a request that changes state is refused (whatever its method: Keeper's storage API
/// creates with GET too), or `None`: it must come from this endpoint's own origin, or from no
/// browser page at all.
pub fn write_refusal(method: &Method, headers: &HeaderMap) -> Option<String> {
    let origin = headers.get(header::ORIGIN).map(|o| String::from_utf8_lossy(o.as_bytes()).into_owned());
    if let Some(site) = headers.get(SEC_FETCH_SITE).and_then(|v| v.to_str().ok()) {
        if !matches!(site.trim().to_ascii_lowercase().as_str(), "same-origin" | "none") {
            return Some(format!(
                "{method} refused: the browser says it comes from another site (Sec-Fetch-Site: {site})"
            ));
        }
    }
    if let Some(origin) = &origin {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !same_authority(origin, host) {
            return Some(format!(
                "{method} refused: a page from {origin} may not change this endpoint's state (Host: {host}); open the dashboard on this endpoint instead"
            ));
        }
    }
    None
}

/// Whether the `Origin` value names the same host and port as the `Host` header.
fn same_authority(origin: &str, host: &str) -> bool {
    let Ok(uri) = origin.trim().parse::<Uri>() else { return false };
    let Some(authority) = uri.authority() else { return false };
    let default_port = if uri.scheme_str() == Some("https") { 443 } else { 80 };
    let with_port = |a: &str| -> Option<(String, u16)> {
        let a: axum::http::uri::Authority = a.parse().ok()?;
        Some((a.host().to_ascii_lowercase(), a.port_u16().unwrap_or(default_port)))
    };
    match (with_port(authority.as_str()), with_port(host.trim())) {
        (Some(o), Some(h)) => o == h,
        _ => false,
    }
}

/// Whether an `Origin` value names a loopback host: `localhost` or a loopback IP literal.
/// `null` (sandboxed frames, files) and anything unparsable are not.
fn is_loopback_origin(origin: &str) -> bool {
    let Ok(uri) = origin.trim().parse::<Uri>() else { return false };
    let Some(host) = uri.host() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn loopback_origins_only() {
        for ok in
            ["http://127.0.0.1:8080", "http://localhost", "http://LOCALHOST:1", "http://[::1]:9", "http://127.1.2.3"]
        {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in ["null", "http://evil.example", "http://127.0.0.1.evil.example", "http://10.0.0.1", "", "file://"] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }

    #[test]
    fn scripts_write_with_no_extra_header() {
        assert!(refusal(&Method::GET, &headers(&[])).is_none());
        assert!(refusal(&Method::POST, &headers(&[])).is_none());
        assert!(refusal(&Method::POST, &headers(&[("content-type", "application/x-www-form-urlencoded")])).is_none());
        assert!(refusal(&Method::DELETE, &headers(&[("host", "127.0.0.1:9182")])).is_none());
        assert!(refusal(&Method::POST, &headers(&[("x-testkeeper", "1")])).is_none());
    }

    #[test]
    fn a_foreign_origin_is_refused_even_with_the_old_header() {
        let evil = headers(&[("origin", "http://evil.example"), ("x-testkeeper", "1")]);
        assert!(refusal(&Method::POST, &evil).is_some());
        assert!(refusal(&Method::GET, &headers(&[("origin", "http://evil.example")])).is_some());
        assert!(refusal(&Method::POST, &headers(&[("origin", "null")])).is_some());
    }

    #[test]
    fn writes_only_from_this_endpoints_own_origin() {
        let own = headers(&[("origin", "http://127.0.0.1:9182"), ("host", "127.0.0.1:9182")]);
        assert!(refusal(&Method::POST, &own).is_none());
        let own_default_port = headers(&[("origin", "http://localhost"), ("host", "LOCALHOST:80")]);
        assert!(refusal(&Method::POST, &own_default_port).is_none());
        // Another local program's page (another port) may read but not write.
        let other = headers(&[("origin", "http://127.0.0.1:3000"), ("host", "127.0.0.1:9182")]);
        assert!(refusal(&Method::POST, &other).is_some());
        assert!(refusal(&Method::GET, &other).is_none());
        assert!(refusal(&Method::POST, &headers(&[("origin", "http://127.0.0.1:9182")])).is_some(), "no Host");
    }

    #[test]
    fn sec_fetch_site_other_than_same_origin_refuses_a_write() {
        for site in ["cross-site", "same-site"] {
            let h = headers(&[("sec-fetch-site", site)]);
            assert!(refusal(&Method::POST, &h).is_some(), "{site}");
            assert!(refusal(&Method::GET, &h).is_none(), "{site} read");
        }
        for site in ["same-origin", "none"] {
            assert!(refusal(&Method::POST, &headers(&[("sec-fetch-site", site)])).is_none(), "{site}");
        }
    }
}

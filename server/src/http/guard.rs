//! The one guard in front of every admin route, so that a web page open in the user's browser
//! cannot drive the endpoint (install fault rules, clear them) through cross-site requests:
//!
//! - a request with an `Origin` header that is not loopback (`http://127.0.0.1:…`,
//!   `http://localhost:…`, `http://[::1]:…`) is refused with 403, whatever its method;
//! - a write (any method but GET, HEAD and OPTIONS) must carry `Content-Type:
//!   application/json` or an `X-Testkeeper` header, else 403.
//!
//! A browser sends neither of the two without a CORS preflight, which this server never
//! grants, so a cross-site form or `fetch` cannot write; curl, the publisher and tests send
//! the header. A DNS-rebinding page is same-origin for the browser, but its writes carry its
//! own `Origin` and are refused by the first rule.

use std::net::IpAddr;

use axum::extract::Request;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The custom header that marks a write as coming from a deliberate client.
pub const WRITE_HEADER: &str = "x-testkeeper";

/// The middleware: refuses what [`refusal`] names, passes the rest on.
pub async fn guard(req: Request, next: Next) -> Response {
    match refusal(req.method(), req.headers()) {
        Some(why) => (StatusCode::FORBIDDEN, format!("{why}\n")).into_response(),
        None => next.run(req).await,
    }
}

/// Why a request is refused, or `None` when it may pass.
pub fn refusal(method: &Method, headers: &HeaderMap) -> Option<String> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = String::from_utf8_lossy(origin.as_bytes());
        if !is_loopback_origin(&origin) {
            return Some(format!(
                "cross-origin request refused (Origin: {origin}); only loopback origins may use this endpoint"
            ));
        }
    }
    let write = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if write && !is_json(headers) && !headers.contains_key(WRITE_HEADER) {
        return Some(format!(
            "{method} needs Content-Type: application/json or an X-Testkeeper header (this guards against cross-site requests), e.g. curl -H 'X-Testkeeper: 1' ..."
        ));
    }
    None
}

/// Whether the body is declared JSON (`application/json`, any parameters, any case).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json")))
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
    fn writes_need_json_or_the_header_and_reads_do_not() {
        assert!(refusal(&Method::GET, &headers(&[])).is_none());
        assert!(refusal(&Method::POST, &headers(&[])).is_some());
        assert!(refusal(&Method::POST, &headers(&[("content-type", "text/plain")])).is_some());
        assert!(refusal(&Method::DELETE, &headers(&[])).is_some());
        assert!(refusal(&Method::POST, &headers(&[("x-testkeeper", "1")])).is_none());
        assert!(refusal(&Method::DELETE, &headers(&[("content-type", "Application/JSON; charset=utf-8")])).is_none());
    }

    #[test]
    fn a_foreign_origin_is_refused_even_with_the_header() {
        let evil = headers(&[("origin", "http://evil.example"), ("x-testkeeper", "1")]);
        assert!(refusal(&Method::POST, &evil).is_some());
        assert!(refusal(&Method::GET, &headers(&[("origin", "http://evil.example")])).is_some());
        let local = headers(&[("origin", "http://127.0.0.1:3000"), ("x-testkeeper", "1")]);
        assert!(refusal(&Method::POST, &local).is_none());
    }
}

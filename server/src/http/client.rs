//! A client for the admin endpoint of a running testkeeper, for `testkeeper faults` and the
//! publisher's remote chaos sweep. A few requests per command do not justify an HTTP client
//! crate: this speaks HTTP/1.0 (so the reply is never chunked and the connection closes after
//! it) and bounds every request.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::guard::WRITE_HEADER;

/// One request, connect to last byte; the endpoint answers from memory.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a request got no 2xx answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminError {
    /// Nothing answered (refused, timed out, cut): `what` names the request.
    Unreachable(String),
    /// The endpoint answered with this status and body.
    Status { what: String, status: u16, body: String },
}

impl std::fmt::Display for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdminError::Unreachable(why) => f.write_str(why),
            AdminError::Status { what, status, body } => write!(f, "{what}: HTTP {status}: {}", body.trim()),
        }
    }
}

impl std::error::Error for AdminError {}

/// An admin URL that is not `http://HOST:PORT` (the URL as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("admin URL must be http://HOST:PORT, got '{0}'")]
pub struct AdminUrlError(pub String);

/// An admin endpoint, `http://HOST:PORT`.
#[derive(Debug, Clone)]
pub struct AdminClient {
    authority: String,
}

impl AdminClient {
    /// Parses `http://HOST:PORT[/]` (the scheme may be left out).
    ///
    /// # Errors
    /// Another scheme, or a path after the authority.
    pub fn new(url: &str) -> Result<AdminClient, AdminUrlError> {
        let rest = url.trim().strip_prefix("http://").unwrap_or(url.trim()).trim_end_matches('/');
        if rest.is_empty() || rest.contains('/') || rest.contains("://") {
            return Err(AdminUrlError(url.to_string()));
        }
        Ok(AdminClient { authority: rest.to_string() })
    }

    /// `HOST:PORT`.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// Sends one request (writes carry the guard's header); returns the body of a 2xx reply.
    ///
    /// # Errors
    /// [`AdminError`].
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &str,
    ) -> Result<String, AdminError> {
        let what = format!("{method} http://{}{path}", self.authority);
        let exchange = async {
            let mut s = TcpStream::connect(&self.authority).await?;
            // The endpoint refuses writes without this header (its cross-site guard).
            let head = format!(
                "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Type: {content_type}\r\n{WRITE_HEADER}: 1\r\nContent-Length: {}\r\n\r\n",
                self.authority,
                body.len()
            );
            s.write_all(head.as_bytes()).await?;
            s.write_all(body.as_bytes()).await?;
            let mut reply = Vec::new();
            s.read_to_end(&mut reply).await?;
            Ok::<_, std::io::Error>(reply)
        };
        let reply = match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
            Err(_) => return Err(AdminError::Unreachable(format!("{what}: no answer within {REQUEST_TIMEOUT:?}"))),
            Ok(Err(e)) => return Err(AdminError::Unreachable(format!("{what}: {e}"))),
            Ok(Ok(r)) => String::from_utf8_lossy(&r).into_owned(),
        };
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
        match head.split_whitespace().nth(1).and_then(|s| s.parse::<u16>().ok()) {
            Some(200..=299) => Ok(body.to_string()),
            Some(status) => Err(AdminError::Status { what, status, body: body.to_string() }),
            None => Err(AdminError::Unreachable(format!("{what}: not an HTTP answer: {head:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        assert_eq!(AdminClient::new("http://127.0.0.1:8123/").unwrap().authority(), "127.0.0.1:8123");
        assert!(AdminClient::new("https://x:1").is_err() && AdminClient::new("http://x:1/api").is_err());
    }
}

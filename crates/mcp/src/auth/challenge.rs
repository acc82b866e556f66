//! The bearer side of HTTP authentication (RFC 6750): reading the `Authorization` header, and
//! writing `WWW-Authenticate` challenges with safely quoted values.

use http::HeaderMap;

/// What the `Authorization` header holds.
#[derive(Debug, PartialEq)]
pub(crate) enum Credentials<'a> {
    /// No header, or another scheme (`Basic …`): the client did not try a bearer token.
    None,
    /// `Bearer <token>`.
    Bearer(&'a str),
    /// `DPoP <token>` (RFC 9449): the request also carries a proof.
    Dpop(&'a str),
    /// A header no client should send (several of them, bad characters, `Bearer` without a
    /// token): `400 invalid_request`.
    Malformed(&'static str),
}

/// Reads the bearer token of a request. A token in the query string or the body is not looked
/// at: only the header counts.
pub(crate) fn credentials(headers: &HeaderMap) -> Credentials<'_> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else { return Credentials::None };
    if values.next().is_some() {
        return Credentials::Malformed("the request has more than one Authorization header");
    }
    // Read as bytes: a token that passes the b64token check is ASCII, so most requests
    // (a well-formed bearer token of a kilobyte) are looked at once, not three times.
    let refuse = |otherwise| if value.to_str().is_err() { Credentials::Malformed(NOT_ASCII) } else { otherwise };
    let bytes = value.as_bytes();
    let (scheme, rest) = match bytes.iter().position(|&b| b == b' ') {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (bytes, &b""[..]),
    };
    let dpop = scheme.eq_ignore_ascii_case(b"dpop");
    if !scheme.eq_ignore_ascii_case(b"bearer") && !dpop {
        return refuse(Credentials::None);
    }
    let token = trim_spaces(rest);
    if token.is_empty() {
        return refuse(Credentials::Malformed("the Authorization header says Bearer but carries no token"));
    }
    let Some(token) = b64token(token) else {
        return refuse(Credentials::Malformed("the bearer token has characters a token cannot have"));
    };
    if dpop {
        Credentials::Dpop(token)
    } else {
        Credentials::Bearer(token)
    }
}

const NOT_ASCII: &str = "the Authorization header is not ASCII";

/// `bytes` without the spaces that begin and end it.
fn trim_spaces(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&b| b != b' ').unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(start, |i| i + 1);
    &bytes[start..end.max(start)]
}

/// The bytes of a b64token (RFC 6750 §2.1: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" /
/// "/" ) *"="`) as text, or `None` if they are not one.
fn b64token(token: &[u8]) -> Option<&str> {
    const ALLOWED: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            table[b] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/');
            b += 1;
        }
        table
    };
    let padding = token.iter().rev().take_while(|&&b| b == b'=').count();
    let body = &token[..token.len() - padding];
    if body.is_empty() || !body.iter().all(|&b| ALLOWED[b as usize]) {
        return None;
    }
    std::str::from_utf8(token).ok() // ASCII, as just checked
}

/// A quoted-string: backslashes and quotes escaped, control characters dropped.
fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_ascii_control() || !c.is_ascii() => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `Bearer` challenge.
#[derive(Debug, Default)]
pub(crate) struct Challenge<'a> {
    pub error: Option<&'static str>,
    pub description: Option<&'a str>,
    pub scopes: &'a [String],
    pub resource_metadata: &'a str,
}

impl Challenge<'_> {
    /// The header value.
    pub fn header(&self) -> String {
        let mut parts = vec![format!("resource_metadata={}", quote(self.resource_metadata))];
        if !self.scopes.is_empty() {
            parts.push(format!("scope={}", quote(&self.scopes.join(" "))));
        }
        if let Some(error) = self.error {
            parts.insert(0, format!("error={}", quote(error)));
        }
        if let Some(description) = self.description {
            parts.push(format!("error_description={}", quote(description)));
        }
        format!("Bearer {}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(http::header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        headers
    }

    #[test]
    fn reads_the_header() {
        assert_eq!(credentials(&with(&[])), Credentials::None);
        assert_eq!(credentials(&with(&["Basic dXNlcjpwYXNz"])), Credentials::None);
        assert_eq!(credentials(&with(&["foo"])), Credentials::None);
        assert_eq!(credentials(&with(&["Bearer abc.def-_~+/=="])), Credentials::Bearer("abc.def-_~+/=="));
        assert_eq!(credentials(&with(&["bearer abc"])), Credentials::Bearer("abc"));
        assert_eq!(credentials(&with(&["DPoP abc"])), Credentials::Dpop("abc"));
        assert!(matches!(credentials(&with(&["Bearer"])), Credentials::Malformed(_)));
        assert!(matches!(credentials(&with(&["Bearer "])), Credentials::Malformed(_)));
        assert!(matches!(credentials(&with(&["Bearer a b"])), Credentials::Malformed(_)));
        assert!(matches!(credentials(&with(&["Bearer a\"b"])), Credentials::Malformed(_)));
        assert!(matches!(credentials(&with(&["Bearer a", "Bearer b"])), Credentials::Malformed(_)));
    }

    #[test]
    fn writes_quoted_challenges() {
        let scopes = vec!["a:read".to_string(), "b".to_string()];
        let c = Challenge {
            error: Some("insufficient_scope"),
            description: Some("needs \"a:read\"\n"),
            scopes: &scopes,
            resource_metadata: "https://x/.well-known/oauth-protected-resource/mcp",
        };
        assert_eq!(
            c.header(),
            "Bearer error=\"insufficient_scope\", resource_metadata=\"https://x/.well-known/oauth-protected-resource/mcp\", \
             scope=\"a:read b\", error_description=\"needs \\\"a:read\\\"\""
        );
    }
}

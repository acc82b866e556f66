//! Reading `WWW-Authenticate` (RFC 9110 §11.6.1): one or more challenges, each a scheme and its
//! parameters, quoted or not, in one header or several.

use std::collections::HashMap;

/// One challenge: `Bearer resource_metadata="…", scope="…"`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
    /// The scheme, lowercase (`bearer`, `dpop`).
    pub scheme: String,
    /// The parameters, names lowercase.
    pub params: HashMap<String, String>,
}

impl Challenge {
    /// A parameter.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.params.get(name).map(String::as_str)
    }

    /// `scope`, split.
    pub fn scopes(&self) -> Vec<String> {
        self.get("scope").map(|s| s.split_whitespace().map(str::to_owned).collect()).unwrap_or_default()
    }
}

/// Every challenge in the header values.
pub fn parse_all<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
    values.into_iter().flat_map(parse).collect()
}

/// The challenges of one header value.
pub fn parse(value: &str) -> Vec<Challenge> {
    let mut out: Vec<Challenge> = Vec::new();
    let mut rest = value.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t']);
        let token_end = rest.find([' ', ',', '=', '\t']).unwrap_or(rest.len());
        let token = &rest[..token_end];
        if token.is_empty() {
            break;
        }
        let after = rest[token_end..].trim_start_matches([' ', '\t']);
        if let Some(value_part) = after.strip_prefix('=').filter(|v| !v.starts_with('=')) {
            // A parameter of the current challenge.
            let (value, remaining) = read_value(value_part.trim_start());
            if let Some(current) = out.last_mut() {
                current.params.insert(token.to_ascii_lowercase(), value);
            }
            rest = remaining;
        } else if after.starts_with('=') {
            // token68 (`abc==`): belongs to the current challenge, not a parameter.
            let end = after.find(',').unwrap_or(after.len());
            rest = &after[end..];
        } else {
            out.push(Challenge { scheme: token.to_ascii_lowercase(), params: HashMap::new() });
            rest = after;
        }
    }
    out
}

/// A parameter value (quoted-string or token) and what follows it.
fn read_value(text: &str) -> (String, &str) {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                c => value.push(c),
            }
        }
        (value, "")
    } else {
        let end = text.find([',', ' ', '\t']).unwrap_or(text.len());
        (text[..end].to_owned(), &text[end..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_with_quoted_params() {
        let c = parse(
            r#"Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", scope="a b", error="insufficient_scope""#,
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].scheme, "bearer");
        assert_eq!(c[0].get("resource_metadata"), Some("https://x/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(c[0].scopes(), ["a", "b"]);
        assert_eq!(c[0].get("error"), Some("insufficient_scope"));
    }

    #[test]
    fn several_challenges_and_escapes() {
        let c =
            parse(r#"DPoP error="use_dpop_nonce", algs="ES256 RS256", Bearer realm=x, error_description="say \"hi\"""#);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].scheme, "dpop");
        assert_eq!(c[0].get("algs"), Some("ES256 RS256"));
        assert_eq!(c[1].scheme, "bearer");
        assert_eq!(c[1].get("realm"), Some("x"));
        assert_eq!(c[1].get("error_description"), Some("say \"hi\""));
        assert_eq!(parse("Bearer"), vec![Challenge { scheme: "bearer".into(), params: HashMap::new() }]);
        assert_eq!(parse("Basic abc==, Bearer").len(), 2);
    }
}

//! RFC 6570 URI templates, for matching a `resources/read` URI against a resource template.
//!
//! Supports the expressions resource templates use: `{var}` (one path segment),
//! `{+var}` and `{#var}` (reserved expansion: anything), `{/var}` (a `/segment`),
//! `{.var}`, `{;var}`, `{?a,b}` and `{&a,b}` (query parameters).

use std::collections::BTreeMap;

pub use crate::util::percent::percent_decode;

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expr { op: Option<char>, vars: Vec<String> },
}

impl UriTemplate {
    /// Parses `source`; `Err` names the problem.
    pub fn parse(source: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').ok_or_else(|| format!("unclosed '{{' in {source:?}"))? + open;
            parts.push(parse_expr(&rest[open + 1..close])?);
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("unopened '}}' in {source:?}"));
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate { source: source.to_owned(), parts })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().flat_map(|p| match p {
            Part::Expr { vars, .. } => vars.iter().map(String::as_str).collect::<Vec<_>>(),
            Part::Literal(_) => Vec::new(),
        })
    }

    /// The variables' values if `uri` matches, percent-decoded.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        if match_parts(&self.parts, uri, &mut values) {
            Some(values)
        } else {
            None
        }
    }
}

fn parse_expr(body: &str) -> Result<Part, String> {
    let (op, names) = match body.chars().next() {
        Some(c @ ('+' | '#' | '/' | '.' | ';' | '?' | '&')) => (Some(c), &body[1..]),
        _ => (None, body),
    };
    let vars: Vec<String> = names.split(',').map(|v| v.trim_end_matches('*').to_owned()).collect();
    if vars.iter().any(|v| v.is_empty() || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')) {
        return Err(format!("invalid variable list {{{body}}}"));
    }
    Ok(Part::Expr { op, vars })
}

/// Backtracking match of the remaining parts against the remaining input.
fn match_parts(parts: &[Part], input: &str, values: &mut BTreeMap<String, String>) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return input.is_empty();
    };
    match first {
        Part::Literal(lit) => input.strip_prefix(lit.as_str()).is_some_and(|tail| match_parts(rest, tail, values)),
        Part::Expr { op: Some('?' | '&'), vars } => match_query(vars, input, rest, values),
        Part::Expr { op, vars } => {
            let prefix = match op {
                Some('/') => "/",
                Some('.') => ".",
                Some('#') => "#",
                Some(';') => ";",
                _ => "",
            };
            let Some(body) = input.strip_prefix(prefix) else {
                return match_parts(rest, input, values);
            };
            let reserved = matches!(op, Some('+' | '#'));
            // Try the longest value first, then shorter ones.
            let stop = body
                .char_indices()
                .find(|&(_, c)| !reserved && matches!(c, '/' | '?' | '#' | ','))
                .map_or(body.len(), |(i, _)| i);
            let boundaries: Vec<usize> =
                body[..stop].char_indices().map(|(i, _)| i).chain(std::iter::once(stop)).skip(1).collect();
            for &end in boundaries.iter().rev() {
                let mut trial = values.clone();
                trial.insert(vars[0].clone(), percent_decode(&body[..end]));
                if match_parts(rest, &body[end..], &mut trial) {
                    *values = trial;
                    return true;
                }
            }
            false
        }
    }
}

fn match_query(vars: &[String], input: &str, rest: &[Part], values: &mut BTreeMap<String, String>) -> bool {
    let query = input.strip_prefix(['?', '&']).unwrap_or("");
    let (query, tail) = query.split_at(query.find('#').unwrap_or(query.len()));
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if vars.iter().any(|var| var == k) {
            values.insert(k.to_owned(), percent_decode(v));
        }
    }
    match_parts(rest, tail, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(t: &str, uri: &str) -> Option<BTreeMap<String, String>> {
        UriTemplate::parse(t).unwrap().matches(uri)
    }

    #[test]
    fn simple_variables_match_one_segment() {
        let v = m("paypedia://countries/{cc}", "paypedia://countries/FR").unwrap();
        assert_eq!(v["cc"], "FR");
        assert!(m("paypedia://countries/{cc}", "paypedia://countries/FR/x").is_none());
        assert!(m("paypedia://countries/{cc}", "paypedia://other/FR").is_none());
        assert!(m("paypedia://countries/{cc}", "paypedia://countries/").is_none());
    }

    #[test]
    fn several_variables_and_reserved_expansion() {
        let v = m("test://template/{id}/data", "test://template/42/data").unwrap();
        assert_eq!(v["id"], "42");
        let v = m("file:///{+path}", "file:///a/b/c.txt").unwrap();
        assert_eq!(v["path"], "a/b/c.txt");
        let v = m("db://{table}/{id}", "db://users/7").unwrap();
        assert_eq!((v["table"].as_str(), v["id"].as_str()), ("users", "7"));
    }

    #[test]
    fn query_and_percent_decoding() {
        let v = m("search://q{?term,limit}", "search://q?term=a%20b&limit=3").unwrap();
        assert_eq!(v["term"], "a b");
        assert_eq!(v["limit"], "3");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%é%"), "%é%");
    }

    #[test]
    fn rejects_bad_templates() {
        assert!(UriTemplate::parse("x://{a").is_err());
        assert!(UriTemplate::parse("x://a}").is_err());
        assert!(UriTemplate::parse("x://{}").is_err());
    }
}

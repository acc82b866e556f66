//! RFC 6570 URI templates, for matching a `resources/read` URI against a resource template.
//!
//! Supports the expressions resource templates use: `{var}` (one path segment),
//! `{+var}` and `{#var}` (reserved expansion: anything), `{/var}` (a `/segment`),
//! `{.var}`, `{;var}`, `{?a,b}` and `{&a,b}` (query parameters).

use std::collections::{BTreeMap, HashSet};

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

    /// The variables' values if `uri` matches, percent-decoded. A value is the longest that lets
    /// the rest match. Time is bounded whatever the template and the URI (see `MAX_STEPS`).
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut matcher = Matcher::new(&self.parts, uri);
        let mut values = BTreeMap::new();
        matcher.rest(0, uri, &mut values).then_some(values)
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

/// The most steps (a part tried at a place of the URI, or a value's length tried) one match
/// takes. Each place where a part failed is remembered, so no work is done twice; adjacent
/// expressions against a long URI could still take their lengths' product: past this, the URI
/// does not match.
const MAX_STEPS: usize = 1 << 20;

/// One match of a template's parts against a URI, by backtracking.
struct Matcher<'t> {
    parts: &'t [Part],
    /// Where, in bytes from the URI's end, the next `/`, `?`, `#` or `,` is, from each place: a
    /// plain expression's value stops there.
    stops: Vec<usize>,
    /// Parts that failed at a place (its index, the input's remaining length).
    failed: HashSet<(usize, usize)>,
    steps: usize,
}

impl<'t> Matcher<'t> {
    fn new(parts: &'t [Part], uri: &str) -> Self {
        let mut stops = vec![0; uri.len() + 1];
        let mut next = 0; // remaining length at the separator: 0 is the end
        for (i, b) in uri.bytes().enumerate().rev() {
            if matches!(b, b'/' | b'?' | b'#' | b',') {
                next = uri.len() - i;
            }
            stops[uri.len() - i] = next;
        }
        Matcher { parts, stops, failed: HashSet::new(), steps: 0 }
    }

    /// Whether the parts from `index` match `input` (the end of the URI); their values go into
    /// `values` when they do.
    fn rest(&mut self, index: usize, input: &str, values: &mut BTreeMap<String, String>) -> bool {
        let Some(part) = self.parts.get(index) else {
            return input.is_empty();
        };
        let place = (index, input.len());
        if self.failed.contains(&place) || !self.step() {
            return false;
        }
        let matched = match part {
            Part::Literal(lit) => {
                input.strip_prefix(lit.as_str()).is_some_and(|tail| self.rest(index + 1, tail, values))
            }
            Part::Expr { op: Some('?' | '&'), vars } => self.query(index, vars, input, values),
            Part::Expr { op, vars } => self.expression(index, *op, &vars[0], input, values),
        };
        if !matched {
            self.failed.insert(place);
        }
        matched
    }

    fn step(&mut self) -> bool {
        self.steps += 1;
        self.steps <= MAX_STEPS
    }

    /// `{var}`, `{+var}`, `{#var}`, `{/var}`, `{.var}`, `{;var}`: the longest value first.
    fn expression(
        &mut self,
        index: usize,
        op: Option<char>,
        var: &str,
        input: &str,
        values: &mut BTreeMap<String, String>,
    ) -> bool {
        let prefix = match op {
            Some('/') => "/",
            Some('.') => ".",
            Some('#') => "#",
            Some(';') => ";",
            _ => "",
        };
        let Some(body) = input.strip_prefix(prefix) else {
            return self.rest(index + 1, input, values);
        };
        let reserved = matches!(op, Some('+' | '#'));
        let stop = if reserved { body.len() } else { body.len() - self.stops[body.len()] };
        // Never empty: every end after the value's first character, the longest first.
        let ends = std::iter::once(stop).chain(body[..stop].char_indices().rev().map(|(i, _)| i)).filter(|&i| i > 0);
        for end in ends {
            if !self.step() {
                return false;
            }
            let mut trial = values.clone();
            if self.rest(index + 1, &body[end..], &mut trial) {
                // Decoded once, for the value kept (a later part's value of the same name stays).
                trial.entry(var.to_owned()).or_insert_with(|| percent_decode(&body[..end]));
                *values = trial;
                return true;
            }
        }
        false
    }

    /// `{?a,b}`, `{&a,b}`: the named parameters of the query, up to a fragment.
    fn query(&mut self, index: usize, vars: &[String], input: &str, values: &mut BTreeMap<String, String>) -> bool {
        let query = input.strip_prefix(['?', '&']).unwrap_or("");
        let (query, tail) = query.split_at(query.find('#').unwrap_or(query.len()));
        let mut trial = values.clone();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if vars.iter().any(|var| var == k) {
                trial.insert(k.to_owned(), percent_decode(v));
            }
        }
        if self.rest(index + 1, tail, &mut trial) {
            *values = trial;
            return true;
        }
        false
    }
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

    /// Found by fuzzing (`uri_template`): adjacent expressions against a long URI took time
    /// exponential in their number, and a long value was decoded once per length tried.
    #[test]
    fn matching_takes_bounded_time_whatever_the_template() {
        let started = std::time::Instant::now();
        let found = "x{/segg*}{xe}{z*}{xesegg*}{xe}{z*}{xe}{zfrag}}{zfrag}";
        assert!(m(found, "x/ E ................................... aet]ewt://HHHHHHHHHHixp").is_none());
        let adjacent = "x{/a}{b}{c}{d}{e}{f}{g}{h}y";
        let uri = format!("x/{}z", "e".repeat(2000));
        assert!(m(adjacent, &uri).is_none());
        let long = format!("test://items/{}", "a%41".repeat(200_000));
        assert!(m("test://items/{id}/data", &long).is_none());
        assert_eq!(m("test://items/{id}", &long).unwrap()["id"].len(), 400_000);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        // Adjacent expressions still match, the first taking the longest value that lets the rest.
        let v = m("m://{a}{b}.{c}", "m://xyz.q").unwrap();
        assert_eq!((v["a"].as_str(), v["b"].as_str(), v["c"].as_str()), ("xy", "z", "q"));
    }

    #[test]
    fn rejects_bad_templates() {
        assert!(UriTemplate::parse("x://{a").is_err());
        assert!(UriTemplate::parse("x://a}").is_err());
        assert!(UriTemplate::parse("x://{}").is_err());
    }
}

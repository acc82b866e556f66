//! The URI-template matcher: a template and a URI (the input's first line, the rest). No pair
//! panics it, and what it takes from a URI are the template's own variables.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::server::uri_template::UriTemplate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (template, uri) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(template) = UriTemplate::parse(template) else { return };
    assert_eq!(template.as_str(), text.split_once('\n').map_or(text, |(t, _)| t));
    let variables: Vec<&str> = template.variables().collect();
    if let Some(values) = template.matches(uri) {
        for name in values.keys() {
            assert!(variables.contains(&name.as_str()), "{name} is not a variable of {}", template.as_str());
        }
    }
});

//! The built-in structural checks of tool arguments: a schema and an instance (a JSON array of
//! the two). No pair panics them; a check reports at most ten problems, each short whatever the
//! instance's size; `uniqueItems` by hashing says what comparing every pair says.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::fuzzing;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Array(pair)) = serde_json::from_slice::<Value>(data) else { return };
    let (Some(Value::Object(schema)), Some(instance)) = (pair.first(), pair.get(1)) else { return };
    if let Some(Err(problems)) = fuzzing::structural_check(schema, instance) {
        assert!(!problems.is_empty() && problems.len() <= 10, "{} problems", problems.len());
        for problem in &problems {
            // A path and a shown value of at most 60 characters, a keyword's words and values.
            let limit = 1000 + serde_json::to_string(schema).unwrap().len() * 2 + deepest_path(instance);
            assert!(problem.len() <= limit, "a problem of {} bytes: {problem:.200}", problem.len());
        }
    }
    if let Value::Array(items) = instance {
        if items.len() <= 64 {
            let pairwise = items.iter().enumerate().any(|(i, a)| items[..i].iter().any(|b| fuzzing::schema_equal(a, b)));
            let (hashed, compared) = fuzzing::unique_items(items);
            assert_eq!(hashed, pairwise, "uniqueItems by hashing says otherwise for {instance}");
            assert!(compared <= items.len() * items.len());
        }
    }
});

/// The longest JSON Pointer into `value` could be, in bytes (its keys' lengths, escaped).
fn deepest_path(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().enumerate().map(|(i, v)| i.to_string().len() + 1 + deepest_path(v)).max().unwrap_or(0),
        Value::Object(map) => map.iter().map(|(k, v)| 2 * k.len() + 1 + deepest_path(v)).max().unwrap_or(0),
        _ => 0,
    }
}

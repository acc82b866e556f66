//! Opaque cursors for list pagination: the offset of the next page, encoded so that clients
//! cannot read meaning into it. A cursor that does not decode is -32602.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use mcp_types::ErrorObject;

const PREFIX: &str = "mcp-rs:o=";

/// The cursor of the page that starts at `offset`.
pub fn encode(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("{PREFIX}{offset}"))
}

/// The offset a cursor stands for; `None` (no cursor) is 0.
pub fn decode(cursor: Option<&str>) -> Result<usize, ErrorObject> {
    let Some(cursor) = cursor else { return Ok(0) };
    URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix(PREFIX).and_then(|n| n.parse().ok()))
        .ok_or_else(|| ErrorObject::invalid_params("invalid cursor: pass nextCursor from the previous page, unchanged"))
}

/// One page of `items` starting at the cursor, and the next cursor if more remain.
pub fn page<T: Clone>(items: &[T], cursor: Option<&str>, size: usize) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = decode(cursor)?;
    if start > items.len() {
        return Err(ErrorObject::invalid_params("invalid cursor: the list is shorter than that now"));
    }
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| encode(end));
    Ok((items[start..end].to_vec(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_through_and_rejects_forged_cursors() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, None, 2).unwrap();
        assert_eq!(first, [0, 1]);
        let (second, next) = page(&items, next.as_deref(), 2).unwrap();
        assert_eq!(second, [2, 3]);
        let (last, next) = page(&items, next.as_deref(), 2).unwrap();
        assert_eq!((last, next), (vec![4], None));
        assert!(page(&items, Some("nope"), 2).is_err());
        assert!(page(&items, Some(""), 2).is_err());
        assert!(page(&items, Some(&encode(9)), 2).is_err());
    }
}

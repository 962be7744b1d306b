//! JSON output too large to build as one tree: an object's small fields
//! built as a tree, then one long array written item by item.

use serde::Serialize;
use serde_json::Value as Json;
use std::io::{self, Write};

/// Writes `head` (a JSON object) with one more field, `key`, holding
/// `items` as an array, each serialized as it comes; then a newline.
pub(crate) fn write_with_array<T: Serialize>(
    out: &mut impl Write,
    head: &Json,
    key: &str,
    items: impl IntoIterator<Item = T>,
) -> io::Result<()> {
    let head = head.to_string();
    let fields = head
        .strip_prefix('{')
        .and_then(|h| h.strip_suffix('}'))
        .expect("the head is a JSON object");
    let comma = if fields.is_empty() { "" } else { "," };
    write!(out, "{{{fields}{comma}{}:[", Json::from(key))?;
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &item)?;
    }
    out.write_all(b"]}\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_array_joins_the_head_as_one_object() {
        let mut out = Vec::new();
        write_with_array(&mut out, &json!({"a": 1, "b": "x"}), "items", [1, 2, 3]).unwrap();
        let v: Json = serde_json::from_slice(&out).unwrap();
        assert_eq!(v, json!({"a": 1, "b": "x", "items": [1, 2, 3]}));
        let mut out = Vec::new();
        write_with_array(&mut out, &json!({}), "none", Vec::<u8>::new()).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "{\"none\":[]}\n");
    }
}

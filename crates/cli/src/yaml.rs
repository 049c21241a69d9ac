//! A small YAML writer for the manifests of `h2lab deploy`: block mappings and sequences,
//! every scalar written as JSON (strings double-quoted with JSON escapes, which YAML reads the
//! same), so the output means exactly the JSON value it was made from. Keys are written in
//! sorted order whatever the map keeps (serde_json's order depends on its features).

use serde_json::Value;

/// The YAML text of `v` (a document without the `---` marker), ending with a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => mapping(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => sequence(&mut out, a, 0),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

/// A mapping key: plain when it is unambiguous, JSON-quoted otherwise.
fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
        && k.as_bytes()[0].is_ascii_alphabetic()
        && !matches!(
            k.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        );
    if plain {
        k.to_string()
    } else {
        scalar(&Value::String(k.to_string()))
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".to_string(),
        Value::Array(_) => "[]".to_string(),
        other => other.to_string(),
    }
}

fn is_block(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn mapping(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    let pad = " ".repeat(indent);
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (k, v) in entries {
        out.push_str(&pad);
        out.push_str(&key(k));
        out.push(':');
        match v {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                mapping(out, inner, indent + 2);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                sequence(out, items, indent);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

fn sequence(out: &mut String, items: &[Value], indent: usize) {
    let pad = " ".repeat(indent);
    for item in items {
        out.push_str(&pad);
        out.push_str("- ");
        match item {
            Value::Object(m) if !m.is_empty() => {
                // The first entry on the dash line, the others aligned with it.
                let mut text = String::new();
                mapping(&mut text, m, indent + 2);
                out.push_str(text.trim_start_matches(' '));
            }
            Value::Array(a) if is_block(item) => {
                let mut text = String::new();
                sequence(&mut text, a, indent + 2);
                out.push_str(text.trim_start_matches(' '));
            }
            other => {
                out.push_str(&scalar(other));
                out.push('\n');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_yaml_with_json_scalars() {
        let v = json!({
            "apiVersion": "batch/v1",
            "metadata": {"labels": {"app.kubernetes.io/name": "h2lab"}},
            "spec": {
                "n": 3,
                "on": true,
                "empty": {},
                "args": ["bench", "-H", "x: \"y\"\n", "--"],
                "containers": [{"name": "a", "ports": [{"containerPort": 80}]}, {"name": "b"}],
                "nested": [[1, 2], []]
            }
        });
        let want = r#"apiVersion: "batch/v1"
metadata:
  labels:
    app.kubernetes.io/name: "h2lab"
spec:
  args:
  - "bench"
  - "-H"
  - "x: \"y\"\n"
  - "--"
  containers:
  - name: "a"
    ports:
    - containerPort: 80
  - name: "b"
  empty: {}
  "n": 3
  nested:
  - - 1
    - 2
  - []
  "on": true
"#;
        assert_eq!(to_yaml(&v), want);
    }
}

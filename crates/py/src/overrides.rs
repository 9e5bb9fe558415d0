//! JSON from Python → TOML tables for the scenario parser. Python serialises dicts with `json`,
//! so the binding needs no knowledge of the schema: the Rust parser validates every key.

use cclab_core::scenario::{ScenarioError, ScenarioErrors};

/// Parses `text` as a JSON object into a TOML table; `file` names the source in errors.
pub fn json_to_table(text: &str, file: &str) -> Result<toml::Table, ScenarioErrors> {
    let fail = |field: &str, message: String| {
        ScenarioErrors(vec![ScenarioError { file: file.to_string(), field: field.to_string(), line: None, message }])
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| fail("", format!("not valid JSON: {e}")))?;
    match to_toml(&value, "").map_err(|(field, message)| fail(&field, message))? {
        toml::Value::Table(t) => Ok(t),
        _ => Err(fail("", "expected a table of keys and values".into())),
    }
}

/// Converts one JSON value; errors carry the dotted path of the offending key.
fn to_toml(value: &serde_json::Value, path: &str) -> Result<toml::Value, (String, String)> {
    use serde_json::Value as J;
    let child = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    Ok(match value {
        J::Null => {
            return Err((path.to_string(), "has no value (None/null); leave the key out to use the default".into()))
        }
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(_)) if n.is_u64() => {
                return Err((path.to_string(), format!("{n} is larger than the largest integer TOML holds")));
            }
            (None, Some(f)) => toml::Value::Float(f),
            (None, None) => return Err((path.to_string(), format!("{n} is not a number TOML can hold"))),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(items) => toml::Value::Array(
            items.iter().enumerate().map(|(i, v)| to_toml(v, &format!("{path}[{i}]"))).collect::<Result<_, _>>()?,
        ),
        J::Object(map) => {
            let mut table = toml::Table::new();
            for (k, v) in map {
                table.insert(k.clone(), to_toml(v, &child(k))?);
            }
            toml::Value::Table(table)
        }
    })
}

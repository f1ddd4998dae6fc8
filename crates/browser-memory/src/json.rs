//! JSON as browser-agent-driver writes it: `JSON.stringify(value, null, 2)` output (2-space
//! indent, no trailing newline), JavaScript number formatting (`3`, not `3.0`;
//! `0.6799999999999999`; `1e+21`), and [`Json`], a value that keeps object keys in their
//! order so free-form actions survive a round trip unchanged.

use std::fmt;
use std::io;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::ser::{CompactFormatter, Formatter, PrettyFormatter};

/// A JSON value whose objects keep their keys in document order. Numbers are `f64`, as in
/// JavaScript.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object, keys in order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string content, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a JavaScript template literal would print it (`${value}`); a missing
    /// value prints `undefined`.
    pub fn template_text(value: Option<&Json>) -> String {
        match value {
            None => "undefined".to_owned(),
            Some(Json::Null) => "null".to_owned(),
            Some(Json::Bool(b)) => b.to_string(),
            Some(Json::Number(n)) => js_number(*n),
            Some(Json::String(s)) => s.clone(),
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Json::Null => String::new(),
                    other => Json::template_text(Some(other)),
                })
                .collect::<Vec<_>>()
                .join(","),
            Some(Json::Object(_)) => "[object Object]".to_owned(),
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => serializer.serialize_f64(*n),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(members) => {
                let mut map = serializer.serialize_map(Some(members.len()))?;
                for (key, value) in members {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Number(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members: Vec<(String, Json)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            // A repeated key keeps its first position and its last value, as `JSON.parse` does.
            match members.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => members.push((key, value)),
            }
        }
        Ok(Json::Object(members))
    }
}

/// Formats a number as JavaScript's `String(number)` does (which `JSON.stringify` uses);
/// non-finite numbers become `null`, as in JSON.
pub fn js_number(x: f64) -> String {
    if !x.is_finite() {
        return "null".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, like JavaScript.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    let n = exponent + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e >= 0 { '+' } else { '-' };
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{first}e{sign}{}", e.abs())
        } else {
            format!("{first}.{rest}e{sign}{}", e.abs())
        }
    };
    if x < 0.0 { format!("-{body}") } else { body }
}

/// A serde_json formatter that writes numbers the JavaScript way around another formatter.
struct JsNumbers<F>(F);

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $name<W: ?Sized + io::Write>(&mut self, writer: &mut W $(, $arg: $ty)*) -> io::Result<()> {
            self.0.$name(writer $(, $arg)*)
        })*
    };
}

impl<F: Formatter> Formatter for JsNumbers<F> {
    delegate! {
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        begin_object_value();
        end_object_value();
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(js_number(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(js_number(f64::from(value)).as_bytes())
    }
}

/// `JSON.stringify(value, null, 2)`: 2-space indent, no trailing newline.
pub fn to_pretty<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    write_with(value, JsNumbers(PrettyFormatter::with_indent(b"  ")))
}

/// `JSON.stringify(value)`: compact.
pub fn to_compact<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    write_with(value, JsNumbers(CompactFormatter))
}

fn write_with<T: Serialize + ?Sized, F: Formatter>(
    value: &T,
    formatter: F,
) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer)?;
    // serde_json writes valid UTF-8 only.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_javascript_does() {
        let table: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (3.0, "3"),
            (0.5, "0.5"),
            (0.6799999999999999, "0.6799999999999999"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (-2.5, "-2.5"),
            (1767225600000.0, "1767225600000"),
            (f64::NAN, "null"),
        ];
        for &(value, expected) in table {
            assert_eq!(js_number(value), expected, "{value:e}");
        }
    }

    #[test]
    fn objects_keep_key_order_through_a_round_trip() {
        let text = r#"{"z":1,"a":{"y":[1,2.5,"x"],"b":null},"m":true}"#;
        let value: Json = serde_json::from_str(text).expect("parse");
        assert_eq!(to_compact(&value).expect("write"), text);
        assert_eq!(
            to_pretty(&Json::Object(vec![("a".into(), Json::Array(vec![]))])).expect("write"),
            "{\n  \"a\": []\n}"
        );
    }
}

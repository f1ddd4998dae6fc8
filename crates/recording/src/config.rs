//! A trail's `config:` block: kept as written, with the two parts replay reads checked and
//! parsed as Trailblaze reads them. `memory:` seeds agent memory before the first step (a map
//! of keys to scalars, numbers and booleans read as their text); `args:` declares the trail's
//! typed parameters (`name: type`, or `name: {type, description, required, default}`), which
//! `{{args.name}}` tokens read.
//!
//! Every other key is kept as written and not interpreted: Trailblaze's runtime reads configs
//! leniently, and older trails carry keys (`displayName`, `electron`) newer versions dropped.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value as Json;
use serde_yaml::{Mapping, Value as Yaml};

/// The declared type of a trail argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgType {
    /// `string`
    String,
    /// `integer` (a 64-bit signed integer)
    Integer,
    /// `boolean`
    Boolean,
    /// `array`: bound, but a token naming it is left as written (Trailblaze defers array
    /// substitution).
    Array,
    /// `object`: bound; a dotted path into it (`{{args.reply_to.email}}`) resolves, a token
    /// naming the whole object is left as written.
    Object,
}

impl ArgType {
    /// The type's name in a trail.
    pub fn name(self) -> &'static str {
        match self {
            ArgType::String => "string",
            ArgType::Integer => "integer",
            ArgType::Boolean => "boolean",
            ArgType::Array => "array",
            ArgType::Object => "object",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => ArgType::String,
            "integer" => ArgType::Integer,
            "boolean" => ArgType::Boolean,
            "array" => ArgType::Array,
            "object" => ArgType::Object,
            _ => return None,
        })
    }
}

impl fmt::Display for ArgType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One declared argument of a trail (`config.args.<name>`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ArgDeclaration {
    /// The name `{{args.<name>}}` reads (an identifier: letters, digits, `_`).
    pub name: String,
    /// The declared type; values are coerced to it when bound.
    pub kind: ArgType,
    /// What the argument is for.
    pub description: Option<String>,
    /// The value when none is given; `None` makes the argument required.
    pub default: Option<Json>,
}

/// A trail's `config:` block.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    mapping: Mapping,
    memory: Vec<(String, String)>,
    args: Vec<ArgDeclaration>,
}

impl Config {
    /// The block as written.
    pub fn mapping(&self) -> &Mapping {
        &self.mapping
    }

    /// `memory:`: the values that seed memory before the first step, in the order written.
    pub fn memory(&self) -> &[(String, String)] {
        &self.memory
    }

    /// `args:`: the declared arguments, in the order written.
    pub fn args(&self) -> &[ArgDeclaration] {
        &self.args
    }

    /// A config holding `mapping`, checked as a parsed one is.
    pub fn from_mapping(mapping: Mapping) -> crate::Result<Self> {
        Config::deserialize(Yaml::Mapping(mapping)).map_err(|e| crate::Error::Parse {
            file: "<config>".to_owned(),
            line: 0,
            column: 0,
            message: e.to_string(),
        })
    }

    /// Whether the block is empty.
    pub fn is_empty(&self) -> bool {
        self.mapping.is_empty()
    }
}

impl Serialize for Config {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.mapping.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Config {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ConfigVisitor)
    }
}

struct ConfigVisitor;

impl<'de> Visitor<'de> for ConfigVisitor {
    type Value = Config;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a `config:` map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Config, A::Error> {
        let mut config = Config::default();
        while let Some(key) = map.next_key::<Yaml>()? {
            let value = match key.as_str() {
                Some("memory") => {
                    let seeds = map.next_value_seed(MemorySeeds)?;
                    config.memory = seeds
                        .iter()
                        .map(|(k, v, _)| (k.clone(), v.clone()))
                        .collect();
                    Yaml::Mapping(
                        seeds
                            .into_iter()
                            .map(|(k, _, written)| (Yaml::String(k), written))
                            .collect(),
                    )
                }
                Some("args") => {
                    let (args, written) = map.next_value_seed(ArgsSeed)?;
                    config.args = args;
                    written
                }
                _ => map.next_value::<Yaml>()?,
            };
            if config.mapping.insert(key.clone(), value).is_some() {
                return Err(de::Error::custom(format!(
                    "config key {} appears twice",
                    describe_key(&key)
                )));
            }
        }
        Ok(config)
    }
}

fn describe_key(key: &Yaml) -> String {
    match key {
        Yaml::String(text) => format!("`{text}`"),
        other => format!("{other:?}"),
    }
}

/// A YAML scalar as Trailblaze reads it into a string (`5` and `true` are read as text), and
/// as written.
struct Scalar;

impl<'de> DeserializeSeed<'de> for Scalar {
    type Value = (String, Yaml);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = (String, Yaml);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((v.to_owned(), Yaml::String(v.to_owned())))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok((v.to_string(), Yaml::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok((v.to_string(), Yaml::Number(v.into())))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok((v.to_string(), Yaml::Number(v.into())))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok((yaml_float_text(v), Yaml::Number(v.into())))
    }
}

/// The text of a YAML float as written back by the YAML writer.
fn yaml_float_text(v: f64) -> String {
    serde_yaml::to_string(&v)
        .map(|text| text.trim_end().to_owned())
        .unwrap_or_else(|_| v.to_string())
}

/// `memory:`: keys to scalars. Each entry: key, its text, the value as written.
struct MemorySeeds;

impl<'de> DeserializeSeed<'de> for MemorySeeds {
    type Value = Vec<(String, String, Yaml)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MemorySeeds {
    type Value = Vec<(String, String, Yaml)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`memory:` as a map of keys to values")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seeds: Vec<(String, String, Yaml)> = Vec::new();
        while let Some((key, _)) = map.next_key_seed(Scalar)? {
            let (text, written) = map.next_value_seed(Scalar)?;
            if seeds.iter().any(|(k, _, _)| *k == key) {
                return Err(de::Error::custom(format!(
                    "memory key {key:?} appears twice"
                )));
            }
            seeds.push((key, text, written));
        }
        Ok(seeds)
    }
}

/// Whether `name` is a legal argument name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub(crate) fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `args:`: names to declarations; also returns the block as written.
struct ArgsSeed;

impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = (Vec<ArgDeclaration>, Yaml);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgsSeed {
    type Value = (Vec<ArgDeclaration>, Yaml);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`args:` as a map of argument names to declarations")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut args: Vec<ArgDeclaration> = Vec::new();
        let mut written = Mapping::new();
        while let Some(name) = map.next_key_seed(ArgName)? {
            let (declaration, as_written) = map.next_value_seed(ArgSeed { name: &name })?;
            if args.iter().any(|a| a.name == name) {
                return Err(de::Error::custom(format!("arg `{name}` is declared twice")));
            }
            args.push(declaration);
            written.insert(Yaml::String(name), as_written);
        }
        Ok((args, Yaml::Mapping(written)))
    }
}

struct ArgName;

impl<'de> DeserializeSeed<'de> for ArgName {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgName {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an argument name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<String, E> {
        if !is_identifier(name) {
            return Err(E::custom(format!(
                "arg name {name:?} is not an identifier: arg names match [a-zA-Z_][a-zA-Z0-9_]* \
                 (no dashes, dots or spaces) so that `{{{{args.<name>}}}}` can read them"
            )));
        }
        Ok(name.to_owned())
    }
}

struct ArgSeed<'n> {
    name: &'n str,
}

impl<'de> DeserializeSeed<'de> for ArgSeed<'_> {
    type Value = (ArgDeclaration, Yaml);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn arg_type<E: de::Error>(name: &str, text: &str) -> Result<ArgType, E> {
    ArgType::parse(text).ok_or_else(|| {
        E::custom(format!(
            "arg `{name}` has type {text:?}; the types are array, boolean, integer, object, string"
        ))
    })
}

impl<'de> Visitor<'de> for ArgSeed<'_> {
    type Value = (ArgDeclaration, Yaml);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "arg `{}` as a type (`string`) or a map (`{{type: string, default: ''}}`)",
            self.name
        )
    }

    /// The shorthand `name: type`: required, no default.
    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        let declaration = ArgDeclaration {
            name: self.name.to_owned(),
            kind: arg_type(self.name, text)?,
            description: None,
            default: None,
        };
        Ok((declaration, Yaml::String(text.to_owned())))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let name = self.name;
        let mut written = Mapping::new();
        let mut kind = None;
        let mut description = None;
        let mut required = None;
        let mut default: Option<Yaml> = None;
        while let Some(key) = map.next_key::<String>()? {
            let value = match key.as_str() {
                "type" => {
                    let (text, as_written) = map.next_value_seed(Scalar)?;
                    kind = Some(arg_type::<A::Error>(name, &text)?);
                    as_written
                }
                "description" => {
                    let (text, as_written) = map.next_value_seed(Scalar)?;
                    description = Some(text);
                    as_written
                }
                "required" => {
                    let flag: bool = map.next_value()?;
                    required = Some(flag);
                    Yaml::Bool(flag)
                }
                "default" => {
                    let value = map.next_value_seed(NotNull { name })?;
                    default = Some(value.clone());
                    value
                }
                other => {
                    return Err(de::Error::custom(format!(
                        "arg `{name}` has an unknown field `{other}`; the fields are type, \
                         description, required, default"
                    )));
                }
            };
            if written.insert(Yaml::String(key.clone()), value).is_some() {
                return Err(de::Error::custom(format!("arg `{name}` has `{key}` twice")));
            }
        }
        let kind = kind.unwrap_or(ArgType::String);
        match (required, &default) {
            (Some(true), Some(_)) => {
                return Err(de::Error::custom(format!(
                    "arg `{name}` declares `required: true` and a `default:`; a default makes an \
                     arg optional, drop one of them"
                )));
            }
            (Some(false), None) => {
                return Err(de::Error::custom(format!(
                    "arg `{name}` declares `required: false` without a `default:`; an optional \
                     arg needs a default"
                )));
            }
            _ => {}
        }
        let default = default.map(|value| default_json(kind, &value));
        let declaration = ArgDeclaration {
            name: name.to_owned(),
            kind,
            description,
            default,
        };
        Ok((declaration, Yaml::Mapping(written)))
    }
}

/// A default as JSON: a scalar default of a string arg keeps its text (`'007'` stays `"007"`,
/// `5` becomes `"5"`); anything else converts as is.
fn default_json(kind: ArgType, value: &Yaml) -> Json {
    if kind == ArgType::String {
        let text = match value {
            Yaml::String(text) => Some(text.clone()),
            Yaml::Bool(b) => Some(b.to_string()),
            Yaml::Number(n) => Some(n.to_string()),
            _ => None,
        };
        if let Some(text) = text {
            return Json::String(text);
        }
    }
    yaml_to_json(value)
}

/// A YAML value as JSON. Mapping keys that are not strings are written as their YAML text;
/// tags never reach here (a trail cannot hold them).
pub(crate) fn yaml_to_json(value: &Yaml) -> Json {
    match value {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(*b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or(Json::Null, Json::Number)
            }
        }
        Yaml::String(s) => Json::String(s.clone()),
        Yaml::Sequence(items) => Json::Array(items.iter().map(yaml_to_json).collect()),
        Yaml::Mapping(map) => Json::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        other => serde_yaml::to_string(other)
                            .map(|t| t.trim_end().to_owned())
                            .unwrap_or_default(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Tagged(tagged) => yaml_to_json(&tagged.value),
    }
}

/// Any YAML value but null (an arg has no null).
struct NotNull<'n> {
    name: &'n str,
}

impl<'de> DeserializeSeed<'de> for NotNull<'_> {
    type Value = Yaml;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NotNull<'_> {
    type Value = Yaml;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a default value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Yaml, E> {
        Err(E::custom(format!(
            "arg `{}` declares `default: null`; args have no null: use `default: ''` for an \
             empty string, or drop `default:` to keep the arg required",
            self.name
        )))
    }

    fn visit_none<E: de::Error>(self) -> Result<Yaml, E> {
        self.visit_unit()
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Yaml, E> {
        Ok(Yaml::String(v.to_owned()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Yaml, E> {
        Ok(Yaml::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Yaml, E> {
        Ok(Yaml::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Yaml, E> {
        Ok(Yaml::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Yaml, E> {
        Ok(Yaml::Number(v.into()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Yaml>()? {
            items.push(item);
        }
        Ok(Yaml::Sequence(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
        let mut out = Mapping::new();
        while let Some((k, v)) = map.next_entry::<Yaml, Yaml>()? {
            out.insert(k, v);
        }
        Ok(Yaml::Mapping(out))
    }
}

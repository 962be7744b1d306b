//! The C functions of the MPI standard, read from pympistandard's
//! `apis.json`, with the large-count `_c` variants derived as the standard
//! does, plus the legacy MPI-1 functions described in the overrides.

use crate::overrides::LegacyFunction;
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
    InOut,
}

/// A parameter's `length` in apis.json.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Length {
    /// Not an array.
    None,
    /// The value of another parameter.
    Param(String),
    /// A constant such as MPI_MAX_OBJECT_NAME.
    Const(String),
    /// `*` (or empty): an array whose length the data does not give.
    Star,
    /// `[n][3]`: n rows of a fixed number of columns.
    Rows(String, u32),
}

/// One C parameter of one function.
#[derive(Clone, Debug)]
pub struct Param {
    pub name: String,
    pub kind: String,
    pub dir: Dir,
    pub length: Length,
    /// apis.json's `pointer`: forced pointer (true), forced value (false).
    pub pointer: Option<bool>,
    pub constant: bool,
    pub root_only: bool,
    /// C type of FUNCTION kinds (`MPI_User_function`, `_c` suffix included).
    pub func_type: String,
}

/// One C function.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub return_kind: String,
    pub params: Vec<Param>,
    /// The large-count (`_c`) variant: POLY kinds take their large type.
    pub large: bool,
    /// Dropped from the standard (MPI-1), described in the overrides.
    pub legacy: bool,
}

#[derive(Deserialize)]
struct RawProcedure {
    name: String,
    return_kind: String,
    parameters: Vec<RawParam>,
    attributes: RawAttributes,
}

#[derive(Deserialize)]
struct RawAttributes {
    callback: bool,
    predefined_function: Option<String>,
    c_expressible: bool,
}

#[derive(Deserialize)]
struct RawParam {
    name: String,
    kind: String,
    param_direction: String,
    length: serde_json::Value,
    pointer: Option<bool>,
    #[serde(deserialize_with = "lenient_bool")]
    constant: bool,
    #[serde(deserialize_with = "lenient_bool")]
    root_only: bool,
    #[serde(deserialize_with = "lenient_bool")]
    large_only: bool,
    suppress: String,
    func_type: String,
}

/// A boolean, also written as the string "true"/"false" (apis.json does
/// that for MPI_Pready_list's `constant`; Python reads both as truthy).
fn lenient_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::Bool(b) => Ok(b),
        serde_json::Value::String(s) if s == "true" => Ok(true),
        serde_json::Value::String(s) if s == "false" => Ok(false),
        other => Err(serde::de::Error::custom(format!(
            "expected a boolean, found {other}"
        ))),
    }
}

/// Every C function of the standard (both variants of large-count ones)
/// and the legacy functions, sorted by name.
pub fn load(apis_json: &str, legacy: &[LegacyFunction]) -> Result<Vec<Function>> {
    let raw: BTreeMap<String, RawProcedure> =
        serde_json::from_str(apis_json).context("apis.json")?;
    let mut out = Vec::new();
    for p in raw.values() {
        let a = &p.attributes;
        if a.callback || a.predefined_function.is_some() || !a.c_expressible {
            continue;
        }
        let visible: Vec<&RawParam> = p
            .parameters
            .iter()
            .filter(|q| !q.suppress.contains("c_parameter"))
            .collect();
        let embiggened =
            visible.iter().any(|q| q.kind.starts_with("POLY")) || p.return_kind.starts_with("POLY");
        for large in [false, true] {
            if large && !embiggened {
                continue;
            }
            let params = visible
                .iter()
                .filter(|q| large || !q.large_only)
                .map(|q| convert(q, large))
                .collect::<Result<Vec<_>>>()
                .with_context(|| format!("apis.json: {}", p.name))?;
            let name = if large {
                format!("{}_c", p.name)
            } else {
                p.name.clone()
            };
            out.push(Function {
                name,
                return_kind: p.return_kind.clone(),
                params,
                large,
                legacy: false,
            });
        }
    }
    for f in legacy {
        let params = f
            .params
            .iter()
            .map(legacy_param)
            .collect::<Result<Vec<_>>>()?;
        out.push(Function {
            name: f.name.clone(),
            return_kind: "ERROR_CODE".into(),
            params,
            large: false,
            legacy: true,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = out.windows(2).find(|w| w[0].name == w[1].name) {
        bail!(
            "{} is described twice (apis.json and the overrides' legacy functions?)",
            w[0].name
        );
    }
    Ok(out)
}

fn convert(q: &RawParam, large: bool) -> Result<Param> {
    let length = match &q.length {
        serde_json::Value::Null => Length::None,
        serde_json::Value::String(s) => length_of(s),
        serde_json::Value::Array(v) => match (
            v.first().and_then(|x| x.as_str()),
            v.get(1).and_then(|x| x.as_str()),
        ) {
            (Some(rows), Some(cols)) => {
                Length::Rows(rows.to_owned(), cols.parse().context("column count")?)
            }
            _ => bail!("{}: unreadable length {:?}", q.name, q.length),
        },
        other => bail!("{}: unreadable length {other:?}", q.name),
    };
    let func_type = if large && q.kind == "POLYFUNCTION" {
        format!("{}_c", q.func_type)
    } else {
        q.func_type.clone()
    };
    Ok(Param {
        name: q.name.clone(),
        kind: q.kind.clone(),
        dir: direction(&q.param_direction)?,
        length,
        pointer: q.pointer,
        constant: q.constant,
        root_only: q.root_only,
        func_type,
    })
}

fn legacy_param(q: &crate::overrides::LegacyParam) -> Result<Param> {
    Ok(Param {
        name: q.name.clone(),
        kind: q.kind.clone(),
        dir: direction(&q.dir)?,
        length: q.len.as_deref().map_or(Length::None, length_of),
        pointer: None,
        constant: q.constant,
        root_only: false,
        func_type: q.func_type.clone().unwrap_or_default(),
    })
}

fn length_of(s: &str) -> Length {
    match s {
        "" | "*" => Length::Star,
        s if s.starts_with("MPI_") => Length::Const(s.to_owned()),
        s => Length::Param(s.to_owned()),
    }
}

fn direction(s: &str) -> Result<Dir> {
    Ok(match s {
        "in" => Dir::In,
        "out" => Dir::Out,
        "inout" => Dir::InOut,
        other => bail!("unknown parameter direction {other:?}"),
    })
}

/// Names of apis.json's entries that are not functions an application
/// calls: callback prototypes and predefined callback functions.
pub fn not_procedures(apis_json: &str) -> Result<(Vec<String>, Vec<String>)> {
    let raw: BTreeMap<String, RawProcedure> =
        serde_json::from_str(apis_json).context("apis.json")?;
    let callbacks = raw
        .values()
        .filter(|p| p.attributes.callback)
        .map(|p| p.name.clone())
        .collect();
    let predefined = raw
        .values()
        .filter(|p| p.attributes.predefined_function.is_some())
        .map(|p| p.name.clone())
        .collect();
    Ok((callbacks, predefined))
}

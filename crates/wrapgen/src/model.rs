//! The one model of every parameter: how it is encoded in a call signature
//! ([`Enc`], written to mpispec's function table) and what the wrapper does
//! to record it ([`Action`], written to the wrappers). Both come from the
//! same [`Action`], so the table and the wrappers cannot disagree.

use crate::ctype::CType;
use crate::kinds::{self, Class};
use crate::lenexpr::{self, Expr};
use crate::overrides::Overrides;
use crate::standard::{Dir, Function, Length, Param};
use anyhow::{Context, Result, bail};

/// mpispec's `Enc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enc {
    Int,
    Rank,
    Tag,
    /// A set of named constants (`ConstSet` variant).
    Const(String),
    Address,
    Handle(&'static str),
    Request,
    Status,
    Buffer,
    Str,
    Callback,
    Array(Box<Enc>),
    Coords,
    OwnRank(Box<Enc>),
}

impl Enc {
    /// Rust for the value in a `static` (`Enc::Array(&Enc::Int)`).
    pub fn rust(&self) -> String {
        match self {
            Enc::Int => "Enc::Int".into(),
            Enc::Rank => "Enc::Rank".into(),
            Enc::Tag => "Enc::Tag".into(),
            Enc::Const(set) => format!("Enc::Const(ConstSet::{set})"),
            Enc::Address => "Enc::Address".into(),
            Enc::Handle(k) => format!("Enc::Handle(HandleKind::{k})"),
            Enc::Request => "Enc::Request".into(),
            Enc::Status => "Enc::Status".into(),
            Enc::Buffer => "Enc::Buffer".into(),
            Enc::Str => "Enc::Str".into(),
            Enc::Callback => "Enc::Callback".into(),
            Enc::Array(e) => format!("Enc::Array(&{})", e.rust()),
            Enc::Coords => "Enc::Coords".into(),
            Enc::OwnRank(e) => format!("Enc::OwnRank(&{})", e.rust()),
        }
    }
}

/// A value the wrapper has in hand (a by-value argument, an array element,
/// or one read before the call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scalar {
    Int,
    Address,
    Tag,
    /// An integer of this set of named constants.
    Const(String),
    /// A rank in this communicator (parameter name).
    Rank(String),
    /// A collective's root: recorded as an absolute rank, since every rank
    /// names the same root (relative values would differ from rank to rank).
    Root,
    /// A rank in this window's group (parameter name).
    WinRank(String),
    /// A number (`inner`: an int or a constant) that is often the caller's
    /// rank in this communicator (parameter name): that rank is recorded as
    /// such.
    OwnRank {
        comm: String,
        inner: Box<Scalar>,
    },
    Handle(&'static str),
    Request,
    Callback,
    Buffer,
    /// A memory address held in an MPI_Aint: recorded as a buffer.
    Location,
}

/// An output the wrapper reads through a pointer after the call (when the
/// call succeeded: the encoder checks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    /// Read with `int_out`, `address_out`, `offset_out` or `count_out`
    /// (by C type); encoded as an address or as an integer (by meaning).
    Number {
        method: &'static str,
        address: bool,
    },
    Tag,
    /// An integer of this set of named constants.
    Const(String),
    /// A memory address (MPI_Get_address's result): recorded as a buffer.
    Location,
    Rank(String),
    NewHandle(&'static str),
    /// A handle naming an existing object.
    Lookup(&'static str),
    NewRequest,
    /// A status; the communicator of its source rank, if any.
    Status(Option<String>),
    /// The `void *` written through a `void **`.
    BufferOut,
    /// The communicator of MPI_Comm_idup: valid only once its request completes.
    PendingComm,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elem {
    Scalar(Scalar),
    NewHandle(&'static str),
    Lookup(&'static str),
    Status,
    Str,
    /// A NULL-terminated `char *[]` (an element of `char **[]`).
    StrList,
    /// A row of `n` ints (`int ranges[][3]`).
    Row(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Value(Scalar),
    /// The value behind a pointer, read before the call (inout scalars:
    /// the argument as passed; MPI_Cancel's request).
    Before(Scalar),
    /// An inout handle the call frees: its value before the call.
    Free(&'static str),
    Out(Out),
    Str {
        when: Option<String>,
    },
    StrOut {
        cap: Option<Expr>,
        when: Option<String>,
    },
    Array {
        elem: Elem,
        /// `None`: the data does not say, and no override does.
        len: Option<Expr>,
        when: Option<String>,
        /// Written by the call: recorded only if it succeeded.
        out: bool,
        /// `int weights[]`: MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY possible.
        weights: bool,
    },
    /// An output array of coordinates in this communicator's Cartesian
    /// grid (parameter name), of length `len`.
    Coords {
        comm: String,
        len: Option<Expr>,
    },
    /// `...`: not encoded.
    Varargs,
}

impl Scalar {
    fn enc(&self) -> Enc {
        match self {
            Scalar::Int => Enc::Int,
            Scalar::Address => Enc::Address,
            Scalar::Tag => Enc::Tag,
            Scalar::Const(set) => Enc::Const(set.clone()),
            Scalar::Rank(_) | Scalar::Root | Scalar::WinRank(_) => Enc::Rank,
            Scalar::OwnRank { inner, .. } => Enc::OwnRank(Box::new(inner.enc())),
            Scalar::Handle(k) => Enc::Handle(k),
            Scalar::Request => Enc::Request,
            Scalar::Callback => Enc::Callback,
            Scalar::Buffer | Scalar::Location => Enc::Buffer,
        }
    }
}

impl Elem {
    fn enc(&self) -> Enc {
        match self {
            Elem::Scalar(s) => s.enc(),
            Elem::NewHandle(k) | Elem::Lookup(k) => Enc::Handle(k),
            Elem::Status => Enc::Status,
            Elem::Str => Enc::Str,
            Elem::StrList => Enc::Array(Box::new(Enc::Str)),
            Elem::Row(_) => Enc::Array(Box::new(Enc::Int)),
        }
    }
}

impl Action {
    /// How the value is encoded; `None` for varargs (not a parameter of the signature).
    pub fn enc(&self) -> Option<Enc> {
        Some(match self {
            Action::Value(s) | Action::Before(s) => s.enc(),
            Action::Free(k) => Enc::Handle(k),
            Action::Out(o) => match o {
                Out::Number { address: false, .. } => Enc::Int,
                Out::Number { address: true, .. } => Enc::Address,
                Out::Tag => Enc::Tag,
                Out::Const(set) => Enc::Const(set.clone()),
                Out::Location => Enc::Buffer,
                Out::Rank(_) => Enc::Rank,
                Out::NewHandle(k) | Out::Lookup(k) => Enc::Handle(k),
                Out::NewRequest => Enc::Request,
                Out::Status(_) => Enc::Status,
                Out::BufferOut => Enc::Buffer,
                Out::PendingComm => Enc::Handle("Comm"),
            },
            Action::Str { .. } | Action::StrOut { .. } => Enc::Str,
            Action::Array { elem, .. } => Enc::Array(Box::new(elem.enc())),
            Action::Coords { .. } => Enc::Coords,
            Action::Varargs => return None,
        })
    }
}

/// One parameter of the model.
#[derive(Clone, Debug)]
pub struct ParamModel {
    pub name: String,
    pub ctype: CType,
    pub action: Action,
}

/// One function of the model.
#[derive(Clone, Debug)]
pub struct FuncModel {
    pub name: String,
    pub params: Vec<ParamModel>,
    /// C return type (`int` for error codes).
    pub ret: String,
    pub variadic: bool,
    pub legacy: bool,
}

impl FuncModel {
    pub fn param(&self, name: &str) -> Option<&ParamModel> {
        self.params.iter().find(|p| p.name == name)
    }

    /// The communicator parameters passed by value.
    pub fn comms(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|p| p.ctype.base == "MPI_Comm" && p.ctype.depth() == 0)
            .map(|p| p.name.as_str())
            .collect()
    }
}

/// Builds the model of every function.
pub fn build(functions: &[Function], overrides: &Overrides) -> Result<Vec<FuncModel>> {
    functions
        .iter()
        .map(|f| function(f, overrides).with_context(|| f.name.clone()))
        .collect()
}

fn function(f: &Function, o: &Overrides) -> Result<FuncModel> {
    let ret = if f.return_kind == "ERROR_CODE" {
        "int".to_owned()
    } else {
        let info = kinds::kind(&f.return_kind)
            .with_context(|| format!("unknown return kind {}", f.return_kind))?;
        info.c_small.to_owned()
    };
    let mut params = Vec::new();
    for p in &f.params {
        let info =
            kinds::kind(&p.kind).with_context(|| format!("{}: unknown kind {}", p.name, p.kind))?;
        let ov = o.param(&f.name, &p.name);
        let ctype = match &ov.ctype {
            Some(s) => CType::parse(s, info.class == Class::Callback)?,
            None => CType::of(p, &info, f.large),
        };
        params.push(ParamModel {
            name: p.name.clone(),
            ctype,
            action: Action::Varargs,
        });
    }
    // Actions need the whole parameter list (which communicator a rank is in).
    let skeleton = FuncModel {
        name: f.name.clone(),
        params: params.clone(),
        ret,
        variadic: false,
        legacy: f.legacy,
    };
    for (p, m) in f.params.iter().zip(params.iter_mut()) {
        m.action = action(f, p, &m.ctype, &skeleton, o).with_context(|| p.name.clone())?;
    }
    let variadic = params.iter().any(|p| p.action == Action::Varargs);
    params.retain(|p| p.action != Action::Varargs);
    Ok(FuncModel {
        params,
        variadic,
        ..skeleton
    })
}

fn action(f: &Function, p: &Param, ct: &CType, skel: &FuncModel, o: &Overrides) -> Result<Action> {
    let info = kinds::kind(&p.kind).context("kind")?;
    let ov = o.param(&f.name, &p.name);
    let len = |default: Option<Expr>| -> Result<Option<Expr>> {
        match &ov.len {
            Some(s) => Ok(Some(lenexpr::parse(s)?)),
            None => Ok(default),
        }
    };
    let data_len = match &p.length {
        Length::Param(n) | Length::Rows(n, _) => Some(Expr::Name(n.clone())),
        Length::Const(c) => Some(Expr::Name(c.clone())),
        Length::None | Length::Star => None,
    };
    let mut when: Vec<String> = Vec::new();
    if p.root_only {
        when.push("root".into());
    }
    when.extend(ov.when.clone());
    let when = (!when.is_empty()).then(|| when.join(" && "));
    let is_array = ct.array != crate::ctype::Array::No
        || (p.length != Length::None && !matches!(info.class, Class::Str | Class::Buffer));
    let constants = o.constants(&f.name, &p.name, &p.kind);
    // An int (or an enum of MPI_T) always fits the encoding's plain numbers.
    let int_like = matches!(
        ct.base.as_str(),
        "int" | "MPI_T_cb_safety" | "MPI_T_source_order"
    );
    if constants.is_some() && (info.class != Class::Number || !int_like) {
        bail!("named constants in a parameter that is no int");
    }
    let number = match (info.class, constants) {
        (Class::Address, _) => Scalar::Address,
        (_, Some(set)) => Scalar::Const(set.to_owned()),
        _ => Scalar::Int,
    };
    let array = |elem: Elem, out: bool| -> Result<Action> {
        Ok(Action::Array {
            elem,
            len: len(data_len.clone())?,
            when: when.clone(),
            out,
            weights: p.kind == "WEIGHT",
        })
    };
    Ok(match info.class {
        Class::Varargs => Action::Varargs,
        Class::Number if p.kind == "ARGUMENT_COUNT" && ct.depth() > 0 => {
            Action::Value(Scalar::Buffer)
        }
        Class::Number if is_array && ov.coords => match skel.comms().as_slice() {
            [comm] if p.dir == Dir::Out => Action::Coords {
                comm: (*comm).to_owned(),
                len: len(data_len.clone())?,
            },
            _ => bail!(
                "{}: coordinates are an output beside one communicator",
                p.name
            ),
        },
        Class::Number | Class::Address | Class::Location | Class::Rank | Class::Tag if is_array => {
            let elem = match ct.array {
                crate::ctype::Array::Rows(n) => Elem::Row(n),
                _ => Elem::Scalar(number),
            };
            array(elem, p.dir == Dir::Out)?
        }
        Class::Number | Class::Address | Class::Location | Class::Rank | Class::Tag => {
            let scalar = match info.class {
                _ if ov.location || info.class == Class::Location => Scalar::Location,
                Class::Number if ov.own_rank => match skel.comms().as_slice() {
                    [comm] if p.dir == Dir::In => Scalar::OwnRank {
                        comm: (*comm).to_owned(),
                        inner: Box::new(number.clone()),
                    },
                    _ => bail!(
                        "{}: an own rank is an input beside one communicator",
                        p.name
                    ),
                },
                Class::Tag => Scalar::Tag,
                Class::Rank => rank_scalar(p, skel, ov.rank_in.as_deref())?.unwrap_or(Scalar::Int),
                _ => number.clone(),
            };
            match (p.dir, ct.depth()) {
                (_, 0) => Action::Value(scalar),
                (Dir::In | Dir::InOut, _) => Action::Before(scalar),
                (Dir::Out, _) => Action::Out(match scalar {
                    Scalar::Tag => Out::Tag,
                    Scalar::Location => Out::Location,
                    Scalar::Rank(c) => Out::Rank(c),
                    Scalar::WinRank(_) | Scalar::Root | Scalar::OwnRank { .. } => {
                        bail!("window rank, root and own rank outputs are not supported")
                    }
                    Scalar::Const(set) => Out::Const(set),
                    s => Out::Number {
                        method: match ct.base.as_str() {
                            "MPI_Aint" => "address_out",
                            "MPI_Offset" => "offset_out",
                            "MPI_Count" => "count_out",
                            _ => "int_out",
                        },
                        address: s == Scalar::Address,
                    },
                }),
            }
        }
        Class::Handle(k) if is_array => match p.dir {
            Dir::In => array(Elem::Scalar(Scalar::Handle(k)), false)?,
            _ if ov.lookup => array(Elem::Lookup(k), true)?,
            _ => array(Elem::NewHandle(k), true)?,
        },
        Class::Handle(k) => match p.dir {
            Dir::In if ct.depth() == 0 => Action::Value(Scalar::Handle(k)),
            Dir::In => Action::Before(Scalar::Handle(k)),
            Dir::Out if ov.lookup => Action::Out(Out::Lookup(k)),
            Dir::Out
                if k == "Comm"
                    && f.params
                        .iter()
                        .any(|q| q.kind == "REQUEST" && q.dir == Dir::Out) =>
            {
                Action::Out(Out::PendingComm)
            }
            Dir::Out => Action::Out(Out::NewHandle(k)),
            Dir::InOut if ov.keep => Action::Before(Scalar::Handle(k)),
            Dir::InOut => Action::Free(k),
        },
        Class::Request if is_array => array(Elem::Scalar(Scalar::Request), false)?,
        Class::Request => match (p.dir, ct.depth()) {
            (Dir::In, 0) => Action::Value(Scalar::Request),
            (Dir::Out, _) => Action::Out(Out::NewRequest),
            _ => Action::Before(Scalar::Request),
        },
        Class::Status if is_array => array(Elem::Status, true)?,
        Class::Status => {
            let comms = skel.comms();
            Action::Out(Out::Status((comms.len() == 1).then(|| comms[0].to_owned())))
        }
        Class::Buffer | Class::FortranStatus => Action::Value(Scalar::Buffer),
        Class::BufferOut if ov.address_only => Action::Value(Scalar::Buffer),
        Class::BufferOut => Action::Out(Out::BufferOut),
        Class::Str if p.dir == Dir::In => Action::Str { when },
        Class::Str => Action::StrOut {
            cap: len(data_len.clone())?,
            when,
        },
        Class::StrArray => array(Elem::Str, false)?,
        Class::StrArray2 => array(Elem::StrList, false)?,
        Class::ArgList if ct.depth() > 2 => Action::Value(Scalar::Buffer),
        Class::ArgList => array(Elem::Str, false)?,
        Class::Callback => Action::Value(Scalar::Callback),
    })
}

/// Which communicator (or window) a scalar rank parameter is a rank in:
/// the override, else the function's only communicator, else its only
/// window; `None`: an absolute rank (in a group, or no communicator).
fn rank_scalar(p: &Param, f: &FuncModel, rank_in: Option<&str>) -> Result<Option<Scalar>> {
    let of = |name: &str| -> Result<Option<Scalar>> {
        match f.param(name).map(|q| q.ctype.base.as_str()) {
            Some("MPI_Comm") if p.name == "root" => Ok(Some(Scalar::Root)),
            Some("MPI_Comm") => Ok(Some(Scalar::Rank(name.to_owned()))),
            Some("MPI_Win") => Ok(Some(Scalar::WinRank(name.to_owned()))),
            _ => bail!("rank_in = {name:?}: not a communicator or window parameter"),
        }
    };
    if let Some(r) = rank_in {
        return if r == "absolute" { Ok(None) } else { of(r) };
    }
    let comms = f.comms();
    let wins: Vec<&str> = f
        .params
        .iter()
        .filter(|q| q.ctype.base == "MPI_Win" && q.ctype.depth() == 0)
        .map(|q| q.name.as_str())
        .collect();
    match (comms.as_slice(), wins.as_slice()) {
        ([c], _) => of(c),
        ([], [w]) => of(w),
        ([], _) => Ok(None),
        _ => bail!(
            "{}: several communicators; say which in overrides (rank_in)",
            p.name
        ),
    }
}

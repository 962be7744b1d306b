//! `crates/tracer/src/generated/wrappers.rs`: one exported `MPI_X` per
//! wrapped function. The file is `include!`d into the tracer's `wrappers`
//! module, which imports `crate::abi::*`, `Call`, `Encoder`, `IntoHandle`,
//! `HandleKind`, `ConstSet`, `func` and the C types; everything else is spelled in full.

use crate::ctype::{CType, rust_base};
use crate::lenexpr::{self, Scope};
use crate::model::{Action, Elem, FuncModel, Out, ParamModel, Scalar};
use anyhow::{Context, Result, bail};
use std::fmt::Write as _;

/// `funcs`: the generated wrappers. `pmpi_aliases`: functions whose
/// `PMPI_X` the MPI library's own Fortran bindings call, with whether
/// their `MPI_X` is hand-written (in `crate::special`).
pub fn emit(
    funcs: &[&FuncModel],
    pmpi_aliases: &[(&FuncModel, bool)],
    header: &str,
) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    s.push_str(HELPERS);
    for f in funcs {
        s.push_str(&wrapper(f).with_context(|| f.name.clone())?);
    }
    if !pmpi_aliases.is_empty() {
        s.push_str(PMPI_ALIASES);
    }
    for &(f, hand_written) in pmpi_aliases {
        s.push_str(&pmpi_alias(f, hand_written));
    }
    Ok(s)
}

const PMPI_ALIASES: &str = "
// MPICH's Fortran 2008 bindings without choice buffers (`mpi_x_f08_`) call
// `PMPI_X` directly, bypassing the `MPI_X` wrappers. The tracer exports
// those `PMPI_X` too, each recording the call as `MPI_X` does and then
// calling the real `PMPI_X` (resolved with dlsym(RTLD_NEXT), never this
// one). MPICH's C library calls no `PMPI_X` through the dynamic linker, so
// only those bindings (and a program that calls PMPI itself) reach them.
// Their conversions of handles and statuses between C and Fortran
// (`PMPI_Status_c2f` after each completion that fills a Fortran status,
// under Open MPI) are the library's own calls, not the application's: those
// `PMPI_X` call the real one without recording it.
";

/// Whether `name` converts a handle or a status between C and Fortran
/// (`MPI_Type_f2c`, `MPI_Status_c2f08`, `MPI_Comm_fromint`, ...).
pub fn is_conversion(name: &str) -> bool {
    [
        "_c2f", "_f2c", "_c2f08", "_f082c", "_f2f08", "_f082f", "_fromint", "_toint",
    ]
    .iter()
    .any(|suffix| name.ends_with(suffix))
}

/// The exported `MPI_X` of a conversion (see [`is_conversion`]) and the
/// head of the function that traces it: the export passes its return
/// address on (`crate::caller`), and a call from the MPI library itself
/// (a Fortran binding's) goes to the real function unrecorded.
fn conversion_stubs(f: &FuncModel, decl: &[String], args: &str) -> Result<String> {
    let name = &f.name;
    let ret = rust_base(&f.ret);
    let n = f.params.len();
    if !(1..=2).contains(&n) {
        bail!("a conversion of {n} parameters (the caller's address goes after one or two)");
    }
    let decl = decl.join(", ");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n/// Traces `{name}` where the application calls it (`crate::caller`).\n\
         #[cfg(any(target_arch = \"x86_64\", target_arch = \"aarch64\"))]\n\
         #[unsafe(no_mangle)]\n#[unsafe(naked)]\n\
         pub unsafe extern \"C\" fn {name}({decl}) -> {ret} {{\n\
         \x20   crate::caller::with_caller!({n}, traced_{name})\n}}\n\n\
         /// Traces `{name}` (its caller unknown here).\n\
         #[cfg(not(any(target_arch = \"x86_64\", target_arch = \"aarch64\")))]\n\
         #[unsafe(no_mangle)]\n\
         pub unsafe extern \"C\" fn {name}({decl}) -> {ret} {{\n\
         \x20   unsafe {{ traced_{name}({args}, 0) }}\n}}\n\n\
         /// `{name}` called from `caller`.\n\
         unsafe extern \"C\" fn traced_{name}({decl}, caller: usize) -> {ret} {{\n\
         \x20   if crate::caller::in_mpi_library(caller) {{\n\
         \x20       return unsafe {{ crate::pmpi::{name}()({args}) }};\n\
         \x20   }}"
    );
    Ok(s)
}

/// `PMPI_X`, traced as `MPI_X`.
fn pmpi_alias(f: &FuncModel, hand_written: bool) -> String {
    let name = &f.name;
    let decl: Vec<String> = f
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ctype.rust()))
        .collect();
    let args: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    let conversion = is_conversion(name);
    let target = if conversion {
        format!("crate::pmpi::{name}()")
    } else if hand_written {
        format!("crate::special::{name}")
    } else {
        name.clone()
    };
    let doc = if conversion {
        "as the Fortran bindings call it: the real one, not recorded".to_string()
    } else {
        format!("as MPICH's Fortran bindings call it: traced as `{name}`")
    };
    let mut s = String::new();
    let _ = writeln!(s, "\n/// `P{name}`, {doc}.");
    if f.params.len() > 7 {
        s.push_str("#[allow(clippy::too_many_arguments)]\n");
    }
    let _ = writeln!(
        s,
        "#[unsafe(no_mangle)]\npub unsafe extern \"C\" fn P{name}({}) -> {} {{ unsafe {{ {target}({}) }} }}",
        decl.join(", "),
        rust_base(&f.ret),
        args.join(", ")
    );
    s
}

/// What one wrapper's body is assembled from.
struct Body<'a> {
    f: &'a FuncModel,
    /// `let x_before = ...;` statements, run before the real call.
    before: Vec<String>,
    /// Statements of the encoding closure.
    encode: Vec<String>,
    needs_unsafe: bool,
}

impl Scope for Body<'_> {
    fn is_value(&self, name: &str) -> bool {
        self.f.param(name).is_some_and(|p| p.ctype.depth() == 0)
    }

    fn is_param(&self, name: &str) -> bool {
        self.f.param(name).is_some()
    }

    fn before(&mut self, name: &str) -> String {
        self.bind_before(name, "0")
    }

    fn root(&self) -> Result<String> {
        let comms = self.f.comms();
        match (self.f.param("root"), comms.as_slice()) {
            (Some(_), [comm]) => Ok(format!("e.is_root(root, {comm})")),
            _ => bail!("`root` needs a root parameter and one communicator"),
        }
    }
}

impl Body<'_> {
    /// Reads the handle `*name` (of handle type `slot`; its null handle
    /// for NULL) before the call, once.
    fn bind_handle_before(&mut self, name: &str, slot: &str) -> String {
        self.bind(name, &format!("handle_or_null({slot}, {name}.cast())"))
    }

    /// Reads `*name` (or `default` for NULL) before the call, once.
    fn bind_before(&mut self, name: &str, default: &str) -> String {
        self.bind(name, &format!("read_or({name}, {default})"))
    }

    /// `let {name}_before = unsafe { read };` before the call, once.
    fn bind(&mut self, name: &str, read: &str) -> String {
        let var = format!("{name}_before");
        let stmt = format!("let {var} = unsafe {{ {read} }};");
        if !self
            .before
            .iter()
            .any(|s| s.starts_with(&format!("let {var} ")))
        {
            self.before.push(stmt);
        }
        var
    }
}

fn wrapper(f: &FuncModel) -> Result<String> {
    let mut b = Body {
        f,
        before: Vec::new(),
        encode: Vec::new(),
        needs_unsafe: false,
    };
    for (i, p) in f.params.iter().enumerate() {
        if p.action == Action::Out(Out::NewRequest) && i + 1 != f.params.len() {
            bail!(
                "{}: a created request must be the last parameter encoded (requests are pooled by the signature before them)",
                p.name
            );
        }
        encode(&mut b, p).with_context(|| p.name.clone())?;
    }
    let name = &f.name;
    let args: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    let args = args.join(", ");
    let decl: Vec<String> = f
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ctype.rust()))
        .collect();
    let ret = rust_base(&f.ret);
    let code = if f.ret == "int" { "ret" } else { "MPI_SUCCESS" };
    let mut s = String::new();
    if is_conversion(name) {
        s.push_str(&conversion_stubs(f, &decl, &args)?);
    } else {
        let _ = writeln!(s, "\n/// Traces `{name}`.");
        if f.params.len() > 7 {
            s.push_str("#[allow(clippy::too_many_arguments)]\n");
        }
        let _ = writeln!(
            s,
            "#[unsafe(no_mangle)]\npub unsafe extern \"C\" fn {name}({}) -> {ret} {{",
            decl.join(", ")
        );
    }
    let agreement = agreement(f);
    if OwnRanks::of(f).is_some() && !matches!(agreement, Some(Agreement::Blocking { .. })) {
        bail!("arguments that are often the caller's rank, in a call that creates no communicator");
    }
    let key = crate::emit_keys::key(f).filter(|_| agreement.is_none());
    // A keyed call whose inputs need no read before the call has a fast
    // path of its own, which holds the arguments across no call: the rest
    // is a function of its own, called with them where they were given.
    let fast = key.as_ref().filter(|_| b.before.is_empty());
    if let Some(key) = fast {
        s.push_str(
            "    /// All but the call memo's fast path.\n    #[cold]\n    #[inline(never)]\n",
        );
        if f.params.len() > 7 {
            s.push_str("    #[allow(clippy::too_many_arguments)]\n");
        }
        let _ = writeln!(
            s,
            "    unsafe extern \"C\" fn in_full({}) -> {ret} {{",
            decl.join(", ")
        );
        let _ = writeln!(s, "    let real = crate::pmpi::{name}();");
        let _ = writeln!(
            s,
            "    let Some(call) = Call::enter(func::{name}) else {{ return unsafe {{ real({args}) }}; }};"
        );
        let closures = keyed_call(&b, key, f);
        let _ = writeln!(
            s,
            "    call.keyed(func::{name}, {}, {closures})\n}}",
            key.inputs_closure()
        );
        // The wrapper asks first whether the call may take the fast path, so
        // that one that may not (every call at MPI_THREAD_MULTIPLE) jumps to
        // `in_full` before any register is saved for the fast path. That is
        // a function of its own where all arguments are in registers (up to
        // six); with more, one is on the stack, a call passing it on cannot
        // be a jump, and the fast path is inlined into the wrapper instead.
        let inline = if f.params.len() > 6 {
            "always"
        } else {
            "never"
        };
        let _ = writeln!(
            s,
            "    /// The call memo's fast path.\n    #[inline({inline})]"
        );
        if f.params.len() > 7 {
            s.push_str("    #[allow(clippy::too_many_arguments)]\n");
        }
        let _ = writeln!(
            s,
            "    unsafe extern \"C\" fn fast_path({}) -> {ret} {{",
            decl.join(", ")
        );
        let _ = writeln!(s, "    let real = crate::pmpi::{name}();");
        let _ = writeln!(
            s,
            "    let Some(call) = Call::recalling(func::{name}, {}, {}) else {{ return unsafe {{ in_full({args}) }}; }};",
            key.inputs_closure(),
            key.narrow_array()
        );
        let _ = writeln!(s, "    call.recalled(func::{name}, {closures})\n}}");
        let _ = writeln!(
            s,
            "    if Call::may_recall() {{ unsafe {{ fast_path({args}) }} }} else {{ unsafe {{ in_full({args}) }} }}\n}}"
        );
        return Ok(s);
    }
    let _ = writeln!(s, "    let real = crate::pmpi::{name}();");
    // With a key, the call is compared with the memo's before MPI runs it
    // (its input words), and the clock starts after that.
    let begin = if key.is_some() { "enter" } else { "begin" };
    match &agreement {
        None => {
            let _ = writeln!(
                s,
                "    let Some(call) = Call::{begin}(func::{name}) else {{ return unsafe {{ real({args}) }}; }};"
            );
        }
        Some(a) => {
            let _ = writeln!(
                s,
                "    let Some(call) = Call::begin(func::{name}) else {{\n        let ret = unsafe {{ real({args}) }};\n        unsafe {{ {} }};\n        return ret;\n    }};",
                a.unrecorded()
            );
        }
    }
    for stmt in &b.before {
        let _ = writeln!(s, "    {stmt}");
    }
    let closure_arg = if b.encode.is_empty() { "_" } else { "e" };
    let unsafe_kw = if b.needs_unsafe { "unsafe " } else { "" };
    if let Some(key) = &key {
        let closures = keyed_call(&b, key, f);
        let _ = writeln!(
            s,
            "    call.keyed(func::{name}, {}, {closures})\n}}",
            key.inputs_closure()
        );
        return Ok(s);
    }
    let _ = writeln!(s, "    let ret = unsafe {{ real({args}) }};");
    let end = match &agreement {
        Some(a) => {
            let _ = writeln!(s, "    let end = crate::clock::now();");
            let _ = writeln!(s, "    {}", a.recorded());
            "end_at(end, "
        }
        None => "end(",
    };
    let _ = writeln!(
        s,
        "    call.{end}func::{name}, {code}, |{closure_arg}| {unsafe_kw}{{"
    );
    for stmt in &b.encode {
        let _ = writeln!(s, "        {stmt}");
    }
    s.push_str("    });\n    ret\n}\n");
    Ok(s)
}

/// The closures a keyed wrapper passes after its input words: the MPI
/// call, its return code, its output words and its encoding (as
/// `Call::recalled` takes them, and the same after the inputs'
/// closure for `Call::keyed`). The encoding runs only when the memo misses:
/// a `move` closure holds the values it needs, which cost less to set up
/// on every call than a pointer to each.
fn keyed_call(b: &Body, key: &crate::emit_keys::Key, f: &FuncModel) -> String {
    let args: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    let args = args.join(", ");
    let code = if f.ret == "int" {
        "|&ret| ret"
    } else {
        "|_| MPI_SUCCESS"
    };
    let closure_arg = if b.encode.is_empty() { "_" } else { "e" };
    let unsafe_kw = if b.needs_unsafe { "unsafe " } else { "" };
    let (head, from_words) = key.encode_head(closure_arg);
    let mut encode = format!("move |{head}| {unsafe_kw}{{\n");
    if !from_words.is_empty() {
        encode.push_str(&format!("        {from_words}\n"));
    }
    for stmt in &b.encode {
        encode.push_str(&format!("        {stmt}\n"));
    }
    encode.push_str("    }");
    format!(
        "move || unsafe {{ real({args}) }}, {code}, {}, {encode}",
        key.outputs_closure()
    )
}

/// How the members of a communicator a function creates agree on its id
/// (`crate::agree` in the tracer).
enum Agreement {
    /// A blocking call: over the new communicator, before recording; first,
    /// if the call has arguments that are often the caller's rank
    /// (`Scalar::OwnRank`, all in one communicator), whether each is on
    /// every rank of that communicator.
    Blocking {
        newcomm: String,
        own_ranks: Option<OwnRanks>,
    },
    /// MPI_Comm_idup: started over the parent, finished at completion.
    Idup { parent: String, newcomm: String },
}

/// Communicators whose other side may be a process without the tracer:
/// not agreed (it would never join the exchange).
const NOT_AGREED: &[&str] = &[
    "MPI_Comm_accept",
    "MPI_Comm_connect",
    "MPI_Comm_join",
    "MPI_Comm_spawn",
    "MPI_Comm_spawn_multiple",
];

fn agreement(f: &FuncModel) -> Option<Agreement> {
    if NOT_AGREED.contains(&f.name.as_str()) {
        return None;
    }
    let name = |a: &Action| {
        f.params
            .iter()
            .find(|p| p.action == *a)
            .map(|p| p.name.clone())
    };
    if let Some(newcomm) = name(&Action::Out(Out::NewHandle("Comm"))) {
        return Some(Agreement::Blocking {
            newcomm,
            own_ranks: OwnRanks::of(f),
        });
    }
    let newcomm = name(&Action::Out(Out::PendingComm))?;
    let parent = name(&Action::Value(Scalar::Handle("Comm")))?;
    Some(Agreement::Idup { parent, newcomm })
}

/// The arguments of a call that are often the caller's rank in its one
/// communicator `comm` (MPI_Comm_split's colour and key).
struct OwnRanks {
    comm: String,
    /// Parameter names.
    names: Vec<String>,
    /// Their values as the encoder takes them (i64 expressions).
    values: Vec<String>,
}

impl OwnRanks {
    fn of(f: &FuncModel) -> Option<OwnRanks> {
        let mut own: Option<OwnRanks> = None;
        for p in &f.params {
            if let Action::Value(Scalar::OwnRank { comm, .. }) = &p.action {
                let o = own.get_or_insert_with(|| OwnRanks {
                    comm: comm.clone(),
                    names: Vec::new(),
                    values: Vec::new(),
                });
                o.names.push(p.name.clone());
                o.values.push(int_value(&p.name, &p.ctype));
            }
        }
        own
    }

    /// `[v1, v2]`: the values as the agreement takes them.
    fn array(&self) -> String {
        format!("[{}]", self.values.join(", "))
    }
}

impl Agreement {
    /// Statement run when the call is not recorded.
    fn unrecorded(&self) -> String {
        match self {
            Agreement::Blocking {
                newcomm,
                own_ranks: None,
            } => {
                format!("crate::agree::unrecorded(ret, {newcomm})")
            }
            Agreement::Blocking {
                newcomm,
                own_ranks: Some(o),
            } => format!(
                "crate::agree::unrecorded_own_ranks(ret, {}, {}); crate::agree::unrecorded(ret, {newcomm})",
                o.comm,
                o.array()
            ),
            Agreement::Idup { parent, newcomm } => {
                format!("crate::agree::start_unrecorded(ret, {parent}, {newcomm})")
            }
        }
    }

    /// Statement run after the call, before recording it.
    fn recorded(&self) -> String {
        match self {
            Agreement::Blocking { newcomm, own_ranks } => {
                let own = own_ranks.as_ref().map_or(String::new(), |o| {
                    let names: Vec<String> = o.names.iter().map(|n| format!("{n}_own")).collect();
                    format!(
                        "let [{}] = unsafe {{ crate::agree::own_ranks(ret, {}, {}) }};\n    ",
                        names.join(", "),
                        o.comm,
                        o.array()
                    )
                });
                format!("{own}let agreed = unsafe {{ crate::agree::created(ret, {newcomm}) }};")
            }
            Agreement::Idup { parent, newcomm } => {
                format!("unsafe {{ crate::agree::start(ret, {parent}, {newcomm}) }};")
            }
        }
    }
}

/// Null value a handle read before the call defaults to (NULL pointer).
fn encode(b: &mut Body<'_>, p: &ParamModel) -> Result<()> {
    let n = p.name.as_str();
    let stmt = match &p.action {
        Action::Value(s) => scalar(s, n, &p.ctype),
        Action::Before(s) => {
            let var = match s {
                Scalar::Handle(k) => b.bind_handle_before(n, &format!("HandleKind::{k} as usize")),
                Scalar::Request => b.bind_handle_before(n, "REQUEST"),
                _ => b.bind_before(n, "0"),
            };
            scalar(s, &var, &p.ctype)
        }
        Action::Free(k) => {
            b.bind_handle_before(n, &format!("HandleKind::{k} as usize"));
            if *k == "Comm" {
                format!("e.free_comm({n}_before);")
            } else {
                format!("e.free_handle(HandleKind::{k}, {n}_before);")
            }
        }
        Action::Out(Out::NewHandle("Comm")) => {
            b.needs_unsafe = true;
            let agreed = if agreement(b.f).is_some() {
                "agreed"
            } else {
                "None"
            };
            format!("e.new_comm_out({n}, {agreed});")
        }
        Action::Out(o) => {
            b.needs_unsafe = true;
            out(o, n, &p.ctype)
        }
        Action::Str { when: None } => {
            b.needs_unsafe = true;
            format!("e.string({n});")
        }
        Action::Str { when: Some(w) } => {
            b.needs_unsafe = true;
            let cond = lenexpr::when_rust(w, b)?;
            b.encode.push(format!("let {n}_significant = {cond};"));
            format!("e.string(if {n}_significant {{ {n} }} else {{ std::ptr::null() }});")
        }
        Action::StrOut { cap, when } => {
            b.needs_unsafe = true;
            let cap = cap
                .as_ref()
                .context("string output without a capacity (overrides: len)")?;
            let cap = lenexpr::len_rust(cap, b)?;
            b.encode.push(format!("let {n}_cap = {cap};"));
            match when {
                Some(w) => {
                    let cond = lenexpr::when_rust(w, b)?;
                    b.encode.push(format!("let {n}_significant = {cond};"));
                    format!("string_out(e, {n}, {n}_cap, {n}_significant);")
                }
                None => format!("string_out(e, {n}, {n}_cap, true);"),
            }
        }
        Action::Array {
            elem,
            len,
            when,
            out,
            weights,
        } => {
            b.needs_unsafe = true;
            let len = len
                .as_ref()
                .context("array without a length (overrides: len)")?;
            let mut len = lenexpr::len_rust(len, b)?;
            if *weights {
                len = format!("weights_len({n}, {len})");
            }
            let mut conds = Vec::new();
            if *out {
                conds.push("e.ok()".to_owned());
            }
            if let Some(w) = when {
                conds.push(lenexpr::when_rust(w, b)?);
            }
            let len = if conds.is_empty() {
                len
            } else {
                format!("if {} {{ {len} }} else {{ None }}", conds.join(" && "))
            };
            b.encode.push(format!("let {n}_len = {len};"));
            match handle_slot(elem) {
                Some(slot) => format!(
                    "handles(e, {slot}, {n}, {n}_len, |e, v| {});",
                    element(elem, &p.ctype)?
                ),
                None => format!(
                    "array(e, {n}, {n}_len, |e, v| {});",
                    element(elem, &p.ctype)?
                ),
            }
        }
        Action::Coords { comm, len } => {
            b.needs_unsafe = true;
            let len = len
                .as_ref()
                .context("coordinates without a length (overrides: len)")?;
            let len = lenexpr::len_rust(len, b)?;
            b.encode.push(format!(
                "let {n}_len = if e.ok() {{ {len} }} else {{ None }};"
            ));
            format!("e.coords_out({n}, {n}_len, {comm});")
        }
        Action::Varargs => bail!("varargs reached the encoder"),
    };
    b.encode.push(stmt);
    Ok(())
}

/// The handle type of an array's elements, if they are handles.
fn handle_slot(elem: &Elem) -> Option<String> {
    match elem {
        Elem::Scalar(Scalar::Handle(k)) | Elem::NewHandle(k) | Elem::Lookup(k) => {
            Some(format!("HandleKind::{k} as usize"))
        }
        Elem::Scalar(Scalar::Request) => Some("REQUEST".into()),
        _ => None,
    }
}

/// A number `x` in hand (of C type `ct`) as the encoder takes it, an i64.
pub fn int_value(x: &str, ct: &CType) -> String {
    if ct.is_wide() {
        x.to_owned()
    } else {
        format!("i64::from({x})")
    }
}

/// Rust recording a value `x` in hand (of C type `ct`).
fn scalar(s: &Scalar, x: &str, ct: &CType) -> String {
    let int = int_value(x, ct);
    match s {
        Scalar::Int => format!("e.int({int});"),
        Scalar::Address => format!("e.address({int});"),
        Scalar::Tag => format!("e.tag({int});"),
        Scalar::Const(set) => format!("e.constant(ConstSet::{set}, {int});"),
        Scalar::Rank(c) => format!("e.rank({int}, {c});"),
        Scalar::Root => format!("e.root({int});"),
        Scalar::WinRank(w) => format!("win_rank(e, {int}, {w});"),
        Scalar::OwnRank { comm, inner } => match &**inner {
            Scalar::Const(set) => {
                format!("e.own_rank_constant(ConstSet::{set}, {int}, {comm}, {x}_own);")
            }
            _ => format!("e.own_rank_int({int}, {comm}, {x}_own);"),
        },
        Scalar::Handle(k) if ct.base == "int" => {
            format!("e.handle(HandleKind::{k}, Handle::from({x}));")
        }
        Scalar::Handle(k) => format!("e.handle(HandleKind::{k}, {x});"),
        Scalar::Request => format!("e.request({x});"),
        Scalar::Callback => format!("e.callback({x});"),
        Scalar::Location => format!("e.buffer(std::ptr::without_provenance({x} as usize));"),
        Scalar::Buffer => match ct.rust().as_str() {
            "*const c_void" | "*mut c_void" => format!("e.buffer({x});"),
            t if t.starts_with("*mut") && !t.ends_with("c_void") => {
                format!("e.buffer({x}.cast_const().cast());")
            }
            _ => format!("e.buffer({x}.cast());"),
        },
    }
}

/// Rust recording an output behind pointer `p`.
fn out(o: &Out, p: &str, ct: &CType) -> String {
    match o {
        Out::Number { method, .. } if *method != "int_out" || ct.base == "int" => {
            format!("e.{method}({p});")
        }
        Out::Location => format!("location_out(e, {p});"),
        Out::Const(set) if ct.base == "int" => format!("e.constant_out(ConstSet::{set}, {p});"),
        Out::Const(set) => format!("e.constant_out(ConstSet::{set}, {p}.cast_const().cast());"),
        Out::Tag if ct.base == "int" => format!("e.int_out({p});"),
        Out::Number { .. } | Out::Tag => format!("e.int_out({p}.cast_const().cast());"),
        Out::Rank(c) => format!("e.rank_out({p}, {c});"),
        Out::NewHandle(k) => format!("e.new_handle_out(HandleKind::{k}, {p}.cast());"),
        Out::Lookup(k) => format!("lookup_out(e, HandleKind::{k}, {p}.cast());"),
        Out::NewRequest => format!("e.new_request({p});"),
        Out::Status(Some(c)) => format!("e.status({p}, Some({c}));"),
        Out::Status(None) => format!("e.status({p}, None);"),
        Out::BufferOut => format!("buffer_out(e, {p}.cast_const().cast());"),
        Out::PendingComm => format!("e.new_comm_pending({p});"),
    }
}

/// The closure body recording one array element `v`.
fn element(elem: &Elem, ct: &CType) -> Result<String> {
    let no_array = ct.array == crate::ctype::Array::No;
    let stars = if no_array {
        ct.stars.saturating_sub(1)
    } else {
        ct.stars
    };
    let elem_ct = CType {
        stars,
        array: crate::ctype::Array::No,
        ..ct.clone()
    };
    Ok(match elem {
        Elem::Scalar(s) => scalar(s, "v", &elem_ct).trim_end_matches(';').to_owned(),
        Elem::NewHandle(k) => format!("e.new_handle(HandleKind::{k}, v)"),
        Elem::Lookup(k) => format!("e.handle(HandleKind::{k}, v)"),
        Elem::Str => "e.string(v)".into(),
        Elem::StrList => "array(e, v, nul_terminated_len(v), |e, s| e.string(s))".into(),
        Elem::Row(n) => {
            format!("{{ e.array_len(Some({n})); for x in v {{ e.int(i64::from(x)); }} }}")
        }
        Elem::Status => bail!("arrays of statuses are recorded by hand-written wrappers"),
    })
}

const HELPERS: &str = r#"// --- Helpers of the generated wrappers ---

/// `*p`, or `default` for NULL.
///
/// # Safety
/// `p` is NULL or valid for reads.
unsafe fn read_or<T: Copy>(p: *const T, default: T) -> T {
    if p.is_null() { default } else { unsafe { p.read_unaligned() } }
}

/// A C count as a length; `None` if negative.
fn count_of<T: TryInto<usize>>(v: T) -> Option<usize> {
    v.try_into().ok()
}

fn min_of(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    Some(a?.min(b?))
}

/// Records the `n` elements of the C array `p` with `each`; the array is
/// "not recorded" when `n` is `None` or `p` is NULL.
///
/// # Safety
/// `p` is NULL or valid for `n` reads.
unsafe fn array<T: Copy>(
    e: &mut Encoder<'_>,
    p: *const T,
    n: Option<usize>,
    mut each: impl FnMut(&mut Encoder<'_>, T),
) {
    let n = n.filter(|_| !p.is_null());
    e.array_len(n);
    for i in 0..n.unwrap_or(0) {
        // SAFETY: i < n, per the caller.
        each(e, unsafe { p.add(i).read_unaligned() });
    }
}

/// Entries of a NULL-terminated `char *[]` (argv); `None` for NULL (MPI_ARGV_NULL).
///
/// # Safety
/// `argv` is NULL or a NULL-terminated array.
unsafe fn nul_terminated_len(argv: *const *mut c_char) -> Option<usize> {
    if argv.is_null() {
        return None;
    }
    let mut n = 0;
    // SAFETY: the array is NULL-terminated, per the caller.
    while !unsafe { argv.add(n).read_unaligned() }.is_null() {
        n += 1;
    }
    Some(n)
}

/// Sum of the first `n` elements of `p` (MPI_Dist_graph_create's degrees).
///
/// # Safety
/// `p` is NULL or valid for `n` reads.
unsafe fn sum_of(p: *const c_int, n: Option<usize>) -> Option<usize> {
    if p.is_null() {
        return None;
    }
    let mut total = 0usize;
    for i in 0..n? {
        // SAFETY: i < n, per the caller.
        total = total.checked_add(count_of(unsafe { p.add(i).read_unaligned() })?)?;
    }
    Some(total)
}

/// `p[n - 1]` (0 when n is 0): MPI_Graph_create's edge count.
///
/// # Safety
/// `p` is NULL or valid for `n` reads.
unsafe fn last_of(p: *const c_int, n: Option<usize>) -> Option<usize> {
    match n? {
        0 => Some(0),
        // SAFETY: n - 1 < n, per the caller.
        n if !p.is_null() => count_of(unsafe { p.add(n - 1).read_unaligned() }),
        _ => None,
    }
}

fn is_in_place(p: *const c_void) -> bool {
    p as usize == front().in_place
}

/// Records the `n` handles of type `slot` of the C array `p` with `each`;
/// not recorded when `n` is `None` or `p` is NULL.
///
/// # Safety
/// `p` is NULL or valid for `n` handles.
unsafe fn handles(
    e: &mut Encoder<'_>,
    slot: usize,
    p: *const impl Sized,
    n: Option<usize>,
    mut each: impl FnMut(&mut Encoder<'_>, Handle),
) {
    let n = n.filter(|_| !p.is_null());
    e.array_len(n);
    for i in 0..n.unwrap_or(0) {
        // SAFETY: i < n, per the caller.
        each(e, Handle(unsafe { front().read(slot, p.cast(), i) } as usize));
    }
}

/// The handle of type `slot` at `p` (before the call), or the null
/// handle of its type for NULL.
///
/// # Safety
/// `p` is NULL or valid for reads.
unsafe fn handle_or_null(slot: usize, p: *const HandleSlot) -> Handle {
    let f = front();
    let v = if p.is_null() {
        if slot == REQUEST { f.request_null() } else { f.null(HandleKind::ALL[slot]) }
    } else {
        unsafe { f.read(slot, p, 0) }
    };
    Handle(v as usize)
}

/// Size of the group an array argument of a collective is indexed by:
/// the communicator's, or the remote group's for an inter-communicator.
fn group_peers(e: &mut Encoder<'_>, comm: MPI_Comm) -> usize {
    if e.is_inter(comm) { e.comm_remote_size(comm) } else { e.comm_size(comm) }
}

/// Length of a weights array: `None` for MPI_UNWEIGHTED, 0 for MPI_WEIGHTS_EMPTY.
fn weights_len<T>(p: *const T, n: Option<usize>) -> Option<usize> {
    let p = p.cast::<c_int>();
    if p as usize == front().unweighted {
        None
    } else if p as usize == front().weights_empty {
        Some(0)
    } else {
        n
    }
}

/// In- and out-degree of `comm`'s process topology (for neighbourhood
/// collectives), asked through PMPI once the call has proved `comm` valid.
fn topo_degrees(e: &Encoder<'_>, comm: MPI_Comm) -> Option<(usize, usize)> {
    if !e.ok() {
        return None;
    }
    let (mut kind, mut a, mut b, mut c) = (0, 0, 0, 0);
    // SAFETY: PMPI queries on a valid communicator, writing to locals.
    unsafe {
        if crate::pmpi::MPI_Topo_test()(comm, &mut kind) != MPI_SUCCESS {
            return None;
        }
        let ok = match kind {
            k if k == front().ints.MPI_CART => {
                let ok = crate::pmpi::MPI_Cartdim_get()(comm, &mut a) == MPI_SUCCESS;
                a *= 2;
                b = a;
                ok
            }
            k if k == front().ints.MPI_GRAPH => {
                crate::pmpi::MPI_Comm_rank()(comm, &mut c) == MPI_SUCCESS
                    && crate::pmpi::MPI_Graph_neighbors_count()(comm, c, &mut a) == MPI_SUCCESS
                    && {
                        b = a;
                        true
                    }
            }
            k if k == front().ints.MPI_DIST_GRAPH => crate::pmpi::MPI_Dist_graph_neighbors_count()(comm, &mut a, &mut b, &mut c) == MPI_SUCCESS,
            _ => false,
        };
        if ok { Some((count_of(a)?, count_of(b)?)) } else { None }
    }
}

/// Dimensions of a Cartesian communicator, asked through PMPI once the
/// call has proved `comm` valid.
fn cart_ndims(e: &Encoder<'_>, comm: MPI_Comm) -> Option<usize> {
    let mut n = 0;
    // SAFETY: a PMPI query on a valid communicator, writing to a local.
    let ok = e.ok() && unsafe { crate::pmpi::MPI_Cartdim_get()(comm, &mut n) } == MPI_SUCCESS;
    if ok { count_of(n) } else { None }
}

/// An output handle that names an existing object (no new id).
///
/// # Safety
/// `p` is NULL or valid for reads when the call succeeded.
unsafe fn lookup_out(e: &mut Encoder<'_>, kind: HandleKind, p: *const HandleSlot) {
    let h = if e.ok() && !p.is_null() {
        unsafe { front().read(kind as usize, p, 0) }
    } else {
        front().null(kind)
    };
    e.handle_value(kind, h);
}

/// The pointer a call wrote through a `void **` (MPI_Alloc_mem's baseptr).
///
/// # Safety
/// `p` is NULL or valid for reads when the call succeeded.
unsafe fn buffer_out(e: &mut Encoder<'_>, p: *const *mut c_void) {
    let b = unsafe { e.read(p) }.unwrap_or(std::ptr::null_mut());
    e.buffer(b);
}

/// A string the call wrote into a buffer of `cap` bytes (NULL if the call
/// failed, the buffer is NULL, or the string is not significant).
///
/// # Safety
/// `p` is NULL or valid for `cap` reads.
unsafe fn string_out(e: &mut Encoder<'_>, p: *const c_char, cap: Option<usize>, significant: bool) {
    match cap {
        Some(cap) if e.ok() && significant && !p.is_null() => unsafe { e.string_n(p, cap) },
        _ => unsafe { e.string(std::ptr::null()) },
    }
}

/// A memory address the call wrote into an MPI_Aint (MPI_Get_address),
/// recorded like a buffer.
///
/// # Safety
/// `p` is NULL or valid for reads when the call succeeded.
unsafe fn location_out(e: &mut Encoder<'_>, p: *const MPI_Aint) {
    let a = unsafe { e.read(p) }.unwrap_or(0);
    e.buffer(std::ptr::without_provenance(a as usize));
}

/// The MPICH topology queries the array lengths of topology calls need,
/// asked through PMPI once the call has proved `comm` valid: the number
/// of neighbours of `rank` in a graph topology.
fn graph_neighbors(e: &Encoder<'_>, comm: MPI_Comm, rank: c_int) -> Option<usize> {
    let mut n = 0;
    // SAFETY: a PMPI query on a valid communicator, writing to a local.
    let ok = e.ok() && unsafe { crate::pmpi::MPI_Graph_neighbors_count()(comm, rank, &mut n) } == MPI_SUCCESS;
    if ok { count_of(n) } else { None }
}

/// Nodes and edges of a graph topology.
fn graph_dims(e: &Encoder<'_>, comm: MPI_Comm) -> Option<(usize, usize)> {
    let (mut nodes, mut edges) = (0, 0);
    // SAFETY: a PMPI query on a valid communicator, writing to locals.
    let ok = e.ok() && unsafe { crate::pmpi::MPI_Graphdims_get()(comm, &mut nodes, &mut edges) } == MPI_SUCCESS;
    if ok { Some((count_of(nodes)?, count_of(edges)?)) } else { None }
}

/// How many integers, addresses, large counts and datatypes describe
/// `datatype` (MPI_Type_get_envelope_c, or MPI_Type_get_envelope in an MPI
/// without large counts), once the call has proved it valid.
fn type_envelope(e: &Encoder<'_>, datatype: MPI_Datatype) -> Option<[usize; 4]> {
    let (mut i, mut a, mut c, mut d, mut combiner) = (0, 0, 0, 0, 0);
    // SAFETY: PMPI queries on a valid datatype, writing to locals.
    let ok = e.ok()
        && unsafe {
            if front().large_counts {
                crate::pmpi::MPI_Type_get_envelope_c()(datatype, &mut i, &mut a, &mut c, &mut d, &mut combiner)
            } else {
                let (mut ni, mut na, mut nd) = (0, 0, 0);
                let ret = crate::pmpi::MPI_Type_get_envelope()(datatype, &mut ni, &mut na, &mut nd, &mut combiner);
                (i, a, d) = (ni.into(), na.into(), nd.into());
                ret
            }
        } == MPI_SUCCESS;
    if ok { Some([count_of(i)?, count_of(a)?, count_of(c)?, count_of(d)?]) } else { None }
}

/// A rank in `win`'s group, relative to the caller's rank in it.
fn win_rank(e: &mut Encoder<'_>, rank: i64, win: MPI_Win) {
    e.win_rank(rank, win);
}

// --- Wrappers ---
"#;

#[cfg(test)]
mod conversion_tests {
    use super::is_conversion;

    #[test]
    fn conversions_are_told_by_their_names() {
        for name in [
            "MPI_Status_c2f",
            "MPI_Status_f082c",
            "MPI_File_f2c",
            "MPI_Type_fromint",
            "MPI_Comm_toint",
        ] {
            assert!(is_conversion(name), "{name}");
        }
        for name in [
            "MPI_Comm_create_from_group",
            "MPI_Status_set_cancelled",
            "MPI_Info_f",
        ] {
            assert!(!is_conversion(name), "{name}");
        }
    }
}

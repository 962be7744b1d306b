//! The small expression language of the overrides' `len` and `when`
//! fields, and its translation to the Rust the wrappers run.
//!
//! The Rust is evaluated inside the wrapper's `unsafe` encoding closure.
//!
//! `len` (an array length or string capacity, `Option<usize>` in Rust):
//! - `n` (a by-value parameter), `MPI_MAX_OBJECT_NAME` (a constant), `3`
//! - `x + 1`
//! - `peers(comm)`: size of the group the array is indexed by: the comm's
//!   size, its remote size for an inter-communicator
//! - `size(comm)`: local group size; `indegree(comm)`, `outdegree(comm)`:
//!   neighbour counts of the comm's topology; `cart_ndims(comm)`
//! - `graph_neighbors(comm, rank)`, `graph_nnodes(comm)`, `graph_nedges(comm)`:
//!   sizes of a graph topology; `envelope(datatype, k)`: the k-th count of
//!   MPI_Type_get_envelope (0 integers, 1 addresses, 2 large counts, 3 datatypes)
//! - `sum(a, n)`: sum of the first n elements of int array a;
//!   `last(a, n)`: its n-th element (a[n-1])
//! - `before(p)`, `after(p)`: value behind pointer p before/after the call
//! - `min(x, y)`; `nul_terminated(p)`: entries of a NULL-terminated array
//!
//! `when` (a condition, `&&`-joined): `root` (the caller is the root),
//! `not_in_place(p)` (p is not MPI_IN_PLACE), `flag(p)` (the int p points
//! to is non-zero after the call).

use anyhow::{Result, bail};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Int(u64),
    Name(String),
    Call(String, Vec<Expr>),
    Plus(Box<Expr>, u64),
}

/// What the translation needs to know about the function's parameters.
pub trait Scope {
    /// A parameter passed by value (integer).
    fn is_value(&self, name: &str) -> bool;
    /// Any parameter.
    fn is_param(&self, name: &str) -> bool;
    /// The name of the variable holding `name`'s value before the call
    /// (the caller then reads it before calling MPI).
    fn before(&mut self, name: &str) -> String;
    /// Rust for "the caller is the root".
    fn root(&self) -> Result<String>;
}

pub fn parse(s: &str) -> Result<Expr> {
    let tokens = tokenize(s)?;
    let mut p = Parser {
        tokens: &tokens,
        at: 0,
    };
    let e = p.expr()?;
    if p.at != tokens.len() {
        bail!("trailing input in expression {s:?}");
    }
    Ok(e)
}

/// Rust for a length: an `Option<usize>` expression.
pub fn len_rust(e: &Expr, scope: &mut dyn Scope) -> Result<String> {
    Ok(match e {
        Expr::Int(n) => format!("Some({n})"),
        Expr::Plus(x, n) => format!("{}.map(|n| n + {n})", len_rust(x, scope)?),
        Expr::Name(n) if n.starts_with("MPI_") => format!("count_of(front().ints.{n})"),
        Expr::Name(n) if scope.is_value(n) => format!("count_of({n})"),
        Expr::Name(n) => bail!("{n} is not a by-value parameter: use before({n}) or after({n})"),
        Expr::Call(f, args) => {
            let param = |i: usize| -> Result<&str> {
                match args.get(i) {
                    Some(Expr::Name(n)) if scope.is_param(n) => Ok(n),
                    other => bail!("{f}: argument {i} must be a parameter, not {other:?}"),
                }
            };
            match (f.as_str(), args.len()) {
                ("peers", 1) => format!("Some(group_peers(e, {}))", param(0)?),
                ("size", 1) => format!("Some(e.comm_size({}))", param(0)?),
                ("indegree", 1) => format!("topo_degrees(e, {}).map(|d| d.0)", param(0)?),
                ("outdegree", 1) => format!("topo_degrees(e, {}).map(|d| d.1)", param(0)?),
                ("cart_ndims", 1) => format!("cart_ndims(e, {})", param(0)?),
                ("graph_neighbors", 2) => {
                    format!("graph_neighbors(e, {}, {})", param(0)?, param(1)?)
                }
                ("graph_nnodes", 1) => format!("graph_dims(e, {}).map(|d| d.0)", param(0)?),
                ("graph_nedges", 1) => format!("graph_dims(e, {}).map(|d| d.1)", param(0)?),
                ("envelope", 2) => match &args[1] {
                    Expr::Int(k @ 0..=3) => {
                        format!("type_envelope(e, {}).map(|n| n[{k}])", param(0)?)
                    }
                    other => bail!(
                        "envelope: the second argument is 0..=3 (integers, addresses, large counts, datatypes), not {other:?}"
                    ),
                },
                ("sum", 2) => format!("sum_of({}, {})", param(0)?, len_rust(&args[1], scope)?),
                ("last", 2) => format!("last_of({}, {})", param(0)?, len_rust(&args[1], scope)?),
                ("before", 1) => format!("count_of({})", scope.before(param(0)?)),
                ("after", 1) => format!("e.read({}.cast_const()).and_then(count_of)", param(0)?),
                ("min", 2) => format!(
                    "min_of({}, {})",
                    len_rust(&args[0], scope)?,
                    len_rust(&args[1], scope)?
                ),
                ("nul_terminated", 1) => format!("nul_terminated_len({})", param(0)?),
                _ => bail!("unknown length function {f}/{}", args.len()),
            }
        }
    })
}

/// Rust for a `when` condition: a `bool` expression.
pub fn when_rust(s: &str, scope: &mut dyn Scope) -> Result<String> {
    let mut parts = Vec::new();
    for part in s.split("&&") {
        let e = parse(part.trim())?;
        parts.push(match &e {
            Expr::Name(n) if n == "root" => scope.root()?,
            Expr::Call(f, args) if args.len() == 1 => {
                let Expr::Name(p) = &args[0] else {
                    bail!("{f}: argument must be a parameter")
                };
                if !scope.is_param(p) {
                    bail!("{f}: {p} is not a parameter");
                }
                match f.as_str() {
                    "not_in_place" => format!("!is_in_place({p}.cast())"),
                    "flag" => format!("e.read({p}.cast_const()).is_some_and(|f| f != 0)"),
                    _ => bail!("unknown condition {f}"),
                }
            }
            other => bail!("unknown condition {other:?}"),
        });
    }
    Ok(parts.join(" && "))
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Int(u64),
    Punct(char),
}

fn tokenize(s: &str) -> Result<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() {
            let mut n = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                n.push(d);
                chars.next();
            }
            out.push(Token::Int(n.parse()?));
        } else if c.is_alphabetic() || c == '_' {
            let mut n = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_alphanumeric() || **d == '_') {
                n.push(d);
                chars.next();
            }
            out.push(Token::Ident(n));
        } else if "(),+".contains(c) {
            out.push(Token::Punct(c));
            chars.next();
        } else {
            bail!("unexpected {c:?} in expression {s:?}");
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
}

impl Parser<'_> {
    fn expr(&mut self) -> Result<Expr> {
        let term = self.term()?;
        if self.eat('+') {
            match self.tokens.get(self.at) {
                Some(Token::Int(n)) => {
                    self.at += 1;
                    return Ok(Expr::Plus(Box::new(term), *n));
                }
                other => bail!("expected a number after +, found {other:?}"),
            }
        }
        Ok(term)
    }

    fn term(&mut self) -> Result<Expr> {
        let t = self.tokens.get(self.at);
        self.at += 1;
        match t {
            Some(Token::Int(n)) => Ok(Expr::Int(*n)),
            Some(Token::Ident(name)) => {
                if !self.eat('(') {
                    return Ok(Expr::Name(name.clone()));
                }
                let mut args = vec![self.expr()?];
                while self.eat(',') {
                    args.push(self.expr()?);
                }
                if !self.eat(')') {
                    bail!("expected ) after the arguments of {name}");
                }
                Ok(Expr::Call(name.clone(), args))
            }
            other => bail!("expected a name or number, found {other:?}"),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.tokens.get(self.at) == Some(&Token::Punct(c)) {
            self.at += 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Params;
    impl Scope for Params {
        fn is_value(&self, name: &str) -> bool {
            matches!(name, "n" | "count")
        }
        fn is_param(&self, name: &str) -> bool {
            matches!(name, "n" | "count" | "comm" | "degrees" | "len")
        }
        fn before(&mut self, name: &str) -> String {
            format!("{name}_before")
        }
        fn root(&self) -> Result<String> {
            Ok("e.is_root(root, comm)".into())
        }
    }

    #[test]
    fn lengths_translate_to_option_usize_expressions() {
        let rust = |s: &str| len_rust(&parse(s).unwrap(), &mut Params).unwrap();
        assert_eq!(rust("count"), "count_of(count)");
        assert_eq!(rust("n + 1"), "count_of(n).map(|n| n + 1)");
        assert_eq!(rust("peers(comm)"), "Some(group_peers(e, comm))");
        assert_eq!(rust("sum(degrees, n)"), "sum_of(degrees, count_of(n))");
        assert_eq!(rust("before(len)"), "count_of(len_before)");
        assert_eq!(
            rust("MPI_MAX_OBJECT_NAME"),
            "count_of(front().ints.MPI_MAX_OBJECT_NAME)"
        );
        assert!(len_rust(&parse("len").unwrap(), &mut Params).is_err());
        assert!(parse("peers(comm").is_err());
    }

    #[test]
    fn conditions_join_with_and() {
        assert_eq!(
            when_rust("root && not_in_place(comm)", &mut Params).unwrap(),
            "e.is_root(root, comm) && !is_in_place(comm.cast())"
        );
        assert!(when_rust("sometimes", &mut Params).is_err());
    }
}

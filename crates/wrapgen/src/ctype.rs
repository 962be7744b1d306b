//! The C type of a parameter (as the standard's ISO C binding writes it),
//! and its Rust spelling in the generated code.

use crate::kinds::{Class, KindInfo};
use crate::standard::{Dir, Length, Param};
use anyhow::{Result, bail};

/// `[const] base *...* name [array]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CType {
    /// `const` on the base type.
    pub konst: bool,
    pub base: String,
    /// Pointer stars.
    pub stars: u8,
    pub array: Array,
    /// The base is a function type (callbacks): passed as a pointer.
    pub function: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Array {
    No,
    /// `name[]`.
    Unsized,
    /// `name[][n]`.
    Rows(u32),
}

impl CType {
    /// The type the standard's C binding gives `p` (pympistandard's rules).
    pub fn of(p: &Param, info: &KindInfo, large: bool) -> CType {
        let function = info.class == Class::Callback;
        let base = if matches!(
            p.kind.as_str(),
            "FUNCTION" | "FUNCTION_SMALL" | "POLYFUNCTION"
        ) {
            p.func_type.clone()
        } else if large {
            info.c_large.unwrap_or(info.c_small).to_owned()
        } else {
            info.c_small.to_owned()
        };
        let star_string = p.kind == "STRING" && p.length == Length::Star && p.pointer != Some(true);
        let stars = if p.pointer == Some(false) {
            0
        } else if p.kind == "STRING_2DARRAY" {
            2
        } else if p.kind == "ARGUMENT_LIST" {
            3
        } else if star_string {
            0
        } else if matches!(
            info.class,
            Class::Buffer
                | Class::BufferOut
                | Class::Str
                | Class::StrArray
                | Class::Status
                | Class::FortranStatus
        ) || matches!(
            p.kind.as_str(),
            "FUNCTION" | "FUNCTION_SMALL" | "POLYFUNCTION"
        ) || ((p.dir != Dir::In || p.pointer == Some(true)) && p.length == Length::None)
        {
            1
        } else {
            0
        };
        let array = match &p.length {
            Length::Rows(_, n) => Array::Rows(*n),
            _ if p.kind == "C_BUFFER4" => Array::No,
            _ if matches!(p.kind.as_str(), "STRING_ARRAY" | "STRING_2DARRAY") || star_string => {
                Array::Unsized
            }
            Length::None => Array::No,
            _ if p.kind != "STRING" && p.pointer != Some(true) => Array::Unsized,
            _ => Array::No,
        };
        CType {
            konst: p.constant,
            base,
            stars,
            array,
            function,
        }
    }

    /// Parses an override such as `char *[]` or `const int []`.
    pub fn parse(s: &str, function: bool) -> Result<CType> {
        let konst = s.trim_start().starts_with("const ");
        let rest = s.trim_start().trim_start_matches("const ").trim();
        let base: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let tail = &rest[base.len()..];
        let stars = tail.chars().filter(|&c| c == '*').count() as u8;
        let array = if tail.contains("[]") {
            Array::Unsized
        } else {
            Array::No
        };
        if base.is_empty() || tail.chars().any(|c| !matches!(c, '*' | '[' | ']' | ' ')) {
            bail!("unreadable C type override {s:?}");
        }
        Ok(CType {
            konst,
            base,
            stars,
            array,
            function,
        })
    }

    /// Indirections in Rust: pointers plus the array (and the implicit
    /// pointer of a function type passed by value).
    pub fn depth(&self) -> u8 {
        let d = self.stars + u8::from(self.array != Array::No);
        if self.function && d == 0 { 1 } else { d }
    }

    /// The C declaration of a parameter named `name`.
    pub fn c_decl(&self, name: &str) -> String {
        let konst = if self.konst { "const " } else { "" };
        let stars = "*".repeat(usize::from(self.stars));
        let array = match self.array {
            Array::No => String::new(),
            Array::Unsized => "[]".into(),
            Array::Rows(n) => format!("[][{n}]"),
        };
        format!("{konst}{} {stars}{name}{array}", self.base)
    }

    /// The Rust type; base types are named as in C (abi.rs defines them).
    pub fn rust(&self) -> String {
        self.rust_at(self.depth())
    }

    /// The Rust type of one element of this array (or of the value behind
    /// this pointer).
    pub fn rust_elem(&self) -> String {
        self.rust_at(self.depth().saturating_sub(1))
    }

    fn rust_at(&self, depth: u8) -> String {
        // A handle in memory is 4 or 8 bytes as the bound ABI says: opaque.
        let handle = crate::mpich::HANDLE_TYPES
            .iter()
            .any(|(t, _, _)| *t != "int" && *t == self.base);
        let mut ty = if handle && depth > 0 {
            "HandleSlot".to_owned()
        } else {
            rust_base(&self.base).to_owned()
        };
        if let Array::Rows(n) = self.array {
            ty = format!("[{ty}; {n}]");
        }
        for level in 0..depth {
            let mutability = if level == 0 && self.konst {
                "const"
            } else {
                "mut"
            };
            ty = format!("*{mutability} {ty}");
        }
        ty
    }

    /// Whether this is a C scalar of 8 bytes (MPI_Aint, MPI_Offset, MPI_Count).
    pub fn is_wide(&self) -> bool {
        matches!(self.base.as_str(), "MPI_Aint" | "MPI_Offset" | "MPI_Count")
    }
}

/// The Rust name of a C base type.
pub fn rust_base(base: &str) -> &str {
    match base {
        "int" => "c_int",
        "char" => "c_char",
        "void" => "c_void",
        "double" => "f64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ct(konst: bool, base: &str, stars: u8, array: Array) -> CType {
        CType {
            konst,
            base: base.into(),
            stars,
            array,
            function: false,
        }
    }

    #[test]
    fn rust_types_follow_c_constness_and_depth() {
        assert_eq!(ct(true, "void", 1, Array::No).rust(), "*const c_void");
        assert_eq!(
            ct(false, "char", 1, Array::Unsized).rust(),
            "*mut *mut c_char"
        );
        assert_eq!(
            ct(true, "MPI_Datatype", 0, Array::Unsized).rust(),
            "*const HandleSlot"
        );
        assert_eq!(
            ct(false, "char", 2, Array::Unsized).rust(),
            "*mut *mut *mut c_char"
        );
        assert_eq!(
            ct(false, "int", 0, Array::Rows(3)).rust(),
            "*mut [c_int; 3]"
        );
        assert_eq!(
            ct(false, "int", 0, Array::Rows(3)).rust_elem(),
            "[c_int; 3]"
        );
        assert_eq!(ct(false, "MPI_Comm", 0, Array::No).rust(), "MPI_Comm");
        assert_eq!(
            ct(false, "char", 1, Array::Unsized).rust_elem(),
            "*mut c_char"
        );
    }

    #[test]
    fn c_declarations_and_overrides_round_trip() {
        let t = CType::parse("char *[]", false).unwrap();
        assert_eq!(t.c_decl("argv"), "char *argv[]");
        assert_eq!(
            ct(false, "int", 0, Array::Rows(3)).c_decl("ranges"),
            "int ranges[][3]"
        );
        assert_eq!(
            CType::parse("const int []", false).unwrap().c_decl("a"),
            "const int a[]"
        );
    }
}

//! The alphabet of a grammar: terminals, rule references, and runs of either.

/// Index of a rule in a [`Grammar`](crate::Grammar).
pub type RuleId = u32;

/// Identifier of one input stream of a grammar (in mpigram, an MPI rank).
pub type StreamId = u32;

/// Largest terminal value a grammar can hold. The top bit is reserved to tell
/// rule references from terminals inside the builder.
pub const MAX_TERMINAL: u32 = (1 << 31) - 1;

/// One symbol of a rule body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Symbol {
    /// An input value.
    Terminal(u32),
    /// A reference to another rule, which expands to that rule's body.
    Rule(RuleId),
}

/// A symbol repeated `count` times (`symbol^count`, count >= 1): the element of
/// a rule body. `B^i B^j` is always stored as `B^(i+j)`, which is what makes a
/// loop of N identical iterations cost O(1) space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Run {
    pub symbol: Symbol,
    pub count: u64,
}

impl Run {
    pub fn new(symbol: Symbol, count: u64) -> Run {
        Run { symbol, count }
    }

    pub fn terminal(value: u32) -> Run {
        Run::new(Symbol::Terminal(value), 1)
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.symbol {
            Symbol::Terminal(t) => write!(f, "{t}")?,
            Symbol::Rule(r) => write!(f, "R{r}")?,
        }
        if self.count > 1 {
            write!(f, "^{}", self.count)?;
        }
        Ok(())
    }
}

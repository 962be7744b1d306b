//! The communication matrix: point-to-point bytes and messages from each
//! world rank to each world rank, counted at the sender.

use std::collections::BTreeMap;

/// Bytes and messages of one pair of ranks (or of the unattributed ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub bytes: u64,
    pub messages: u64,
}

/// Point-to-point traffic between world ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommMatrix {
    /// Size of MPI_COMM_WORLD.
    pub ranks: u32,
    /// (sender, receiver) -> traffic; pairs that exchanged nothing are absent.
    pub pairs: BTreeMap<(u32, u32), Traffic>,
    /// Messages whose receiver's world rank cannot be told (sent on
    /// communicators other than MPI_COMM_WORLD and MPI_COMM_SELF, or on
    /// inter-communicators).
    pub unattributed: Traffic,
    /// Messages of unknown size: counted in `messages`, not in `bytes`.
    pub unknown_size_messages: u64,
}

impl CommMatrix {
    pub(crate) fn add(&mut self, from: u32, to: Option<u32>, bytes: Option<u64>, n: u64) {
        let cell = match to {
            Some(to) => self.pairs.entry((from, to)).or_default(),
            None => &mut self.unattributed,
        };
        cell.messages += n;
        match bytes {
            Some(b) => cell.bytes = cell.bytes.saturating_add(b.saturating_mul(n)),
            None => self.unknown_size_messages += n,
        }
    }

    pub fn get(&self, from: u32, to: u32) -> Traffic {
        self.pairs.get(&(from, to)).copied().unwrap_or_default()
    }

    /// Largest bytes of a pair.
    pub fn max_bytes(&self) -> u64 {
        self.pairs.values().map(|t| t.bytes).max().unwrap_or(0)
    }
}

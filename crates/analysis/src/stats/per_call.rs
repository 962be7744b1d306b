//! What each call of a rank moved, call by call, for exporters that write
//! the bytes of every event (OTF2's messages and collectives): the same
//! reckoning as the statistics ([`super::traffic`]), applied in call order
//! with what the rank's ids mean at each call.

use super::traffic::RankContext;
use super::{Signatures, StatsError};
use crate::members::Members;
use mpigram_trace::{RankPart, Trace};

/// The bytes one call sent and received; None where the trace does not
/// say (a datatype whose size is not known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallBytes {
    pub sent: Option<u64>,
    pub received: Option<u64>,
}

/// The bytes of every call of the ranks of one trace.
pub struct CallTraffic<'t> {
    trace: &'t Trace,
    members: &'t Members,
    signatures: Signatures,
}

impl<'t> CallTraffic<'t> {
    pub fn new(trace: &'t Trace, members: &'t Members) -> Result<CallTraffic<'t>, StatsError> {
        Ok(CallTraffic {
            trace,
            members,
            signatures: Signatures::decode(trace)?,
        })
    }

    /// What each call of `part` moved, in call order (calls that move no
    /// data: zero bytes).
    pub fn rank(&self, part: &RankPart) -> Vec<CallBytes> {
        let meta = &part.meta;
        let mut ctx = RankContext::new(self.members, meta.rank, meta.world_size);
        let mut next_comm = 0;
        let none = CallBytes {
            sent: Some(0),
            received: Some(0),
        };
        let calls = self.trace.grammar.expand(meta.rank).into_iter().flatten();
        let mut out = Vec::with_capacity(usize::try_from(meta.calls).unwrap_or(0));
        for (seq, t) in calls.enumerate() {
            while let Some(e) = part.comms.get(next_comm).filter(|e| e.seq <= seq as u64) {
                ctx.comms.insert(e.comm, *e);
                next_comm += 1;
            }
            let t = t as usize;
            let Some(sig) = self.signatures.sigs.get(t) else {
                out.push(CallBytes::default());
                continue;
            };
            if self.signatures.event[t] {
                ctx.types.define(sig);
                let call = self.signatures.call(t as u32);
                if let Some((key, traffic)) = ctx.persistent_request(&call) {
                    ctx.requests.insert(key, traffic);
                }
                out.push(none);
            } else if self.signatures.moves_data[t] {
                let traffic = ctx.traffic(&self.signatures.call(t as u32));
                out.push(CallBytes {
                    sent: traffic.sent,
                    received: traffic.received,
                });
            } else {
                out.push(none);
            }
        }
        out
    }
}

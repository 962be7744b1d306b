//! An mpigram trace as an OTF2 archive: a location per rank, a region per
//! MPI function, ENTER/LEAVE per call, the point-to-point messages the
//! matcher paired ([`mpigram_analysis::matching`]) as MPI_SEND/MPI_ISEND
//! (+ MPI_ISEND_COMPLETE) and MPI_RECV/MPI_IRECV (+ MPI_IRECV_REQUEST)
//! records, blocking collectives as MPI_COLLECTIVE_BEGIN/END with their
//! root and the bytes the call sent and received (the statistics'
//! reckoning, [`CallTraffic`]), non-blocking collectives and the starts of
//! persistent ones as NON_BLOCKING_COLLECTIVE_REQUEST in the call that
//! posts them and NON_BLOCKING_COLLECTIVE_COMPLETE (with what an END says)
//! in the call that completes them (OTF2 3.0), and communicators and their
//! groups as definitions. Times are nanoseconds on rank 0's clock (the trace's
//! clock alignment), from the run's start as the clock's global offset.
//!
//! Only matched messages are written, both ends, so every send record has
//! its receive; operations that matched nothing (or whose communicator is
//! an inter-communicator, or whose calls have no times) are left out.
//! Window synchronisation, neighbourhood collectives and the init calls of
//! persistent collectives have their ENTER/LEAVE only, as have collectives
//! posted or completed in calls without times.

use crate::archive::{Archive, CollectiveEnd, EventWriter, Message, Otf2Error};
use crate::regions::{Regions, collective_op};
use mpigram_analysis::decode::{DecodeError, RankDecoder};
use mpigram_analysis::export::RankTimes;
use mpigram_analysis::matching::collectives::CollectiveInstance;
use mpigram_analysis::matching::{self, Direction, Matching};
use mpigram_analysis::members::{CommId, Members};
use mpigram_analysis::stats::{CallBytes, CallTraffic, StatsError};
use mpigram_otf2_sys as sys;
use mpigram_trace::Trace;
use rustc_hash::FxHashMap;
use serde_json::Value as Json;
use std::path::Path;

/// The archive's name: `OUT/traces.otf2` is the anchor file, as Score-P names it.
pub const ARCHIVE_NAME: &str = "traces";

#[derive(Debug, thiserror::Error)]
pub enum Otf2ExportError {
    /// The trace has no per-call times (the message says which timing to use).
    #[error("{0}")]
    Times(String),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error(transparent)]
    Stats(#[from] StatsError),
    #[error(transparent)]
    Otf2(#[from] Otf2Error),
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Otf2Summary {
    pub ranks: usize,
    /// Calls written (an ENTER and a LEAVE each).
    pub calls: u64,
    /// Matched messages written (a send and a receive record each).
    pub messages: usize,
    /// Point-to-point operations that matched nothing (not written).
    pub unmatched: usize,
    /// Blocking collective calls written with MPI_COLLECTIVE_BEGIN/END.
    pub collective_calls: usize,
    /// Non-blocking (and started persistent) collective operations written
    /// with NON_BLOCKING_COLLECTIVE_REQUEST/COMPLETE.
    pub collective_requests: usize,
    /// Calls not written: the last calls of killed ranks, which have no times.
    pub untimed: u64,
    /// Events written per rank (location).
    pub events: Vec<(u32, u64)>,
}

/// A record written inside a call, besides its ENTER and LEAVE.
#[derive(Clone, Copy, Debug)]
enum Record {
    Send(Message),
    Isend(Message, u64),
    IsendComplete(u64),
    IrecvRequest(u64),
    Recv(Message),
    Irecv(Message, u64),
}

/// The communicators the records name, by instance.
struct Comms<'m> {
    members: &'m Members,
    world_size: u32,
    by_id: FxHashMap<CommId, Option<u32>>,
    /// By reference: name, and world rank at each rank (None: MPI_COMM_SELF).
    defs: Vec<(String, Option<Vec<u32>>)>,
}

impl<'m> Comms<'m> {
    /// The reference of communicator `name` as rank `rank` saw it at call
    /// `seq`, and its members; None for inter-communicators and unknown ones.
    fn resolve(&mut self, rank: u32, seq: u64, name: &str) -> Option<u32> {
        let instance = self.members.instance(rank, seq, name)?;
        if let Some(&known) = self.by_id.get(&instance.id) {
            return known;
        }
        let def = match instance.id {
            _ if instance.remote_size > 0 => None,
            CommId::World => Some((
                "MPI_COMM_WORLD".to_owned(),
                Some((0..self.world_size).collect()),
            )),
            CommId::SelfOf(_) => Some(("MPI_COMM_SELF".to_owned(), None)),
            CommId::Created { .. } => (0..instance.size)
                .map(|i| self.members.world_rank(rank, seq, name, i))
                .collect::<Option<Vec<u32>>>()
                .map(|world| {
                    // Ids are reused once freed: later instances are `comm3 #2`, ...
                    let same = self
                        .defs
                        .iter()
                        .filter(|(d, _)| d.split(' ').next() == Some(name));
                    let name = match same.count() {
                        0 => name.to_owned(),
                        n => format!("{name} #{}", n + 1),
                    };
                    (name, Some(world))
                }),
        };
        // One MPI_COMM_SELF for every rank, as OTF2 has it.
        let existing = def.as_ref().and_then(|(n, m)| {
            m.is_none()
                .then(|| self.defs.iter().position(|(d, _)| d == n))
                .flatten()
        });
        let reference = match (def, existing) {
            (_, Some(i)) => Some(i as u32),
            (Some(def), None) => {
                self.defs.push(def);
                Some(self.defs.len() as u32 - 1)
            }
            (None, None) => None,
        };
        self.by_id.insert(instance.id, reference);
        reference
    }

    /// The reference of a communicator already resolved (a persistent
    /// collective's, resolved at its init call, at its starts).
    fn known(&self, id: &CommId) -> Option<u32> {
        self.by_id.get(id).copied().flatten()
    }

    /// The rank of world rank `world` in communicator `comm`.
    fn rank_in(&self, comm: u32, world: u32) -> Option<u32> {
        match &self.defs.get(comm as usize)?.1 {
            None => Some(0),
            Some(members) => members.iter().position(|&w| w == world).map(|p| p as u32),
        }
    }
}

/// Writes the archive of `trace` into directory `dir`; `times` gives each
/// rank's call times.
pub fn export(
    trace: &Trace,
    times: &RankTimes,
    dir: &Path,
) -> Result<Otf2Summary, Otf2ExportError> {
    // An aggregated trace fails here, before the whole trace is decoded.
    if let Some(first) = trace.ranks.first() {
        times(first).map_err(Otf2ExportError::Times)?;
    }
    let members = matching::world_ranks(trace);
    let matching = matching::match_trace(trace, &members)?;
    let world_size = trace.rank_slots() as u32;
    let mut comms = Comms {
        members: &members,
        world_size,
        by_id: FxHashMap::default(),
        defs: Vec::new(),
    };
    // Collective operations OTF2 has an operation for, by (rank, call):
    // blocking calls' instances, and the instances of non-blocking ones
    // (or persistent ones' starts) posted and completed by a call.
    let mut collective_at: FxHashMap<(u32, u64), usize> = FxHashMap::default();
    let mut posted_at: FxHashMap<(u32, u64), Vec<(usize, u64)>> = FxHashMap::default();
    let mut completed_at: FxHashMap<(u32, u64), Vec<usize>> = FxHashMap::default();
    for (i, instance) in matching.collectives.instances.iter().enumerate() {
        // A persistent collective's init call moves no data: its starts do.
        if collective_op(instance.operation).is_none() || instance.func.ends_with("_init") {
            continue;
        }
        for p in &instance.participants {
            match p.completion {
                Some(c) if c == p.post => {
                    collective_at.insert((p.rank, p.post), i);
                }
                Some(c) => {
                    posted_at.entry((p.rank, p.post)).or_default().push((i, c));
                    completed_at.entry((p.rank, c)).or_default().push(i);
                }
                None => {}
            }
        }
    }
    // Per rank: how many calls have times, what each send and collective moved.
    let traffic = CallTraffic::new(trace, &members)?;
    let mut timed: FxHashMap<u32, u64> = FxHashMap::default();
    let mut send_bytes: Vec<Option<u64>> = vec![None; matching.operations.len()];
    let mut collective_bytes: FxHashMap<(u32, u64), CallBytes> = FxHashMap::default();
    for part in &trace.ranks {
        let rank = part.meta.rank;
        timed.insert(
            rank,
            times(part).map_err(Otf2ExportError::Times)?.len() as u64,
        );
        let bytes = traffic.rank(part);
        let of = |seq: u64| bytes.get(seq as usize).copied().unwrap_or_default();
        for (i, op) in matching.operations.iter().enumerate() {
            if op.rank == rank && op.direction == Direction::Send {
                send_bytes[i] = of(op.post).sent;
            }
        }
        let posts = collective_at.keys().chain(posted_at.keys());
        for &(r, post) in posts.filter(|(r, _)| *r == rank) {
            collective_bytes.insert((r, post), of(post));
        }
    }
    let is_timed = |rank: u32, seq: u64| timed.get(&rank).is_some_and(|&n| seq < n);
    let (records, messages) = plan_messages(&matching, &mut comms, &send_bytes, &is_timed);

    let mut archive = Archive::create(dir, ARCHIVE_NAME, "mpigram")?;
    let offset = trace.run_start_ns().max(0.0) as u64;
    let mut regions = Regions::default();
    let mut summary = Otf2Summary {
        messages,
        unmatched: matching.unmatched.len(),
        ..Otf2Summary::default()
    };
    let mut length = 0u64;
    let instances = &matching.collectives.instances;
    // A collective operation's request id: after the point-to-point ones
    // (`plan_messages`), which are operations' indices.
    let request_id = |i: usize| (matching.operations.len() + i) as u64;
    for part in &trace.ranks {
        let rank = part.meta.rank;
        let spans = times(part).map_err(Otf2ExportError::Times)?;
        let mut w = archive.events(u64::from(rank))?;
        // The completion records of collective operations posted, by instance.
        let mut pending: FxHashMap<usize, CollectiveEnd> = FxHashMap::default();
        for call in RankDecoder::new(trace, part) {
            let call = call?;
            let Some(span) = spans.get(call.seq as usize) else {
                summary.untimed += 1; // a killed rank's last calls
                continue;
            };
            let start = span.start_ns.max(0) as u64;
            let (start, end) = (
                offset + start,
                offset + (span.end_ns.max(0) as u64).max(start),
            );
            length = length.max(end - offset);
            let region = regions.of(call.func);
            w.enter(start, region)?;
            let comm_arg = call.args.get("comm").and_then(Json::as_str);
            // Looked up for the calls of collectives only.
            let bytes = || {
                collective_bytes
                    .get(&(rank, call.seq))
                    .copied()
                    .unwrap_or_default()
            };
            let end_record = match (collective_at.get(&(rank, call.seq)), comm_arg) {
                (Some(&i), Some(name)) => comms
                    .resolve(rank, call.seq, name)
                    .map(|comm| collective_end(&instances[i], comm, bytes(), &comms)),
                _ => None,
            };
            if end_record.is_some() {
                w.collective_begin(start)?;
                summary.collective_calls += 1;
            }
            // A persistent collective's starts name no communicator: its
            // init call does, resolved here for them.
            if let Some(name) = comm_arg
                && call.func.ends_with("_init")
                && collective_op(call.func).is_some()
            {
                comms.resolve(rank, call.seq, name);
            }
            let posted = posted_at
                .get(&(rank, call.seq))
                .map_or(&[][..], Vec::as_slice);
            // An MPI_Startall's bytes are its operations' together: each
            // is written with none (the trace does not tell them apart).
            let bytes_each = match posted.len() {
                1 => bytes(),
                _ => CallBytes {
                    sent: Some(0),
                    received: Some(0),
                },
            };
            for &(i, done) in posted {
                let comm = match comm_arg {
                    Some(name) => comms.resolve(rank, call.seq, name),
                    None => comms.known(&instances[i].comm),
                };
                // Both records or neither: the completion needs times too.
                if let Some(comm) = comm
                    && is_timed(rank, done)
                {
                    pending.insert(i, collective_end(&instances[i], comm, bytes_each, &comms));
                    w.collective_request(start, request_id(i))?;
                    summary.collective_requests += 1;
                }
            }
            if let Some(list) = records.get(&(rank, call.seq)) {
                for (at_end, record) in list {
                    write(&mut w, if *at_end { end } else { start }, record)?;
                }
            }
            if let Some(e) = &end_record {
                w.collective_end(end, e)?;
            }
            for &i in completed_at.get(&(rank, call.seq)).into_iter().flatten() {
                if let Some(e) = pending.remove(&i) {
                    w.collective_complete(end, &e, request_id(i))?;
                }
            }
            w.leave(end, region)?;
            summary.calls += 1;
        }
        summary.events.push((rank, w.close()?));
        summary.ranks += 1;
    }
    definitions(
        &mut archive,
        trace,
        &regions,
        &comms,
        offset,
        length,
        &summary,
    )?;
    let locations: Vec<u64> = summary.events.iter().map(|&(r, _)| u64::from(r)).collect();
    archive.close(&locations)?;
    Ok(summary)
}

/// The message records of every matched message whose communicator OTF2
/// can name and whose calls have times, by (rank, call): each with
/// whether it is written at the call's end. Returns them and the number
/// of messages.
#[allow(clippy::type_complexity)]
fn plan_messages(
    matching: &Matching,
    comms: &mut Comms,
    send_bytes: &[Option<u64>],
    is_timed: &dyn Fn(u32, u64) -> bool,
) -> (FxHashMap<(u32, u64), Vec<(bool, Record)>>, usize) {
    let mut records: FxHashMap<(u32, u64), Vec<(bool, Record)>> = FxHashMap::default();
    let mut messages = 0;
    for m in &matching.matches {
        let (s, r) = (&matching.operations[m.send], &matching.operations[m.recv]);
        let Some(recv_done) = r.completion else {
            continue;
        };
        let timed = is_timed(s.rank, s.post)
            && s.completion.is_none_or(|c| is_timed(s.rank, c))
            && is_timed(r.rank, r.post)
            && is_timed(r.rank, recv_done);
        let name = |op: &matching::Operation| op.comm.as_ref().map(|c| c.to_string());
        let (Some(send_comm), Some(recv_comm)) = (name(s), name(r)) else {
            continue;
        };
        let comm = comms.resolve(s.rank, s.post, &send_comm);
        if !timed || comm.is_none() || comm != comms.resolve(r.rank, r.post, &recv_comm) {
            continue;
        }
        let comm = comm.expect("checked above");
        let (Some(to), Some(from)) = (comms.rank_in(comm, r.rank), comms.rank_in(comm, s.rank))
        else {
            continue;
        };
        let message = |peer| Message {
            peer,
            comm,
            tag: s.tag.and_then(|t| u32::try_from(t).ok()).unwrap_or(0),
            bytes: m.bytes.or(send_bytes[m.send]).unwrap_or(0),
        };
        let mut add = |rank: u32, seq: u64, at_end: bool, record: Record| {
            records
                .entry((rank, seq))
                .or_default()
                .push((at_end, record));
        };
        let (send_req, recv_req) = (m.send as u64, m.recv as u64);
        if s.completion == Some(s.post) {
            add(s.rank, s.post, false, Record::Send(message(to)));
        } else {
            add(s.rank, s.post, false, Record::Isend(message(to), send_req));
            if let Some(c) = s.completion {
                add(s.rank, c, true, Record::IsendComplete(send_req));
            }
        }
        if recv_done == r.post {
            add(r.rank, r.post, true, Record::Recv(message(from)));
        } else {
            add(r.rank, r.post, false, Record::IrecvRequest(recv_req));
            add(
                r.rank,
                recv_done,
                true,
                Record::Irecv(message(from), recv_req),
            );
        }
        messages += 1;
    }
    (records, messages)
}

/// What the end of collective operation `instance` on communicator
/// `comm` says: its operation, root and the bytes the call moved.
fn collective_end(
    instance: &CollectiveInstance,
    comm: u32,
    bytes: CallBytes,
    comms: &Comms,
) -> CollectiveEnd {
    CollectiveEnd {
        op: collective_op(instance.operation).unwrap_or(sys::OTF2_COLLECTIVE_OP_BARRIER),
        comm,
        root: instance
            .root
            .and_then(|root| comms.rank_in(comm, root))
            .unwrap_or(sys::OTF2_COLLECTIVE_ROOT_NONE),
        sent: bytes.sent.unwrap_or(0),
        received: bytes.received.unwrap_or(0),
    }
}

fn write(w: &mut EventWriter, time: u64, record: &Record) -> Result<(), Otf2Error> {
    match *record {
        Record::Send(m) => w.send(time, &m),
        Record::Isend(m, req) => w.isend(time, &m, req),
        Record::IsendComplete(req) => w.isend_complete(time, req),
        Record::IrecvRequest(req) => w.irecv_request(time, req),
        Record::Recv(m) => w.recv(time, &m),
        Record::Irecv(m, req) => w.irecv(time, &m, req),
    }
}

/// The global definitions: clock, paradigm, system tree (a node per
/// host), a process and a thread per rank, regions, groups, communicators.
fn definitions(
    archive: &mut Archive,
    trace: &Trace,
    regions: &Regions,
    comms: &Comms,
    offset: u64,
    length: u64,
    summary: &Otf2Summary,
) -> Result<(), Otf2Error> {
    archive.clock(1_000_000_000, offset, length)?;
    archive.mpi_paradigm()?;
    archive.system_tree_node(0, "mpigram run", "machine", None)?;
    let mut hosts: Vec<&str> = Vec::new();
    for part in &trace.ranks {
        if !hosts.contains(&part.meta.host.as_str()) {
            hosts.push(&part.meta.host);
            archive.system_tree_node(hosts.len() as u32, &part.meta.host, "node", Some(0))?;
        }
    }
    for part in &trace.ranks {
        let rank = part.meta.rank;
        let node = hosts.iter().position(|h| *h == part.meta.host).unwrap_or(0) as u32 + 1;
        archive.process(rank, &format!("MPI Rank {rank}"), node)?;
        let events = summary
            .events
            .iter()
            .find(|(r, _)| *r == rank)
            .map_or(0, |&(_, n)| n);
        archive.thread(u64::from(rank), &format!("rank {rank}"), events, rank)?;
    }
    for (id, name) in regions.names().enumerate() {
        archive.mpi_region(id as u32, name, crate::regions::role(name))?;
    }
    // Group 0: the locations, in world rank order; communicators' groups
    // list their members as ranks of it (world ranks).
    let locations: Vec<u64> = (0..comms.world_size).map(u64::from).collect();
    archive.mpi_group(0, "", sys::OTF2_GROUP_TYPE_COMM_LOCATIONS, &locations)?;
    for (id, (name, members)) in comms.defs.iter().enumerate() {
        let group = id as u32 + 1;
        match members {
            None => archive.mpi_group(group, "", sys::OTF2_GROUP_TYPE_COMM_SELF, &[])?,
            Some(world) => {
                let world: Vec<u64> = world.iter().map(|&w| u64::from(w)).collect();
                archive.mpi_group(group, "", sys::OTF2_GROUP_TYPE_COMM_GROUP, &world)?
            }
        }
        archive.comm(id as u32, name, group)?;
    }
    Ok(())
}

//! An analysis spread over several processes (`mpiexec -n K mpigram
//! critical-path TRACE`): the trace's ranks are shared out, rank index r
//! to process r mod K, and each process reads its ranks — decodes their
//! calls, times and places them, and finds their operations, the work
//! that grows with the calls — and sends them, a chunk at a time, to
//! process 0, which matches them and walks the graph as a single process
//! does. Process 0 asks for a rank's next chunk when it hands out the
//! last one, and each process reads the chunk after the one it sent
//! meanwhile, so reading runs beside matching on every process.
//!
//! The processes talk through a [`Link`] (MPI with the `mpi` feature;
//! threads in the tests). Chunks travel as postcard bytes. A process that
//! cannot read a chunk says so, and process 0 reads that rank itself from
//! there on: its error is then the one a single process reports.

use crate::replay::{Buffers, Chunk, Chunks, RankReader, Readers, ReplayError};
use crate::sites::Sites;
use crate::timeline::Source;
use mpigram_trace::Trace;

/// Messages between the analysis processes of one run.
pub trait Link: Sync {
    /// This process's number, from 0.
    fn process(&self) -> usize;
    /// How many processes there are.
    fn processes(&self) -> usize;
    /// Sends `bytes` to process `to` with `tag`.
    fn send(&self, to: usize, tag: u32, bytes: &[u8]);
    /// The next message from process `from` with `tag`.
    fn receive(&self, from: usize, tag: u32) -> Vec<u8>;

    /// One round in which every process takes part: sends `out[p]` to
    /// each other process p with `tag`, and returns what each sent here
    /// (empty for this process), by process.
    fn exchange(&self, tag: u32, out: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let me = self.process();
        for (p, bytes) in out.iter().enumerate() {
            if p != me {
                self.send(p, tag, bytes);
            }
        }
        (0..self.processes())
            .map(|p| match p == me {
                true => Vec::new(),
                false => self.receive(p, tag),
            })
            .collect()
    }
}

/// The process that reads rank index `r` among `processes`.
pub fn owner(r: u32, processes: usize) -> usize {
    r as usize % processes
}

/// Process 0 asks with this tag for a rank's next chunk (the rank index,
/// or [`STOP`]); a process answers with [`ANSWER`], in the order asked.
const ASK: u32 = 0;
const ANSWER: u32 = 1;
const STOP: u32 = u32::MAX;

/// An MPI function's name from the standard's table (`MPI_Isend`). Named
/// so in the types that travel between processes: serde would take a
/// plain `&'static str` field for one borrowed from the bytes read.
pub type FuncName = &'static str;

/// Serialises the MPI function names of the operations (`&'static str`)
/// as their names, read back as the names of the MPI standard's table.
pub(crate) mod func_name {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(crate) fn serialize<S: Serializer>(name: &&'static str, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(name)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
        let name = <&str>::deserialize(d)?;
        mpigram_mpispec::func_by_name(name)
            .map(|(_, f)| f.name)
            .ok_or_else(|| D::Error::custom(format!("{name} is not an MPI function")))
    }
}

fn encode(chunk: Option<&Chunk>) -> Vec<u8> {
    postcard::to_allocvec(&chunk).expect("a chunk serialises")
}

fn decode(bytes: &[u8]) -> Option<Chunk> {
    postcard::from_bytes(bytes).ok().flatten()
}

/// Process 0's chunks: its own ranks read here, the others' asked for.
/// Dropped, it tells the other processes to stop.
pub(crate) struct Remote<'t, 'l> {
    here: Readers<'t>,
    link: &'l dyn Link,
    /// Chunks received of each rank (to read on from there if a process
    /// fails), and whether its end came.
    received: Vec<u64>,
    ended: Vec<bool>,
    make_reader: Box<dyn Fn(u32) -> Result<RankReader<'t>, ReplayError> + Send + 't>,
}

impl<'t, 'l> Remote<'t, 'l> {
    pub(crate) fn new(
        trace: &'t Trace,
        sites: &'t Sites<'t>,
        source: Source,
        link: &'l dyn Link,
    ) -> Result<Remote<'t, 'l>, ReplayError> {
        let origin = trace.run_start_ns();
        let k = link.processes();
        let here = match Readers::of(trace, sites, source, origin, |r| owner(r, k) == 0) {
            Ok(here) => here,
            Err(e) => {
                stop(link);
                return Err(e);
            }
        };
        let n = trace.ranks.len();
        Ok(Remote {
            here,
            link,
            received: vec![0; n],
            ended: vec![false; n],
            make_reader: Box::new(move |r| {
                RankReader::new(r, trace, &trace.ranks[r as usize], sites, source, origin)
            }),
        })
    }

    /// Rank `r`'s next chunk, read here from now on: its process failed.
    fn read_here(&mut self, r: u32, read: Buffers) -> Result<Chunk, ReplayError> {
        let mut reader = (self.make_reader)(r)?;
        for _ in 0..self.received[r as usize] {
            Chunk::read(&mut reader, Buffers::default())?;
        }
        let chunk = Chunk::read(&mut reader, read);
        self.here.0[r as usize] = Some(reader);
        chunk
    }
}

impl Drop for Remote<'_, '_> {
    fn drop(&mut self) {
        stop(self.link);
    }
}

/// Tells every process but 0 to stop (none has an answer on its way then).
pub(crate) fn stop(link: &dyn Link) {
    for p in 1..link.processes() {
        link.send(p, ASK, &STOP.to_le_bytes());
    }
}

impl Chunks for Remote<'_, '_> {
    fn ranks(&self) -> usize {
        self.received.len()
    }

    fn read(&mut self, ranks: &[u32], spare: &mut Vec<Buffers>) -> Result<Vec<Chunk>, ReplayError> {
        let k = self.link.processes();
        let asked: Vec<u32> = ranks
            .iter()
            .copied()
            .filter(|&r| self.here.0[r as usize].is_none() && !self.ended[r as usize])
            .collect();
        for &r in &asked {
            self.link.send(owner(r, k), ASK, &r.to_le_bytes());
        }
        let here = self.here.read(ranks, spare);
        // Every answer is taken before anything is reported.
        let answers: Vec<(u32, Vec<u8>)> = asked
            .iter()
            .map(|&r| (r, self.link.receive(owner(r, k), ANSWER)))
            .collect();
        let mut chunks = here?;
        for (r, bytes) in answers {
            // A chunk received comes with its own buffers: one spare goes,
            // as one would have been filled here.
            let read = spare.pop().unwrap_or_default();
            let chunk = match decode(&bytes) {
                Some(chunk) => chunk,
                None => self.read_here(r, read)?,
            };
            self.received[r as usize] += 1;
            self.ended[r as usize] = chunk.ends();
            chunks.push(chunk);
        }
        Ok(chunks)
    }
}

/// A process other than 0: reads its ranks of `trace` a chunk at a time,
/// as process 0 asks, until it says stop. Each answer's next chunk is
/// read while process 0 works on it.
/// A process that cannot set its readers up answers that it failed (and
/// process 0 reads its ranks).
pub fn serve(trace: &Trace, source: Source, link: &dyn Link) {
    let sites = Sites::new(&trace.grammar);
    let (me, k) = (link.process(), link.processes());
    let mut readers = Readers::of(trace, &sites, source, trace.run_start_ns(), |r| {
        owner(r, k) == me
    })
    .unwrap_or(Readers(Vec::new()));
    let mut ahead: Vec<Option<Option<Chunk>>> = (0..readers.0.len()).map(|_| None).collect();
    let next = |readers: &mut Readers, r: u32| -> Option<Chunk> {
        let reader = readers.0.get_mut(r as usize)?.as_mut()?;
        Chunk::read(reader, Buffers::default()).ok()
    };
    loop {
        let asked = link.receive(0, ASK);
        let r = asked
            .get(..4)
            .map_or(STOP, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        if r == STOP {
            return;
        }
        let chunk = match ahead.get_mut(r as usize).and_then(Option::take) {
            Some(chunk) => chunk,
            None => next(&mut readers, r),
        };
        link.send(0, ANSWER, &encode(chunk.as_ref()));
        // A failed or last chunk has nothing after it to read ahead.
        if chunk.as_ref().is_some_and(|c| !c.ends()) {
            ahead[r as usize] = Some(next(&mut readers, r));
        }
    }
}

/// The processes of `mpiexec`, through MPI (rsmpi): MPI_COMM_WORLD.
#[cfg(feature = "mpi")]
pub mod mpi_link {
    use super::Link;
    use mpi::Threading;
    use mpi::environment::Universe;
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::{Communicator, Destination, Source};

    /// MPI initialised (MPI_THREAD_SERIALIZED: chunks are asked for by
    /// one thread at a time, not always the same); finalised when dropped.
    pub struct MpiLink {
        world: SimpleCommunicator,
        _universe: Universe,
    }

    impl MpiLink {
        /// Initialises MPI; None if it cannot, or without MPI_THREAD_SERIALIZED.
        pub fn init() -> Option<MpiLink> {
            let (universe, threading) = mpi::initialize_with_threading(Threading::Serialized)?;
            if threading < Threading::Serialized {
                return None;
            }
            Some(MpiLink {
                world: universe.world(),
                _universe: universe,
            })
        }
    }

    impl Link for MpiLink {
        fn process(&self) -> usize {
            self.world.rank() as usize
        }

        fn processes(&self) -> usize {
            self.world.size() as usize
        }

        fn send(&self, to: usize, tag: u32, bytes: &[u8]) {
            self.world
                .process_at_rank(to as i32)
                .send_with_tag(bytes, tag as i32);
        }

        fn receive(&self, from: usize, tag: u32) -> Vec<u8> {
            let process = self.world.process_at_rank(from as i32);
            // MPICH polls while a receive waits: waiting in short sleeps
            // leaves the core to the analysis (a chunk is milliseconds).
            while process.immediate_probe_with_tag(tag as i32).is_none() {
                nap();
            }
            let (bytes, _) = process.receive_vec_with_tag::<u8>(tag as i32);
            bytes
        }

        /// The sends do not wait for their receives (every process sends
        /// before it receives).
        fn exchange(&self, tag: u32, out: &[Vec<u8>]) -> Vec<Vec<u8>> {
            let me = self.process();
            mpi::request::scope(|scope| {
                let mut sends: Vec<_> = out
                    .iter()
                    .enumerate()
                    .filter(|&(p, _)| p != me)
                    .map(|(p, bytes)| {
                        self.world
                            .process_at_rank(p as i32)
                            .immediate_send_with_tag(scope, &bytes[..], tag as i32)
                    })
                    .collect();
                let received = (0..self.processes())
                    .map(|p| match p == me {
                        true => Vec::new(),
                        false => self.receive(p, tag),
                    })
                    .collect();
                while let Some(send) = sends.pop() {
                    if let Err(send) = send.test() {
                        sends.push(send);
                        nap();
                    }
                }
                received
            })
        }
    }

    fn nap() {
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
}

//! Chrome's JSON trace-event format: `{"traceEvents":[...]}` with complete
//! events (`ph` "X", times in microseconds), flow events (`ph` "s"/"f")
//! and metadata events naming and ordering processes and threads.

use super::{Slice, TimelineWriter, Track};
use serde_json::{Value as Json, json};
use std::io::{self, Write};

pub(super) struct ChromeWriter<'w> {
    out: &'w mut dyn Write,
    first: bool,
    /// Thread ids of the current rank's request lanes.
    lane_tids: Vec<u64>,
    /// The next unused thread id.
    next_tid: u64,
    /// The critical path's process (and thread) id, after the ranks'.
    path_pid: u64,
}

impl<'w> ChromeWriter<'w> {
    /// Thread ids above the processes of ranks up to `max_rank` are free
    /// for request lanes.
    pub(super) fn new(out: &'w mut dyn Write, max_rank: u32) -> io::Result<ChromeWriter<'w>> {
        out.write_all(b"{\"traceEvents\":[\n")?;
        Ok(ChromeWriter {
            out,
            first: true,
            lane_tids: Vec::new(),
            next_tid: pid(max_rank) + 2,
            path_pid: pid(max_rank) + 1,
        })
    }

    /// Thread ids: the calls on the rank's main thread (tid = pid), each
    /// request lane on a thread of its own, unique in the whole trace; the
    /// critical path on its process's main thread.
    fn tid(&self, track: Track) -> u64 {
        match track {
            Track::CriticalPath => self.path_pid,
            Track::Calls { rank } => pid(rank),
            Track::Requests { lane, .. } => self.lane_tids[lane],
        }
    }

    fn event(&mut self, event: &Json) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.out, event).map_err(io::Error::from)
    }

    fn metadata(&mut self, name: &str, pid: u64, tid: Option<u64>, args: Json) -> io::Result<()> {
        let mut event = json!({"ph": "M", "name": name, "pid": pid, "args": args});
        if let Some(tid) = tid {
            event["tid"] = json!(tid);
        }
        self.event(&event)
    }
}

/// Process of a rank: pid 0 is the idle process to trace viewers.
fn pid(rank: u32) -> u64 {
    u64::from(rank) + 1
}

fn micros(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl TimelineWriter for ChromeWriter<'_> {
    fn critical_path(&mut self) -> io::Result<()> {
        let pid = self.path_pid;
        self.metadata("process_name", pid, None, json!({"name": "critical path"}))?;
        self.metadata("process_sort_index", pid, None, json!({"sort_index": -1}))?;
        self.metadata(
            "thread_name",
            pid,
            Some(pid),
            json!({"name": "critical path"}),
        )
    }

    fn rank(&mut self, rank: u32) -> io::Result<()> {
        let pid = pid(rank);
        self.lane_tids.clear();
        self.metadata(
            "process_name",
            pid,
            None,
            json!({"name": format!("rank {rank}")}),
        )?;
        self.metadata("process_sort_index", pid, None, json!({"sort_index": rank}))?;
        let calls = self.tid(Track::Calls { rank });
        self.metadata(
            "thread_name",
            pid,
            Some(calls),
            json!({"name": "MPI calls"}),
        )?;
        self.metadata(
            "thread_sort_index",
            pid,
            Some(calls),
            json!({"sort_index": 0}),
        )
    }

    fn lane(&mut self, rank: u32, lane: usize) -> io::Result<()> {
        let (pid, tid) = (pid(rank), self.next_tid);
        self.next_tid += 1;
        self.lane_tids.push(tid);
        debug_assert_eq!(self.lane_tids.len(), lane + 1, "lanes in turn");
        self.metadata("thread_name", pid, Some(tid), json!({"name": "requests"}))?;
        self.metadata(
            "thread_sort_index",
            pid,
            Some(tid),
            json!({"sort_index": lane + 1}),
        )
    }

    fn slice(&mut self, s: &Slice) -> io::Result<()> {
        let pid = match s.track {
            Track::Calls { rank } | Track::Requests { rank, .. } => pid(rank),
            Track::CriticalPath => self.path_pid,
        };
        let tid = self.tid(s.track);
        let ts = micros(s.start_ns);
        let mut args = (**s.args).clone();
        if let Some(seq) = s.seq {
            args.insert("seq".into(), json!(seq));
        }
        self.event(&json!({
            "name": s.name,
            "cat": "mpi",
            "ph": "X",
            "ts": ts,
            "dur": micros(s.end_ns - s.start_ns),
            "pid": pid,
            "tid": tid,
            "args": args,
        }))?;
        for id in s.flows_out {
            self.event(&json!({
                "name": "message", "cat": "p2p", "ph": "s", "id": id,
                "ts": ts, "pid": pid, "tid": tid,
            }))?;
        }
        for id in s.path_out {
            self.event(&json!({
                "name": "critical path", "cat": "critical_path", "ph": "s", "id": id,
                "ts": ts, "pid": pid, "tid": tid,
            }))?;
        }
        for a in s.flows_in {
            // "bp":"e": bound to the slice around ts, the receiving call.
            let (name, cat) = if a.path {
                ("critical path", "critical_path")
            } else {
                ("message", "p2p")
            };
            self.event(&json!({
                "name": name, "cat": cat, "ph": "f", "bp": "e", "id": a.id,
                "ts": micros(a.at_ns), "pid": pid, "tid": tid,
                "args": {"from rank": a.from_rank, "bytes": a.bytes},
            }))?;
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()
    }
}

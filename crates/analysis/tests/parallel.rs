//! The critical path spread over K processes (here threads, talking
//! through a [`Link`] of queues) is the single process's, to the byte:
//! with fewer, as many and more processes than ranks, and when a process
//! fails to read (process 0 then reads its ranks itself).

mod common;

use mpigram_analysis::critical_path::{self, Analysis};
use mpigram_analysis::parallel::Link;
use mpigram_analysis::timeline::Source;
use mpigram_trace::Trace;
use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex};

/// Messages in flight between the threads, by (from, to, tag).
type Queues = HashMap<(usize, usize, u32), VecDeque<Vec<u8>>>;

#[derive(Default)]
struct Post {
    queues: Mutex<Queues>,
    arrived: Condvar,
}

struct ThreadLink<'p> {
    me: usize,
    processes: usize,
    post: &'p Post,
    /// Process `me` garbles what it sends to process 0 (a failing reader).
    garbled: bool,
}

impl Link for ThreadLink<'_> {
    fn process(&self) -> usize {
        self.me
    }

    fn processes(&self) -> usize {
        self.processes
    }

    fn send(&self, to: usize, tag: u32, bytes: &[u8]) {
        let bytes = match self.garbled && to == 0 {
            true => vec![0xff; 3],
            false => bytes.to_vec(),
        };
        let mut queues = self.post.queues.lock().unwrap();
        queues
            .entry((self.me, to, tag))
            .or_default()
            .push_back(bytes);
        self.post.arrived.notify_all();
    }

    fn receive(&self, from: usize, tag: u32) -> Vec<u8> {
        let mut queues = self.post.queues.lock().unwrap();
        loop {
            if let Some(bytes) = queues
                .get_mut(&(from, self.me, tag))
                .and_then(VecDeque::pop_front)
            {
                return bytes;
            }
            queues = self.post.arrived.wait(queues).unwrap();
        }
    }
}

fn json(a: &Analysis) -> String {
    let mut out = Vec::new();
    a.write_json(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The JSON of process 0's analysis over `processes` threads (process
/// `garbled`, if any, failing to send its chunks); the others return None.
fn across(trace: &Trace, processes: usize, garbled: Option<usize>) -> String {
    let post = Post::default();
    let results: Vec<Option<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..processes)
            .map(|me| {
                let link = ThreadLink {
                    me,
                    processes,
                    post: &post,
                    garbled: garbled == Some(me),
                };
                scope.spawn(move || {
                    critical_path::analyse_across(trace, Source::Best, true, &link)
                        .unwrap()
                        .map(|a| json(&a))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results[1..].iter().all(Option::is_none));
    assert!(
        post.queues.lock().unwrap().values().all(VecDeque::is_empty),
        "every message was taken"
    );
    results[0].clone().expect("process 0 reports")
}

#[test]
fn the_analysis_across_processes_is_the_single_processs() {
    // Ten chunks of calls a rank.
    let trace = common::two_ranks(10_000);
    let single = json(&critical_path::analyse(&trace, Source::Best, true).unwrap());
    assert!(single.contains("\"segments\""));
    for processes in [1, 2, 3] {
        assert_eq!(
            across(&trace, processes, None),
            single,
            "{processes} processes"
        );
    }
}

#[test]
fn a_process_that_cannot_read_leaves_its_ranks_to_process_0() {
    let trace = common::two_ranks(10_000);
    let single = json(&critical_path::analyse(&trace, Source::Best, true).unwrap());
    // Process 1 reads rank 1: every chunk it sends is garbled.
    assert_eq!(across(&trace, 2, Some(1)), single);
}

//! K analysis processes as threads of one test, talking through a
//! [`Link`] of queues: for the analyses spread over processes.

use mpigram_analysis::critical_path::{self, Analysis};
use mpigram_analysis::parallel::Link;
use mpigram_analysis::profile::{self, Profile};
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

/// Process 0's critical path of `trace` over `processes` threads
/// (process `garbled`, if any, garbling what it sends process 0); checks
/// that every thread ended, the others with None, and that every message
/// was taken.
pub fn critical_path_across(
    trace: &Trace,
    processes: usize,
    garbled: Option<usize>,
    heuristic: bool,
) -> Analysis {
    match try_critical_path_across(trace, processes, garbled, heuristic) {
        Ok(analysis) => analysis,
        Err(e) => panic!("{e}"),
    }
}

/// [`critical_path_across`], with process 0's error.
pub fn try_critical_path_across(
    trace: &Trace,
    processes: usize,
    garbled: Option<usize>,
    heuristic: bool,
) -> Result<Analysis, String> {
    try_across(processes, garbled, |link| {
        critical_path::analyse_across(trace, Source::Best, heuristic, link)
            .map_err(|e| e.to_string())
    })
}

/// Process 0's profile of `trace` over `processes` threads, with its error
/// (checked as [`critical_path_across`] is).
#[allow(dead_code)] // not every test file profiles
pub fn try_profile_across(
    trace: &Trace,
    processes: usize,
    garbled: Option<usize>,
) -> Result<Profile, String> {
    try_across(processes, garbled, |link| {
        profile::profile_across(trace, &profile::Options::default(), link)
            .map_err(|e| e.to_string())
    })
}

/// What `analyse` gives process 0 when it runs on `processes` threads
/// (process `garbled` garbling what it sends process 0), with its error;
/// checks that every thread ended, the others with None, and that every
/// message was taken.
fn try_across<T: Send>(
    processes: usize,
    garbled: Option<usize>,
    analyse: impl Fn(&dyn Link) -> Result<Option<T>, String> + Sync,
) -> Result<T, String> {
    let post = Post::default();
    let mut results: Vec<Result<Option<T>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..processes)
            .map(|me| {
                let link = ThreadLink {
                    me,
                    processes,
                    post: &post,
                    garbled: garbled == Some(me),
                };
                let analyse = &analyse;
                scope.spawn(move || analyse(&link))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        results[1..].iter().all(|r| matches!(r, Ok(None))),
        "only process 0 reports"
    );
    assert!(
        post.queues.lock().unwrap().values().all(VecDeque::is_empty),
        "every message was taken"
    );
    results
        .swap_remove(0)
        .map(|a| a.expect("process 0 reports"))
}

use super::*;

#[test]
fn ranks_print_as_ranges() {
    assert_eq!(rank_ranges(&[0, 1, 2, 3, 5, 7, 8]), "0-3, 5, 7-8");
    assert_eq!(rank_ranges(&[4]), "4");
    assert_eq!(rank_ranges(&[]), "");
}

#[test]
fn the_same_finding_on_several_ranks_is_one_with_their_counts_added() {
    let f = |rank, count| {
        Finding::on(
            Kind::LeakedObject,
            rank,
            "MPI_Comm_dup",
            None,
            count,
            "m".into(),
        )
    };
    let other = Finding::on(
        Kind::LeakedObject,
        1,
        "MPI_Comm_dup",
        None,
        1,
        "other".into(),
    );
    let report = Report::new(vec![f(2, 1), f(0, 2), other.clone(), f(1, 3)]);
    assert_eq!(report.findings.len(), 2);
    assert_eq!(report.findings[0].ranks, [0, 1, 2]);
    assert_eq!(report.findings[0].count, 6);
    assert_eq!(report.findings[1], other);
    let json = report.to_json();
    assert_eq!(json["findings"][0]["kind"], "leaked-object");
    assert_eq!(json["findings"][0]["site"], Json::Null);
    assert_eq!(
        report.findings[0].to_string(),
        "leaked-object: MPI_Comm_dup on ranks 0-2 (6×): m"
    );
}

/// The checks that follow messages ([`messages::MessageChecks`]) on
/// hand-written calls, fed as the run is read: what they find is what
/// the whole run shows, whatever the interleaving of the ranks, and what
/// they hold is what is in flight.
mod streamed {
    use super::messages::MessageChecks;
    use super::{Finding, Kind};
    use crate::decode::test_call as call;
    use crate::matching::{CallAt, Comm, OperationLog, WorldRanks};
    use crate::members::{CommId, CommInstance};
    use crate::sites::Sites;
    use mpigram_grammar::{Sequitur, merge};
    use rustc_hash::FxHashMap;
    use serde_json::{Value as Json, json};

    /// MPI_COMM_WORLD of `.0` ranks, the only communicator.
    struct World(u32);

    impl WorldRanks for World {
        fn world_rank(&self, _: u32, _: u64, comm: &Comm, rank_in_comm: u32) -> Option<u32> {
            (*comm == Comm::World && rank_in_comm < self.0).then_some(rank_in_comm)
        }

        fn comm_instance(&self, _: u32, _: u64, comm: &Comm) -> Option<CommInstance> {
            (*comm == Comm::World).then_some(CommInstance {
                id: CommId::World,
                size: self.0,
                remote_size: 0,
            })
        }
    }

    /// How the ranks' calls are fed.
    #[derive(Clone, Copy)]
    enum Order {
        /// A call of each rank in turn.
        CallByCall,
        /// Every call of rank 0, then of rank 1, ...
        RankByRank,
    }

    type Calls = Vec<(&'static str, Json)>;

    /// The findings on `ranks`' calls fed in `order`, and the most the
    /// checks held at once.
    fn streamed(ranks: &[Calls], order: Order) -> (Vec<Finding>, usize) {
        // A terminal per distinct call, as the tracer's signatures.
        let mut terminals: FxHashMap<String, u32> = FxHashMap::default();
        let mut funcs: Vec<&'static str> = Vec::new();
        let grammars: Vec<_> = ranks
            .iter()
            .zip(0u32..)
            .map(|(calls, rank)| {
                let mut sequitur = Sequitur::new();
                for (func, args) in calls {
                    let next = funcs.len() as u32;
                    let t = *terminals.entry(format!("{func}{args}")).or_insert(next);
                    if t == next {
                        funcs.push(func);
                    }
                    sequitur.push(t);
                }
                sequitur.grammar(rank)
            })
            .collect();
        let grammar = merge(&grammars).unwrap();
        let sites = Sites::new(&grammar);
        let n = ranks.len() as u32;
        let world: Vec<u32> = (0..n).collect();
        let members = World(n);
        let mut checks = MessageChecks::new(&members, &world, &[], &sites, &funcs);
        let mut logs: Vec<OperationLog> = world.iter().map(|&r| OperationLog::new(r)).collect();
        let mut held = 0;
        let mut feed = |checks: &mut MessageChecks, rank: u32, seq: usize| {
            let (func, args) = &ranks[rank as usize][seq];
            let log = &mut logs[rank as usize];
            log.record(
                &call(rank, seq as u64, func, args.clone()),
                CallAt::default(),
            );
            let events = log.take_events();
            if seq + 1 == ranks[rank as usize].len() {
                checks.call(rank, seq as u64, events);
                log.end();
                checks.end(rank, log.take_events());
            } else if !events.is_empty() {
                checks.call(rank, seq as u64, events);
            }
            held = held.max(checks.held());
        };
        match order {
            Order::CallByCall => {
                let longest = ranks.iter().map(Vec::len).max().unwrap_or(0);
                for seq in 0..longest {
                    for rank in 0..n {
                        if seq < ranks[rank as usize].len() {
                            feed(&mut checks, rank, seq);
                        }
                    }
                }
            }
            Order::RankByRank => {
                for rank in 0..n {
                    for seq in 0..ranks[rank as usize].len() {
                        feed(&mut checks, rank, seq);
                    }
                }
            }
        }
        let mut findings = checks.finish();
        findings.sort_by_key(|f| (f.kind, f.ranks.clone(), f.site.clone()));
        (findings, held)
    }

    const WORLD: &str = "MPI_COMM_WORLD";

    fn send(dest: u32, tag: i64) -> (&'static str, Json) {
        let args = json!({"buf": "seg1+0", "count": 1, "datatype": "MPI_DOUBLE", "dest": dest, "tag": tag, "comm": WORLD});
        ("MPI_Send", args)
    }

    /// An MPI_Recv whose status says it came from `status_source` (a
    /// rank, or MPI_STATUS_IGNORE).
    fn recv(source: Json, tag: i64, status_source: Json) -> (&'static str, Json) {
        let status = match status_source {
            Json::String(ignore) => json!(ignore),
            from => json!({"MPI_SOURCE": from, "MPI_TAG": tag, "count": 8}),
        };
        let args = json!({"buf": "seg2+0", "count": 1, "datatype": "MPI_DOUBLE", "source": source, "tag": tag, "comm": WORLD, "status": status});
        ("MPI_Recv", args)
    }

    fn barrier() -> (&'static str, Json) {
        ("MPI_Barrier", json!({ "comm": WORLD }))
    }

    /// An Irecv from and an Isend to `peer`, completed by one MPI_Waitall.
    fn exchange(peer: u32) -> Calls {
        let i = |func: &'static str, peer_arg: &str, peer: u32, request: &str| {
            let args = json!({"buf": "seg3+0", "count": 1, "datatype": "MPI_DOUBLE", peer_arg: peer, "tag": 1, "comm": WORLD, "request": request});
            (func, args)
        };
        vec![
            i("MPI_Irecv", "source", peer, "req1"),
            i("MPI_Isend", "dest", peer, "req2"),
            (
                "MPI_Waitall",
                json!({"count": 2, "array_of_requests": ["req1", "req2"], "array_of_statuses": "MPI_STATUSES_IGNORE"}),
            ),
        ]
    }

    /// 2,000 exchanges, then a send to each other before the receives,
    /// then 1,000 more exchanges.
    fn late_send_cycle(rank: u32) -> Calls {
        let peer = 1 - rank;
        let mut calls: Calls = (0..2_000).flat_map(|_| exchange(peer)).collect();
        calls.extend([send(peer, 2), recv(json!(peer), 2, json!(peer))]);
        calls.extend((0..1_000).flat_map(|_| exchange(peer)));
        calls
    }

    #[test]
    fn a_send_cycle_after_thousands_of_messages_is_found_holding_what_is_in_flight() {
        let ranks = [late_send_cycle(0), late_send_cycle(1)];
        let (findings, held) = streamed(&ranks, Order::CallByCall);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        let f = &findings[0];
        assert_eq!((f.kind, f.func, f.count), (Kind::SendCycle, "MPI_Send", 2));
        assert_eq!(f.ranks, [0, 1]);
        assert!(
            f.message.starts_with("ranks 0 -> 1 -> 0 each send"),
            "{}",
            f.message
        );
        // The replay goes past each exchange as it is read, and keeps
        // nothing of the ranks stuck in the cycle after it.
        assert!(held <= 8, "{held} blocking calls held");
        // Read one rank after the other: the same finding.
        assert_eq!(streamed(&ranks, Order::RankByRank).0, findings);
    }

    #[test]
    fn a_run_without_a_cycle_has_none_however_it_is_read() {
        let ranks: Vec<Calls> = (0..2)
            .map(|r| (0..500).flat_map(|_| exchange(1 - r)).collect())
            .collect();
        for order in [Order::CallByCall, Order::RankByRank] {
            assert_eq!(streamed(&ranks, order).0, []);
        }
    }

    /// Rank 0, twice: 20 small sends to rank 1, a barrier; rank 1
    /// receives them, and calls the barriers if `barriers`.
    fn storms_and_barriers(barriers: bool) -> [Calls; 2] {
        let mut zero: Calls = (0..20).map(|_| send(1, 5)).collect();
        zero.push(barrier());
        let mut one: Calls = (0..20).map(|_| recv(json!(0), 5, json!(0))).collect();
        if barriers {
            one.push(barrier());
        }
        [[zero.clone(), zero].concat(), [one.clone(), one].concat()]
    }

    #[test]
    fn a_collective_ends_a_storm_only_once_it_is_known_to_be_one() {
        // Rank 0's barriers are known to be collective operations only
        // when rank 1's are read, after rank 0's sends (read rank by rank).
        for order in [Order::RankByRank, Order::CallByCall] {
            let (findings, _) = streamed(&storms_and_barriers(true), order);
            assert_eq!(findings.len(), 1, "{findings:#?}");
            let f = &findings[0];
            assert_eq!(
                (f.kind, f.func, f.count),
                (Kind::SmallMessageStorm, "MPI_Send", 40)
            );
            assert_eq!(f.ranks, [0]);
            assert!(
                f.message.contains("in 2 run(s) of up to 20"),
                "{}",
                f.message
            );
            // Barriers rank 1 never joins are no collective operations.
            let (findings, _) = streamed(&storms_and_barriers(false), order);
            assert_eq!(findings.len(), 1, "{findings:#?}");
            assert_eq!(findings[0].count, 40);
            assert!(findings[0].message.contains("in 1 run(s) of up to 40"));
        }
    }

    #[test]
    fn wildcard_receives_all_from_one_sender_are_found_once_decided() {
        // Rank 1's MPI_ANY_SOURCE receives record no status: each is
        // decided once no other rank can send it a message any more.
        // Rank 0 sends 8 of them, rank 2 the 9th if `other`.
        let wildcards = |other: bool| -> [Calls; 3] {
            let n = if other { 9 } else { 8 };
            let one = (0..n).map(|_| recv(json!("MPI_ANY_SOURCE"), 7, json!("MPI_STATUS_IGNORE")));
            let two = if other {
                vec![send(1, 7)]
            } else {
                vec![barrier()]
            };
            [(0..8).map(|_| send(1, 7)).collect(), one.collect(), two]
        };
        for order in [Order::RankByRank, Order::CallByCall] {
            let (findings, _) = streamed(&wildcards(false), order);
            assert_eq!(findings.len(), 1, "{findings:#?}");
            let f = &findings[0];
            assert_eq!(
                (f.kind, f.func, f.count),
                (Kind::AnySourceOneSender, "MPI_Recv", 8)
            );
            assert_eq!(f.ranks, [1]);
            assert!(f.message.contains("from world rank 0"));
            let (findings, _) = streamed(&wildcards(true), order);
            assert!(
                findings.iter().all(|f| f.kind != Kind::AnySourceOneSender),
                "{findings:#?}"
            );
        }
    }
}

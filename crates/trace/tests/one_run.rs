//! A trace directory holds one run: files that say they belong to
//! different runs (run id, world size) or to another rank than their name
//! are refused with one line naming them, instead of being mixed.

mod common;

use common::*;
use mpigram_trace::Trace;

fn error_of(dir: &std::path::Path) -> String {
    match Trace::open(dir) {
        Ok(t) => panic!("opened a mixture of {} ranks", t.ranks.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn rank_files_of_two_runs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = sample(0);
    a.meta.run = 11;
    let mut b = sample(1);
    b.meta.run = 12;
    a.write(dir.path()).unwrap();
    b.write(dir.path()).unwrap();
    let e = error_of(dir.path());
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("different runs"), "{e}");
    assert!(e.contains("rank0.mgr") && e.contains("rank1.mgr"), "{e}");

    // The same run: read as one.
    b.meta.run = 11;
    b.write(dir.path()).unwrap();
    assert_eq!(Trace::open(dir.path()).unwrap().ranks.len(), 2);
}

#[test]
fn a_run_file_and_a_rank_file_of_another_run_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut whole = Trace::from_rank(sample(0));
    let mut one = sample(1);
    one.meta.run = 7;
    whole.ranks[0].meta.run = 7;
    whole.absorb(Trace::from_rank(one)).unwrap();
    whole.write(dir.path()).unwrap();
    // An older run's rank 1, left behind.
    let mut stale = sample(1);
    stale.meta.run = 3;
    stale.write(dir.path()).unwrap();
    let e = error_of(dir.path());
    assert!(
        e.contains("different runs") && e.contains("trace.mgr"),
        "{e}"
    );
}

#[test]
fn world_sizes_must_agree() {
    let dir = tempfile::tempdir().unwrap();
    let a = sample(0);
    let mut b = sample(1);
    b.meta.world_size = 4;
    a.write(dir.path()).unwrap();
    b.write(dir.path()).unwrap();
    let e = error_of(dir.path());
    assert!(e.contains("different runs"), "{e}");
    assert!(e.contains("2 ranks") && e.contains("4 ranks"), "{e}");
}

#[test]
fn a_rank_file_must_hold_the_rank_its_name_says() {
    let dir = tempfile::tempdir().unwrap();
    sample(0).write(dir.path()).unwrap();
    std::fs::rename(dir.path().join("rank0.mgr"), dir.path().join("rank1.mgr")).unwrap();
    let e = error_of(dir.path());
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("rank1.mgr") && e.contains("rank 0"), "{e}");
}

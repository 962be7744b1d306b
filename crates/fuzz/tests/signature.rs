//! Call signatures: `decode_signature` reads back every signature a writer
//! can make, and of damaged or random bytes accepts only what a writer would
//! have written for the values it returns (so nothing is silently misread).
//!
//! `crates/mpispec` tests each encoding by hand and random bytes against a
//! made-up function; here every function of the table is used, with values
//! of every kind, and accepted bytes must re-encode to themselves.

use mpigram_fuzz::*;
use mpigram_mpispec::{FUNCS, FuncId, decode_signature, put_signature_head};
use proptest::prelude::*;

/// Decodes under [`bounded`]; an accepted signature must encode to `bytes`.
fn check(bytes: Vec<u8>) -> bool {
    let len = bytes.len();
    let run = bounded(move || match decode_signature(&bytes) {
        Ok(sig) => {
            assert_eq!(sig.encode(), bytes, "{sig:?}");
            true
        }
        Err(e) => {
            assert!(!e.to_string().contains('\n'));
            false
        }
    });
    assert!(run.largest_allocation <= allocation_budget(len));
    run.value
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn every_signature_a_writer_makes_reads_back(sig in arb_signature()) {
        let bytes = sig.encode();
        prop_assert_eq!(decode_signature(&bytes), Ok(sig));
    }

    #[test]
    fn edited_signatures_are_refused_or_read_exactly(sig in arb_signature(), edits in edits()) {
        let mut bytes = sig.encode();
        apply(&mut bytes, &edits);
        check(bytes);
    }

    /// Random arguments after a valid head, for every function.
    #[test]
    fn random_arguments(f in 0..FUNCS.len(), ret in any::<i64>(), tail in prop::collection::vec(any::<u8>(), 0..48)) {
        let mut bytes = Vec::new();
        put_signature_head(&mut bytes, f as FuncId, ret);
        bytes.extend(tail);
        check(bytes);
    }
}

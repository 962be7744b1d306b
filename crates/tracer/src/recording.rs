//! From a traced call into the tracer: the call's terminal — recalled by
//! the call memo or the Waitall memo (memo.rs), else from the call encoded
//! in full — appended to the record and the crash journal. This is the hot
//! path of every wrapper after its MPI call.

use crate::abi::MPI_SUCCESS;
use crate::encoder::Encoder;
use crate::tracer::{Tracer, recording, recording_alone};
use mpigram_mpispec::FuncId;
use std::ffi::c_int;

/// Records one call: its signature (function, return code, arguments from
/// `encode`) and its duration in ticks.
pub fn record(func: FuncId, ret: c_int, start: u64, end: u64, encode: impl FnOnce(&mut Encoder)) {
    recording(|t| {
        let e = t.encode(func, ret, encode);
        t.append(func, e.terminal, e.new, start, end);
    });
}

/// Records a call as [`record`] does, through the call memo (memo.rs),
/// when its input words equalled the memo's before MPI ran it
/// (`tracer::same_inputs`): `outputs` holds its output words, `request`
/// the request it created.
#[inline(always)]
pub fn record_same_inputs<const I: usize, const O: usize>(
    func: FuncId,
    ret: c_int,
    (start, end): (u64, u64),
    outputs: &[u64; O],
    request: Option<u64>,
    encode: impl FnOnce(&mut Encoder, &[u64; I]),
) {
    // SAFETY: `same_inputs` said that MPI calls cannot overlap.
    let recalled = unsafe {
        recording_alone(|t| recall_expected::<I, O>(t, func, ret, (start, end), outputs, request))
    };
    if recalled == Some(false) {
        record_other_outputs::<I, O>(func, ret, (start, end), *outputs, request, encode);
    }
}

/// Records a call whose input words are those of the entry of `func`
/// the call memo expects next, by that entry's terminal, if the call
/// returned `ret` with the output words `outputs` (and created the
/// request `request`) as that entry's did: the memo's fast path after the
/// MPI call. False records nothing.
#[inline(always)]
fn recall_expected<const I: usize, const O: usize>(
    t: &mut Tracer,
    func: FuncId,
    ret: c_int,
    (start, end): (u64, u64),
    outputs: &[u64; O],
    request: Option<u64>,
) -> bool {
    let (memo, objects) = t.memo_and_objects();
    let Ok(r) = memo.recall_outputs::<I, O>(func, ret, outputs, request, objects) else {
        return false;
    };
    let terminal = r.terminal;
    r.enter(objects);
    // The memo is not held across: a part written out forgets it.
    t.append_recalled(func, terminal, start, end);
    true
}

/// The rest of [`record_same_inputs`]: the memo does not know the call's
/// outputs (or its request's index), and the call is encoded.
#[cold]
#[inline(never)]
fn record_other_outputs<const I: usize, const O: usize>(
    func: FuncId,
    ret: c_int,
    (start, end): (u64, u64),
    outputs: [u64; O],
    request: Option<u64>,
    encode: impl FnOnce(&mut Encoder, &[u64; I]),
) {
    recording(|t| {
        // The call's inputs are the memo's (see `record_same_inputs`).
        let inputs = t.memo_and_objects().0.inputs::<I>(func);
        record_in_full(
            t,
            func,
            ret,
            (start, end),
            (&inputs, &outputs),
            request,
            encode,
        );
    });
}

/// Records a call as [`record`] does, through the call memo (memo.rs):
/// `key` holds its input and output words, `request` the request it
/// created. Calls that may overlap (MPI_THREAD_MULTIPLE) come here, the
/// words kept across the MPI call: under the tracer's lock, a call whose
/// key is that of the entry the memo expects takes the fast path's
/// [`recall_expected`], as a call that cannot overlap does.
#[cold]
#[inline(never)]
pub fn record_keyed<const I: usize, const O: usize>(
    func: FuncId,
    ret: c_int,
    times: (u64, u64),
    (inputs, outputs): (&[u64; I], &[u64; O]),
    request: Option<u64>,
    encode: impl FnOnce(&mut Encoder, &[u64; I]),
) {
    recording(|t| {
        let expected = t.recorder.verify.is_none()
            && t.memo_and_objects().0.same_inputs(func, inputs, [false; I]);
        if !(expected && recall_expected::<I, O>(t, func, ret, times, outputs, request)) {
            record_in_full(t, func, ret, times, (inputs, outputs), request, encode);
        }
    });
}

/// A keyed call recalled or encoded: all but the memo's fast path.
#[inline]
fn record_in_full<const I: usize, const O: usize>(
    t: &mut Tracer,
    func: FuncId,
    ret: c_int,
    (start, end): (u64, u64),
    key: (&[u64; I], &[u64; O]),
    request: Option<u64>,
    encode: impl FnOnce(&mut Encoder, &[u64; I]),
) {
    let encode = |e: &mut Encoder| encode(e, key.0);
    let (memo, objects) = t.memo_and_objects();
    let recalled = memo.recall(func, ret, key, request, objects);
    let (terminal, new) = match recalled {
        Ok(r) if t.recorder.verify.is_none() => {
            r.enter(&mut t.objects);
            return t.append_recalled(func, r.terminal, start, end);
        }
        // MPIGRAM_VERIFY: encoded in full for the verification
        // stream, while the trace takes the memo's terminal.
        Ok(r) => (r.terminal, t.encode(func, ret, encode).new),
        Err(miss) => {
            let e = t.encode(func, ret, encode);
            let epoch = t.objects.epoch();
            t.memo_and_objects()
                .0
                .remember(func, ret, key, miss, epoch, e.terminal, e.created, e.comm);
            (e.terminal, e.new)
        }
    };
    t.append(func, terminal, new, start, end);
}

/// Records an MPI_Waitall that [`tracer::waitall_known`] knew before it
/// was made (recording statuses or not: `statuses`; `status_bytes` its
/// statuses array when it wrote them), by the Waitall memo's terminal, if
/// it succeeded and the statuses' bytes that go into its signature are
/// the memo's too. False records nothing: the caller records the call in
/// full ([`record_waitall`]), on the logged requests' handles.
///
/// [`tracer::waitall_known`]: crate::tracer::waitall_known
#[inline(always)]
pub fn record_known_waitall(
    ret: c_int,
    (start, end): (u64, u64),
    (statuses, status_bytes): (bool, &[u8]),
) -> bool {
    if ret != MPI_SUCCESS {
        return false;
    }
    // SAFETY: `waitall_known` needed MPI calls that cannot overlap.
    let recorded = unsafe {
        recording_alone(|t| {
            let waitall = &t.recorder.waitall;
            let status_bytes = signature_status_bytes(t, statuses, status_bytes);
            let Some(terminal) = waitall
                .terminal()
                .filter(|_| waitall.same_status_bytes(status_bytes))
            else {
                return false;
            };
            t.objects.complete_logged_requests();
            t.append_recalled(mpigram_mpispec::func::MPI_Waitall, terminal, start, end);
            true
        })
    };
    recorded == Some(true)
}

/// The bytes of a completion call's statuses array that go into its
/// signature: those MPI defines (a receive's), while the call records
/// statuses.
#[inline(always)]
fn signature_status_bytes<'a>(t: &Tracer, statuses: bool, status_bytes: &'a [u8]) -> &'a [u8] {
    match statuses && t.objects.logged_status_defined() {
        true => status_bytes,
        false => &[],
    }
}

/// Records an MPI_Waitall as [`record`] does, through the Waitall memo
/// (memo.rs): it returned `ret` on `count` requests whose values before the
/// call were `handles` (`None`: a NULL array), `statuses` says whether it
/// records their statuses, `status_bytes` are then its statuses array.
#[inline]
pub fn record_waitall(
    ret: c_int,
    (start, end): (u64, u64),
    count: c_int,
    handles: Option<&[u64]>,
    (statuses, status_bytes): (bool, &[u8]),
    encode: impl FnOnce(&mut Encoder),
) {
    let func = mpigram_mpispec::func::MPI_Waitall;
    recording(|t| {
        let status_bytes = signature_status_bytes(t, statuses, status_bytes);
        // Some(recalled terminal, if any) when the call completed exactly
        // the requests created since the last lookup.
        let logged = handles
            .filter(|_| ret == MPI_SUCCESS)
            .and_then(|h| t.objects.logged_request_ids(h))
            .map(|ids| {
                t.recorder
                    .waitall
                    .recall(count, statuses, status_bytes, ids)
            });
        let (terminal, new) = match logged {
            Some(Some(terminal)) if t.recorder.verify.is_none() => {
                t.objects.complete_logged_requests();
                t.append_recalled(func, terminal, start, end);
                return;
            }
            // MPIGRAM_VERIFY: encoded in full, as in `record_keyed`.
            Some(Some(terminal)) => (terminal, t.encode(func, ret, encode).new),
            Some(None) => {
                if let Some(ids) = handles.and_then(|h| t.objects.logged_request_ids(h)) {
                    t.recorder.waitall.learn(count, statuses, status_bytes, ids);
                }
                let e = t.encode(func, ret, encode);
                t.recorder.waitall.encoded(e.terminal);
                (e.terminal, e.new)
            }
            None => {
                t.recorder.waitall.forget();
                let e = t.encode(func, ret, encode);
                (e.terminal, e.new)
            }
        };
        t.append(func, terminal, new, start, end);
    });
}

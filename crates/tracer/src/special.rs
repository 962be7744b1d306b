//! Hand-written wrappers: initialisation and finalisation (which start and
//! end the tracer), MPI_Pcontrol (which switches recording), and the calls
//! that complete, start or free requests (which must read the request
//! handles before MPI overwrites them). Their parameters are encoded as
//! the generated function table (`mpigram_mpispec::FUNCS`) describes.

use crate::abi::*;
use crate::call::Call;
use crate::census;
use crate::encoder::Encoder;
use crate::front::{REQUEST, front};
use crate::ownership::{self, Claim};
use crate::tracer;
use mpigram_mpispec::{ConstSet, FuncId, HandleKind, func};
use mpigram_trace::Ending;
use std::cell::RefCell;
use std::ffi::{c_char, c_int};

thread_local! {
    /// Request handles of the current completion call, copied before the call.
    static SAVED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// Which requests of the current call completed.
    static DONE: RefCell<Vec<bool>> = const { RefCell::new(Vec::new()) };
}

/// Copies `n` request handles from `p` (NULL gives none).
///
/// # Safety
/// `p` is NULL or valid for `n` reads.
unsafe fn save_requests(p: *const HandleSlot, n: c_int) {
    SAVED.with_borrow_mut(|saved| {
        saved.clear();
        if !p.is_null() && n > 0 {
            // SAFETY: per the caller.
            unsafe { front().read_all(REQUEST, p, n as usize, saved) };
        }
    });
}

/// `*p`, or `default` for NULL.
///
/// # Safety
/// `p` is NULL or valid for reads.
unsafe fn read_or<T: Copy>(p: *const T, default: T) -> T {
    if p.is_null() {
        default
    } else {
        unsafe { p.read_unaligned() }
    }
}

/// The request at `p` (its value), or `default` for NULL.
///
/// # Safety
/// `p` is NULL or valid for reads.
unsafe fn request_or(p: *const HandleSlot, default: u64) -> u64 {
    if p.is_null() {
        default
    } else {
        unsafe { front().read(REQUEST, p, 0) }
    }
}

fn is_done(i: usize) -> bool {
    DONE.with_borrow(|done| done.get(i).copied().unwrap_or(false))
}

/// Which requests a call completed, from the handles MPI left behind: a
/// completed non-persistent request's handle becomes MPI_REQUEST_NULL. This
/// holds on success and on MPI_ERR_IN_STATUS alike. (Persistent requests
/// keep their handle; completing them frees nothing, so they need no mark.)
///
/// # Safety
/// `after` is NULL or valid for `saved.len()` reads.
unsafe fn mark_nulled(after: *const HandleSlot) {
    SAVED.with_borrow(|saved| {
        DONE.with_borrow_mut(|done| {
            done.clear();
            let (f, null) = (front(), front().request_null());
            done.extend(saved.iter().enumerate().map(|(i, &h)| {
                // SAFETY: i < saved.len(), per the caller.
                !after.is_null() && h != null && unsafe { f.read(REQUEST, after, i) } == null
            }));
        })
    });
}

/// Count of a "some" call's completed requests (MPI_UNDEFINED: none active).
fn completed_count(outcount: c_int) -> usize {
    if outcount == front().ints.MPI_UNDEFINED {
        0
    } else {
        outcount.max(0) as usize
    }
}

// --- start and end ---

/// Before the first PMPI_Init(_thread) or PMPI_Session_init: the tracer's
/// clock starts (the call is timed), and a traced rank announces itself
/// for the census, having claimed its place in the trace directory if
/// `claim_directory` (MPI_Init does, MPI_Session_init does not).
fn before_init(claim_directory: bool) -> Option<census::Announced> {
    tracer::with(|_| ());
    if crate::call::is_off() || !census::first_start() {
        return None;
    }
    let announced = crate::call::uncounted(|| {
        let claim = if claim_directory {
            let (rank, _) = census::launcher_rank_and_size();
            tracer::create_output_dir()
                .map_or(Claim::Unavailable, |dir| ownership::claim(&dir, rank))
        } else {
            Claim::Unavailable
        };
        census::announce(claim)
    });
    // If this is the first call, all the time since the tracer started is
    // its own (starting, claiming, announcing): no gap before the call.
    tracer::with(|t| {
        if t.recorder.calls == 0 {
            t.recorder.gaps_from(crate::clock::now());
        }
    });
    Some(announced)
}

/// PMPI_Init(_thread) succeeded at `thread_level`: the tracer learns its
/// place, counts the traced ranks, takes the trace directory for the run
/// (or, if another run is alive in it, stops tracing) and, if every rank
/// is traced, measures the clocks. The census is taken on a rank whose
/// recording an internal error turned off, too: the others count on it.
fn initialised(announced: Option<census::Announced>, thread_level: c_int) {
    let world_size = tracer::with(|t| {
        t.on_init();
        t.world_size()
    })
    .flatten();
    if let Some(announced) = announced {
        let outcome = crate::call::uncounted(|| census::count(announced, world_size));
        if outcome.refused {
            crate::call::disable();
        } else {
            tracer::with(|t| t.take_directory(&outcome));
        }
    }
    tracer::set_thread_level(thread_level);
    crate::clocksync::at_init();
}

/// The tracer's start-up in MPI_Init (the census, the clocks' alignment)
/// or in the first MPI_Session_init (the census) is over: the aggregated
/// gap before the next call, the computation that precedes it, is counted
/// from here, not from the end of PMPI_Init.
fn start_up_done() {
    tracer::with(|t| t.recorder.gaps_from(crate::clock::now()));
    crate::cpu_share::skip_gap();
}

/// # Safety
/// As `MPI_Session_init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Session_init(
    info: MPI_Info,
    errhandler: MPI_Errhandler,
    session: *mut HandleSlot,
) -> c_int {
    let real = crate::pmpi::MPI_Session_init();
    // A program of sessions (MPI 4) may never call MPI_Init: the ranks
    // count themselves at their first MPI_Session_init instead, so that
    // the tracer never agrees on a communicator with a rank that does not
    // run it. The directory is not claimed for the run here.
    let announced = before_init(false);
    let call = Call::begin(func::MPI_Session_init);
    let ret = unsafe { real(info, errhandler, session) };
    let end = crate::clock::now();
    let counted = announced
        .filter(|_| ret == MPI_SUCCESS)
        .map(|announced| crate::call::uncounted(|| census::count(announced, None)))
        .is_some();
    if let Some(call) = call {
        call.end_at(end, func::MPI_Session_init, ret, |e| unsafe {
            e.handle(HandleKind::Info, info);
            e.handle(HandleKind::Errhandler, errhandler);
            e.new_handle_out(HandleKind::Session, session.cast());
        });
        if counted {
            start_up_done();
        }
    }
    ret
}

/// # Safety
/// As `MPI_Init`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let real = crate::pmpi::MPI_Init();
    let announced = before_init(true);
    let call = Call::begin(func::MPI_Init);
    let ret = unsafe { real(argc, argv) };
    let end = crate::clock::now();
    if ret == MPI_SUCCESS {
        initialised(announced, front().ints.MPI_THREAD_SINGLE);
    }
    if let Some(call) = call {
        call.end_at(end, func::MPI_Init, ret, |e| {
            e.buffer(argc.cast_const().cast());
            e.buffer(argv.cast_const().cast());
        });
        start_up_done();
    }
    ret
}

/// # Safety
/// As `MPI_Init_thread`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let real = crate::pmpi::MPI_Init_thread();
    let announced = before_init(true);
    let call = Call::begin(func::MPI_Init_thread);
    let ret = unsafe { real(argc, argv, required, provided) };
    let end = crate::clock::now();
    if ret == MPI_SUCCESS {
        initialised(announced, unsafe {
            read_or(provided, front().ints.MPI_THREAD_MULTIPLE)
        });
    }
    if let Some(call) = call {
        call.end_at(end, func::MPI_Init_thread, ret, |e| unsafe {
            e.buffer(argc.cast_const().cast());
            e.buffer(argv.cast_const().cast());
            e.constant(ConstSet::ThreadLevel, required.into());
            e.constant_out(ConstSet::ThreadLevel, provided);
        });
        start_up_done();
    }
    ret
}

/// # Safety
/// As `MPI_Finalize`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    let real = crate::pmpi::MPI_Finalize();
    // The trace is merged across ranks before MPI is finalized, so the
    // call is recorded first: as returning MPI_SUCCESS, with no duration.
    if let Some(call) = Call::begin(func::MPI_Finalize) {
        let start = call.start();
        call.end_at(start, func::MPI_Finalize, MPI_SUCCESS, |_| {});
    }
    crate::agree::finish_all();
    crate::clocksync::at_finalize();
    crate::merge::at_finalize();
    // Inside MPI: the calls MPI makes to itself while it finalizes (MPICH's
    // ROMIO frees its keyvals, info and op there) are not the application's.
    crate::call::uncounted(|| unsafe { real() })
}

/// MPI_Abort does not return, and the launcher kills the other ranks: the
/// call is recorded and this rank's trace written (marked partial) first.
///
/// # Safety
/// As `MPI_Abort`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Abort(comm: MPI_Comm, errorcode: c_int) -> c_int {
    let real = crate::pmpi::MPI_Abort();
    if let Some(call) = Call::begin(func::MPI_Abort) {
        call.end(func::MPI_Abort, MPI_SUCCESS, |e| {
            e.handle(mpigram_mpispec::HandleKind::Comm, comm);
            e.int(errorcode.into());
        });
    }
    if !crate::call::is_off() {
        tracer::with(|t| t.write(Ending::Abort));
    }
    unsafe { real(comm, errorcode) }
}

/// `MPI_Pcontrol(level, ...)`: 0 pauses recording, any other level resumes
/// it. The variadic arguments are not read (the standard gives them no
/// meaning; on x86-64 a callee may ignore trailing variadic arguments).
///
/// # Safety
/// As `MPI_Pcontrol`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Pcontrol(level: c_int) -> c_int {
    let real = crate::pmpi::MPI_Pcontrol();
    if level != 0 {
        crate::call::resume();
    }
    let call = Call::begin(func::MPI_Pcontrol);
    let ret = unsafe { real(level) };
    if let Some(call) = call {
        call.end(func::MPI_Pcontrol, ret, |e| e.int(level.into()));
    }
    if level == 0 {
        crate::call::pause();
    }
    ret
}

// --- completion ---
//
// A request counts as completed by a call when MPI says so (the call
// succeeded and reported it: flag, index, indices), or when MPI set its
// handle to MPI_REQUEST_NULL (which also covers MPI_ERR_IN_STATUS).

/// # Safety
/// As `MPI_Wait`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Wait(request: *mut HandleSlot, status: *mut MPI_Status) -> c_int {
    let real = crate::pmpi::MPI_Wait();
    let Some(call) = Call::begin(func::MPI_Wait) else {
        return unsafe { real(request, status) };
    };
    let before = unsafe { request_or(request, front().request_null()) };
    let ret = unsafe { real(request, status) };
    call.end(func::MPI_Wait, ret, |e| unsafe {
        let done = e.ok() || request_or(request, before) == front().request_null();
        let request = e.completed_request(before, done);
        e.completion_status(status, Some(request));
    });
    ret
}

/// # Safety
/// As `MPI_Test`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Test(
    request: *mut HandleSlot,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Test();
    let Some(call) = Call::begin(func::MPI_Test) else {
        return unsafe { real(request, flag, status) };
    };
    let before = unsafe { request_or(request, front().request_null()) };
    let ret = unsafe { real(request, flag, status) };
    call.end(func::MPI_Test, ret, |e| unsafe {
        let flagged = e.read(flag.cast_const()).is_some_and(|f| f != 0);
        let null = front().request_null();
        let done = flagged || (before != null && request_or(request, before) == null);
        let request = e.completed_request(before, done);
        e.int_out(flag);
        if flagged {
            e.completion_status(status, Some(request))
        } else {
            e.status(std::ptr::null(), None)
        }
    });
    ret
}

/// Encodes the request array of a multiple-completion call: `reported(i)`
/// says whether a successful call reported the i-th as completed.
///
/// # Safety
/// `requests` is NULL or the call's array, valid for the saved count.
unsafe fn completed_array(
    e: &mut Encoder,
    requests: *const HandleSlot,
    reported: impl Fn(usize) -> bool,
) {
    unsafe { mark_nulled(requests) };
    let ok = e.ok();
    SAVED.with_borrow(|saved| {
        e.completed_requests((!requests.is_null()).then_some(saved), |i| {
            is_done(i) || (ok && reported(i))
        })
    });
}

/// # Safety
/// As `MPI_Waitall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    requests: *mut HandleSlot,
    statuses: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Waitall();
    // The fast path: the requests are exactly those created since the last
    // lookup, and the Waitall memo knows the call (a window of MPI_Isend,
    // a halo exchange). Their handles are compared where they are, not
    // copied: if the call is recorded in full after all, they are the
    // logged requests'.
    let known = Call::recalling_if(func::MPI_Waitall, |f| {
        !requests.is_null()
            // SAFETY: `requests` holds `count` handles; no other thread uses
            // the tracer (`recalling_if`).
            && unsafe {
                tracer::waitall_known(count, records_statuses(f, statuses), |i| {
                    f.read(REQUEST, requests, i)
                })
            }
    });
    if let Some(call) = known {
        return call.made(
            || unsafe { real(count, requests, statuses) },
            |&ret, times| {
                let recorded = records_statuses(front(), statuses);
                // SAFETY: MPI wrote the statuses, if it says so.
                let bytes = unsafe { written_statuses(ret, count, statuses, recorded) };
                if !crate::recording::record_known_waitall(ret, times, (recorded, bytes)) {
                    SAVED.with_borrow_mut(|saved| {
                        saved.clear();
                        tracer::with(|t| {
                            saved.extend(t.objects.requests().logged().map(|(_, h)| h))
                        });
                    });
                    unsafe { record_waitall_in_full(ret, times, count, requests, statuses) };
                }
            },
        );
    }
    let Some(call) = Call::begin(func::MPI_Waitall) else {
        return unsafe { real(count, requests, statuses) };
    };
    unsafe { save_requests(requests, count) };
    let ret = unsafe { real(count, requests, statuses) };
    call.end_with(|times| unsafe { record_waitall_in_full(ret, times, count, requests, statuses) });
    ret
}

/// Whether a completion call records statuses: its statuses array is not
/// NULL or MPI_STATUSES_IGNORE.
fn records_statuses(f: &crate::front::Front, statuses: *const MPI_Status) -> bool {
    !statuses.is_null() && statuses as usize != f.statuses_ignore
}

/// The bytes of the `count` statuses a call that returned `ret` wrote, if
/// it `recorded` them and succeeded; else none.
///
/// # Safety
/// `statuses` is valid for `count` statuses when the call wrote them.
unsafe fn written_statuses<'a>(
    ret: c_int,
    count: c_int,
    statuses: *const MPI_Status,
    recorded: bool,
) -> &'a [u8] {
    match recorded && ret == crate::abi::MPI_SUCCESS && count > 0 {
        // SAFETY: MPI wrote `count` statuses there.
        true => unsafe {
            std::slice::from_raw_parts(
                statuses.cast::<u8>(),
                count as usize * front().status_size(),
            )
        },
        false => &[],
    }
}

/// Records an MPI_Waitall in full (`recording::record_waitall`), from
/// `start` to `end` in clock ticks: its requests' values before the call
/// are in SAVED.
///
/// # Safety
/// As `MPI_Waitall`, after the call.
unsafe fn record_waitall_in_full(
    ret: c_int,
    times: (u64, u64),
    count: c_int,
    requests: *mut HandleSlot,
    statuses: *mut MPI_Status,
) {
    let recorded = records_statuses(front(), statuses);
    // SAFETY: per the caller.
    let status_bytes = unsafe { written_statuses(ret, count, statuses, recorded) };
    SAVED.with_borrow(|saved| {
        let handles = (!requests.is_null()).then_some(&saved[..]);
        crate::recording::record_waitall(
            ret,
            times,
            count,
            handles,
            (recorded, status_bytes),
            |e| unsafe {
                e.int(count.into());
                completed_array(e, requests, |_| true);
                e.request_statuses(statuses, 0..count.max(0) as usize);
            },
        );
    });
}

/// # Safety
/// As `MPI_Testall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    requests: *mut HandleSlot,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Testall();
    let Some(call) = Call::begin(func::MPI_Testall) else {
        return unsafe { real(count, requests, flag, statuses) };
    };
    unsafe { save_requests(requests, count) };
    let ret = unsafe { real(count, requests, flag, statuses) };
    call.end(func::MPI_Testall, ret, |e| unsafe {
        let flagged = e.read(flag.cast_const()).is_some_and(|f| f != 0);
        e.int(count.into());
        completed_array(e, requests, |_| flagged);
        e.int_out(flag);
        if flagged {
            e.request_statuses(statuses, 0..count.max(0) as usize);
        } else {
            e.array_len(None);
        }
    });
    ret
}

/// # Safety
/// As `MPI_Waitany`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    requests: *mut HandleSlot,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Waitany();
    let Some(call) = Call::begin(func::MPI_Waitany) else {
        return unsafe { real(count, requests, index, status) };
    };
    unsafe { save_requests(requests, count) };
    let ret = unsafe { real(count, requests, index, status) };
    call.end(func::MPI_Waitany, ret, |e| unsafe {
        let done = e
            .read(index.cast_const())
            .and_then(|i| usize::try_from(i).ok());
        e.int(count.into());
        completed_array(e, requests, |i| Some(i) == done);
        e.int_out(index);
        e.request_status(status, done);
    });
    ret
}

/// # Safety
/// As `MPI_Testany`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    requests: *mut HandleSlot,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Testany();
    let Some(call) = Call::begin(func::MPI_Testany) else {
        return unsafe { real(count, requests, index, flag, status) };
    };
    unsafe { save_requests(requests, count) };
    let ret = unsafe { real(count, requests, index, flag, status) };
    call.end(func::MPI_Testany, ret, |e| unsafe {
        let flagged = e.read(flag.cast_const()).is_some_and(|f| f != 0);
        let done = e
            .read(index.cast_const())
            .and_then(|i| usize::try_from(i).ok())
            .filter(|_| flagged);
        e.int(count.into());
        completed_array(e, requests, |i| Some(i) == done);
        e.int_out(index);
        e.int_out(flag);
        if flagged {
            e.request_status(status, done)
        } else {
            e.status(std::ptr::null(), None)
        }
    });
    ret
}

/// # Safety
/// As `MPI_Waitsome`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    requests: *mut HandleSlot,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Waitsome();
    unsafe {
        some_call(
            real,
            func::MPI_Waitsome,
            incount,
            requests,
            outcount,
            indices,
            statuses,
        )
    }
}

/// # Safety
/// As `MPI_Testsome`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    requests: *mut HandleSlot,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Testsome();
    unsafe {
        some_call(
            real,
            func::MPI_Testsome,
            incount,
            requests,
            outcount,
            indices,
            statuses,
        )
    }
}

type SomeFn =
    unsafe extern "C" fn(c_int, *mut HandleSlot, *mut c_int, *mut c_int, *mut MPI_Status) -> c_int;

/// MPI_Waitsome and MPI_Testsome: same parameters, same recording.
///
/// # Safety
/// As `MPI_Waitsome`.
unsafe fn some_call(
    real: SomeFn,
    func: FuncId,
    incount: c_int,
    requests: *mut HandleSlot,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    let Some(call) = Call::begin(func) else {
        return unsafe { real(incount, requests, outcount, indices, statuses) };
    };
    unsafe { save_requests(requests, incount) };
    let ret = unsafe { real(incount, requests, outcount, indices, statuses) };
    call.end(func, ret, |e| unsafe {
        some_completed(e, incount, requests, outcount, indices, statuses)
    });
    ret
}

/// The arguments of MPI_Waitsome and MPI_Testsome (same parameters).
///
/// # Safety
/// The arguments of a call that has returned.
unsafe fn some_completed(
    e: &mut Encoder,
    incount: c_int,
    requests: *const HandleSlot,
    outcount: *const c_int,
    indices: *const c_int,
    statuses: *const MPI_Status,
) {
    let n = unsafe { e.read(outcount) }.map_or(0, completed_count);
    let index = |k: usize| unsafe { indices.add(k).read_unaligned() }.max(0) as usize;
    let reported: Vec<usize> = if indices.is_null() {
        Vec::new()
    } else {
        (0..n).map(index).collect()
    };
    e.int(incount.into());
    unsafe { completed_array(e, requests, |i| reported.contains(&i)) };
    unsafe { e.int_out(outcount) };
    if e.ok() && !indices.is_null() {
        e.array_len(Some(n));
        for &i in &reported {
            e.int(i as i64);
        }
    } else {
        e.array_len(None);
    }
    unsafe { e.request_statuses(statuses, reported.iter().copied()) };
}

/// # Safety
/// As `MPI_Request_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Request_free(request: *mut HandleSlot) -> c_int {
    let real = crate::pmpi::MPI_Request_free();
    let Some(call) = Call::begin(func::MPI_Request_free) else {
        return unsafe { real(request) };
    };
    let before = unsafe { request_or(request, front().request_null()) };
    let ret = unsafe { real(request) };
    call.end(func::MPI_Request_free, ret, |e| e.freed_request(before));
    ret
}

/// # Safety
/// As `MPI_Start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Start(request: *mut HandleSlot) -> c_int {
    let real = crate::pmpi::MPI_Start();
    let Some(call) = Call::begin(func::MPI_Start) else {
        return unsafe { real(request) };
    };
    let before = unsafe { request_or(request, front().request_null()) };
    let ret = unsafe { real(request) };
    call.end(func::MPI_Start, ret, |e| e.request(Handle(before as usize)));
    ret
}

/// # Safety
/// As `MPI_Startall`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Startall(count: c_int, requests: *mut HandleSlot) -> c_int {
    let real = crate::pmpi::MPI_Startall();
    let Some(call) = Call::begin(func::MPI_Startall) else {
        return unsafe { real(count, requests) };
    };
    unsafe { save_requests(requests, count) };
    let ret = unsafe { real(count, requests) };
    call.end(func::MPI_Startall, ret, |e| {
        e.int(count.into());
        SAVED.with_borrow(|saved| {
            e.completed_requests((!requests.is_null()).then_some(saved), |_| false)
        });
    });
    ret
}

/// # Safety
/// As `MPI_Request_get_status`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Request_get_status(
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    let real = crate::pmpi::MPI_Request_get_status();
    let Some(call) = Call::begin(func::MPI_Request_get_status) else {
        return unsafe { real(request, flag, status) };
    };
    let ret = unsafe { real(request, flag, status) };
    call.end(func::MPI_Request_get_status, ret, |e| unsafe {
        let info = e.completed_request(front().request(request), false);
        let flagged = e.read(flag.cast_const()).is_some_and(|f| f != 0);
        e.int_out(flag);
        if flagged {
            e.completion_status(status, Some(info))
        } else {
            e.status(std::ptr::null(), None)
        }
    });
    ret
}

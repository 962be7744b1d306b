//! Functions the benchmark treats specially: those it does not call,
//! polling calls, MPI_Init, completion calls whose outcome is timing, and
//! calls that hand out memory.

use crate::render::{CallCode, const_expr};
use mpigram_mpispec::Args;
use mpigram_mpispec::{BufferRef, Signature, Value};

/// Functions the benchmark does not call, with the reason.
pub fn not_reproduced(name: &str) -> Option<&'static str> {
    if name.starts_with("MPI_T_") {
        return Some(
            "MPI tool interface: describes the MPI library, not the application's communication",
        );
    }
    match name {
        "MPI_Comm_spawn"
        | "MPI_Comm_spawn_multiple"
        | "MPI_Comm_connect"
        | "MPI_Comm_accept"
        | "MPI_Comm_join"
        | "MPI_Open_port"
        | "MPI_Close_port"
        | "MPI_Publish_name"
        | "MPI_Unpublish_name"
        | "MPI_Lookup_name" => {
            Some("dynamic processes: the other side is not part of the benchmark")
        }
        _ => None,
    }
}

/// Polling functions: the flag (or count) parameter that says whether
/// they found what they poll for.
pub fn poll_flag(name: &str) -> Option<&'static str> {
    match name {
        "MPI_Test"
        | "MPI_Testall"
        | "MPI_Testany"
        | "MPI_Iprobe"
        | "MPI_Improbe"
        | "MPI_Request_get_status"
        | "MPI_Win_test"
        | "MPI_Parrived" => Some("flag"),
        "MPI_Testsome" => Some("outcount"),
        _ => None,
    }
}

/// Whether a signature is a polling call that found nothing: the number
/// of those depends on timing, so the benchmark does not repeat them (it
/// polls until the recorded success instead).
pub fn is_empty_poll(sig: &Signature) -> bool {
    let a = Args::new(sig);
    poll_flag(a.func.name).is_some_and(|flag| a.int(flag) == Some(0))
}

/// The requests a Waitany, Testany, Waitsome or Testsome found complete.
pub fn completed_indices(a: &Args) -> Option<Vec<i64>> {
    match a.func.name {
        "MPI_Waitany" | "MPI_Testany" => {
            let i = a.int("index")?;
            Some(if i >= 0 { vec![i] } else { Vec::new() })
        }
        "MPI_Waitsome" | "MPI_Testsome" => a.ints("array_of_indices"),
        _ => None,
    }
}

/// MPI_Init and MPI_Init_thread: with the program's arguments, then the
/// benchmark's setup (its rank, the memory segments).
pub fn init(a: &Args) -> Option<CallCode> {
    // Fortran's MPI_INIT passes no arguments to the C one.
    let args = match a.value("argc") {
        Some(Value::Buffer(BufferRef::Null)) => "NULL, NULL",
        _ => "&program_argc, &program_argv",
    };
    let call = match a.func.name {
        "MPI_Init" => format!("MPI_Init({args})"),
        "MPI_Init_thread" => {
            let level = match a.value("required") {
                Some(Value::Const(set, c)) => const_expr(*set, *c),
                _ => "MPI_THREAD_SINGLE".to_owned(),
            };
            format!("MPI_Init_thread({args}, {level}, (void *)scratch[3])")
        }
        _ => return None,
    };
    Some(CallCode {
        call,
        post: vec!["setup();".into()],
        ..CallCode::default()
    })
}

/// Functions whose `void *` output is memory MPI allocated for the caller.
pub fn is_allocation(name: &str) -> bool {
    matches!(
        name,
        "MPI_Alloc_mem"
            | "MPI_Alloc_mem_c"
            | "MPI_Win_allocate"
            | "MPI_Win_allocate_c"
            | "MPI_Win_allocate_shared"
            | "MPI_Win_allocate_shared_c"
    )
}

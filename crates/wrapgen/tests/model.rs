//! The model of the real MPI standard data and overrides: encodings and C
//! prototypes of representative functions.

use mpigram_wrapgen::model::{Action, Enc, FuncModel, Scalar};
use mpigram_wrapgen::overrides::Overrides;
use mpigram_wrapgen::{APIS, OVERRIDES, checks, default_root, model, standard};

fn funcs() -> Vec<FuncModel> {
    let root = default_root();
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let o = Overrides::parse(&read(OVERRIDES)).unwrap();
    let functions = standard::load(&read(APIS), &o.legacy).unwrap();
    let funcs = model::build(&functions, &o).unwrap();
    o.check_all_used().unwrap();
    funcs
}

fn find<'a>(funcs: &'a [FuncModel], name: &str) -> &'a FuncModel {
    funcs
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn encs(f: &FuncModel) -> Vec<Enc> {
    f.params.iter().map(|p| p.action.enc().unwrap()).collect()
}

fn arr(e: Enc) -> Enc {
    Enc::Array(Box::new(e))
}

#[test]
fn the_table_holds_the_standard_and_the_legacy_functions_sorted() {
    let funcs = funcs();
    assert_eq!(funcs.len(), 700);
    assert_eq!(funcs.iter().filter(|f| f.legacy).count(), 10);
    assert_eq!(
        funcs
            .iter()
            .filter(|f| !f.legacy && f.name.ends_with("_c"))
            .count(),
        159
    );
    assert!(funcs.windows(2).all(|w| w[0].name < w[1].name));
}

#[test]
fn point_to_point_parameters_are_encoded_by_meaning() {
    let funcs = funcs();
    use Enc::*;
    let send = [Buffer, Int, Handle("Datatype"), Rank, Tag, Handle("Comm")];
    assert_eq!(encs(find(&funcs, "MPI_Send")), send);
    assert_eq!(
        encs(find(&funcs, "MPI_Isend")),
        [&send[..], &[Request]].concat()
    );
    assert_eq!(
        encs(find(&funcs, "MPI_Send_c")),
        send,
        "an MPI_Count count is an integer too"
    );
    assert_eq!(
        encs(find(&funcs, "MPI_File_read_at"))[1],
        Address,
        "a file offset"
    );
    assert_eq!(
        encs(find(&funcs, "MPI_Recv")),
        [
            Buffer,
            Int,
            Handle("Datatype"),
            Rank,
            Tag,
            Handle("Comm"),
            Status
        ]
    );
    assert_eq!(encs(find(&funcs, "MPI_Comm_rank")), [Handle("Comm"), Rank]);
    assert_eq!(
        encs(find(&funcs, "MPI_Group_rank")),
        [Handle("Group"), Int],
        "a rank in a group is absolute"
    );
}

#[test]
fn arrays_of_collectives_and_groups_have_element_encodings() {
    let funcs = funcs();
    use Enc::*;
    let v = encs(find(&funcs, "MPI_Alltoallv_c"));
    assert_eq!(v[1], arr(Int), "counts are integers, MPI_Count or int");
    assert_eq!(
        v[2],
        arr(Address),
        "displacements are addresses, MPI_Aint or int"
    );
    assert_eq!(
        encs(find(&funcs, "MPI_Alltoallv")),
        v,
        "both variants encode alike"
    );
    assert_eq!(encs(find(&funcs, "MPI_Group_incl"))[2], arr(Int));
    assert_eq!(encs(find(&funcs, "MPI_Group_range_incl"))[2], arr(arr(Int)));
    assert_eq!(
        encs(find(&funcs, "MPI_Comm_spawn_multiple"))[2],
        arr(arr(Str))
    );
    assert_eq!(
        encs(find(&funcs, "MPI_Alltoallw"))[3],
        arr(Handle("Datatype"))
    );
}

#[test]
fn hand_written_functions_keep_the_encodings_the_tracer_writes() {
    let funcs = funcs();
    use Enc::*;
    assert_eq!(encs(find(&funcs, "MPI_Init")), [Buffer, Buffer]);
    let level = || Const("ThreadLevel".into());
    assert_eq!(
        encs(find(&funcs, "MPI_Init_thread")),
        [Buffer, Buffer, level(), level()],
        "thread levels by name (special.rs: ConstSet::ThreadLevel)"
    );
    assert_eq!(encs(find(&funcs, "MPI_Wait")), [Request, Status]);
    assert_eq!(
        encs(find(&funcs, "MPI_Waitall")),
        [Int, arr(Request), arr(Status)]
    );
    assert_eq!(
        encs(find(&funcs, "MPI_Waitsome")),
        [Int, arr(Request), Int, arr(Int), arr(Status)]
    );
    let pcontrol = find(&funcs, "MPI_Pcontrol");
    assert!(pcontrol.variadic);
    assert_eq!(encs(pcontrol), [Int]);
}

#[test]
fn object_lifecycles_and_rank_communicators_come_from_data_and_overrides() {
    let funcs = funcs();
    assert_eq!(
        find(&funcs, "MPI_Comm_free").params[0].action,
        Action::Free("Comm")
    );
    assert_eq!(
        find(&funcs, "MPI_Type_commit").params[0].action,
        Action::Before(Scalar::Handle("Datatype"))
    );
    let ic = find(&funcs, "MPI_Intercomm_create");
    assert_eq!(
        ic.params[3].action,
        Action::Value(Scalar::Rank("peer_comm".into()))
    );
    assert_eq!(
        find(&funcs, "MPI_Put").params[3].action,
        Action::Value(Scalar::WinRank("win".into()))
    );
    // MPI_Address's result is a memory address: recorded like a buffer.
    assert_eq!(
        encs(find(&funcs, "MPI_Address")),
        [Enc::Buffer, Enc::Buffer]
    );
    assert_eq!(
        encs(find(&funcs, "MPI_Aint_diff")),
        [Enc::Buffer, Enc::Buffer]
    );
}

#[test]
fn prototypes_are_written_as_the_c_binding() {
    let funcs = funcs();
    assert_eq!(
        checks::prototype(find(&funcs, "MPI_Send"), ""),
        "int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);"
    );
    assert_eq!(
        checks::prototype(find(&funcs, "MPI_Group_range_incl"), "P"),
        "int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);"
    );
    assert_eq!(
        checks::prototype(find(&funcs, "MPI_Pcontrol"), ""),
        "int MPI_Pcontrol(const int level, ...);"
    );
    assert_eq!(
        checks::prototype(find(&funcs, "MPI_Wtime"), ""),
        "double MPI_Wtime(void);"
    );
    assert_eq!(
        checks::prototype(find(&funcs, "MPI_Op_create_c"), ""),
        "int MPI_Op_create_c(MPI_User_function_c *user_fn, int commute, MPI_Op *op);"
    );
}

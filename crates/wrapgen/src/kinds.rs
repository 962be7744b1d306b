//! The parameter kinds of the MPI standard's API (pympistandard's
//! `_kinds.py`): the C type of each, and what the value *is*, which decides
//! how mpigram encodes it.

/// What a parameter of a kind is, as far as encoding is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A number: count, index, flag, enum, colour, key.
    Number,
    /// A displacement, file offset or size in bytes.
    Address,
    /// An absolute memory address held in an MPI_Aint (MPI_Aint_add's base).
    Location,
    /// A rank (relative where it is a rank in the call's communicator).
    Rank,
    /// A message tag.
    Tag,
    /// An MPI object; the name is the `HandleKind` variant.
    Handle(&'static str),
    Request,
    Status,
    /// An address passed through: buffers, extra states, attribute values.
    Buffer,
    /// `void *` that is really a `void **` the call writes (MPI_Alloc_mem).
    BufferOut,
    Str,
    /// `char *[]`.
    StrArray,
    /// `char **[]`.
    StrArray2,
    /// MPI_Init's `char ***argv` / MPI_Info_create_env's `char *argv[]`.
    ArgList,
    /// A function pointer (the C type is the parameter's `func_type`).
    Callback,
    /// A Fortran status (`MPI_Fint *`, `MPI_F08_status *`): an address.
    FortranStatus,
    /// `...` of MPI_Pcontrol: not encodable.
    Varargs,
}

/// C type (normal, large-count `_c` variant) and class of a kind.
pub struct KindInfo {
    pub c_small: &'static str,
    pub c_large: Option<&'static str>,
    pub class: Class,
}

const fn k(c_small: &'static str, class: Class) -> KindInfo {
    KindInfo {
        c_small,
        c_large: None,
        class,
    }
}

const fn poly(c_small: &'static str, c_large: &'static str, class: Class) -> KindInfo {
    KindInfo {
        c_small,
        c_large: Some(c_large),
        class,
    }
}

/// The kind named `name`; `None` for a kind this table does not know
/// (a newer apis.json): wrapgen then stops rather than guess a C type.
pub fn kind(name: &str) -> Option<KindInfo> {
    use Class::*;
    Some(match name {
        "ACCESS_MODE"
        | "BLOCKLENGTH"
        | "DTYPE_NUM_ELEM_NNI_SMALL"
        | "ARGUMENT_COUNT"
        | "ARRAY_LENGTH"
        | "ARRAY_LENGTH_NNI"
        | "ARRAY_LENGTH_PI"
        | "ASSERT"
        | "BIND_TYPE"
        | "CAT_INDEX"
        | "COLOR"
        | "COMBINER"
        | "COMM_COMPARISON"
        | "COMM_SIZE"
        | "COMM_SIZE_PI"
        | "COORDINATE"
        | "COORDINATE_NNI"
        | "CVAR_INDEX"
        | "CVAR_INDEX_SPECIAL"
        | "DEGREE"
        | "DIMENSION"
        | "DISTRIB_ENUM"
        | "DTYPE_DISTRIBUTION"
        | "ENUM"
        | "ERROR_CLASS"
        | "ERROR_CODE"
        | "EVENT_INDEX"
        | "FILE_DESCRIPTOR"
        | "GENERIC_DTYPE_INT"
        | "GROUP_COMPARISON"
        | "INDEX"
        | "INFO_VALUE_LENGTH"
        | "KEY"
        | "KEY_INDEX"
        | "LOCK_TYPE"
        | "LOGICAL"
        | "LOGICAL_OPTIONAL"
        | "LOGICAL_BOOLEAN"
        | "MATH"
        | "NUM_DIMS"
        | "ORDER"
        | "PARTITION"
        | "PROCESS_GRID_SIZE"
        | "PROFILE_LEVEL"
        | "PVAR_CLASS"
        | "PVAR_INDEX"
        | "SOURCE_INDEX"
        | "SPLIT_TYPE"
        | "STRING_LENGTH"
        | "THREAD_LEVEL"
        | "TOOLENUM_INDEX"
        | "TOOLENUM_SIZE"
        | "TOOLS_NUM_ELEM_SMALL"
        | "TOOL_VAR_VALUE"
        | "TOOL_VAR_VERBOSITY"
        | "TOPOLOGY_TYPE"
        | "TYPECLASS"
        | "TYPECLASS_SIZE"
        | "UPDATE_MODE"
        | "UPDATE_NUMBER"
        | "VARIABLE_SCOPE"
        | "VERSION"
        | "WEIGHT" => k("int", Number),
        "KEYVAL" => k("int", Handle("Keyval")),
        "RANK" | "RANK_NNI" => k("int", Rank),
        "TAG" => k("int", Tag),
        // Displacements, addresses, file offsets and sizes in bytes.
        "ALLOC_MEM_NUM_BYTES" | "DISPLACEMENT" | "DISPLACEMENT_NNI" => k("MPI_Aint", Address),
        "LOCATION_SMALL" => k("MPI_Aint", Location),
        "RMA_DISPLACEMENT_NNI" | "WINDOW_SIZE" | "WIN_ATTACH_SIZE" => k("MPI_Aint", Address),
        "OFFSET" => k("MPI_Offset", Address),
        "NUM_BYTES" => k("MPI_Count", Address),
        "POLYDISPLACEMENT" | "POLYRMA_DISPLACEMENT" => poly("int", "MPI_Aint", Address),
        "POLYDISPLACEMENT_COUNT" | "POLYNUM_BYTES" | "POLYNUM_BYTES_NNI" => {
            poly("int", "MPI_Count", Address)
        }
        "POLYDISPLACEMENT_AINT_COUNT" | "POLYDISPOFFSET" | "POLYDTYPE_PACK_SIZE" => {
            poly("MPI_Aint", "MPI_Count", Address)
        }
        "POLYDTYPE_STRIDE_BYTES" | "POLYLOCATION" => poly("MPI_Aint", "MPI_Count", Address),
        // Counts of elements, whatever their C type.
        "GENERIC_DTYPE_COUNT" | "TOOLS_TICK_COUNT" | "XFER_NUM_ELEM" => k("MPI_Count", Number),
        "XFER_NUM_ELEM_NNI" | "DROPPED_COUNT" => k("MPI_Count", Number),
        "POLYDTYPE_NUM_ELEM" | "POLYDTYPE_NUM_ELEM_NNI" | "POLYDTYPE_NUM_ELEM_PI" => {
            poly("int", "MPI_Count", Number)
        }
        "POLYNUM_PARAM_VALUES"
        | "POLYXFER_NUM_ELEM"
        | "POLYXFER_NUM_ELEM_NNI"
        | "POLYTOOLS_NUM_ELEM" => poly("int", "MPI_Count", Number),
        "CALLBACK_SAFETY" => k("MPI_T_cb_safety", Number),
        "SOURCE_ORDERING" => k("MPI_T_source_order", Number),
        "F90_COMM" | "F90_DATATYPE" | "F90_ERRHANDLER" | "F90_FILE" | "F90_GROUP" | "F90_INFO"
        | "F90_MESSAGE" | "F90_OP" | "F90_REQUEST" | "F90_SESSION" | "F90_WIN" => {
            k("MPI_Fint", Number)
        }
        "COMMUNICATOR" => k("MPI_Comm", Handle("Comm")),
        "GROUP" => k("MPI_Group", Handle("Group")),
        "DATATYPE" => k("MPI_Datatype", Handle("Datatype")),
        "OPERATION" => k("MPI_Op", Handle("Op")),
        "INFO" => k("MPI_Info", Handle("Info")),
        "ERRHANDLER" => k("MPI_Errhandler", Handle("Errhandler")),
        "WINDOW" => k("MPI_Win", Handle("Win")),
        "FILE" => k("MPI_File", Handle("File")),
        "MESSAGE" => k("MPI_Message", Handle("Message")),
        "SESSION" => k("MPI_Session", Handle("Session")),
        "CVAR" => k("MPI_T_cvar_handle", Handle("CvarHandle")),
        "PVAR" => k("MPI_T_pvar_handle", Handle("PvarHandle")),
        "PVAR_SESSION" => k("MPI_T_pvar_session", Handle("PvarSession")),
        "TOOLS_ENUM" => k("MPI_T_enum", Handle("TEnum")),
        "EVENT_REGISTRATION" => k("MPI_T_event_registration", Handle("EventRegistration")),
        "EVENT_INSTANCE" => k("MPI_T_event_instance", Handle("EventInstance")),
        "REQUEST" => k("MPI_Request", Request),
        "STATUS" => k("MPI_Status", Status),
        "BUFFER" | "C_BUFFER3" | "C_BUFFER4" | "EXTRA_STATE" | "EXTRA_STATE2" | "ATTRIBUTE_VAL"
        | "ATTRIBUTE_VAL_10" | "LOGICAL_VOID" | "TOOL_MPI_OBJ" => k("void", Buffer),
        "C_BUFFER" | "C_BUFFER2" => k("void", BufferOut),
        "STRING" => k("char", Str),
        "STRING_ARRAY" => k("char", StrArray),
        "STRING_2DARRAY" => k("char", StrArray2),
        "ARGUMENT_LIST" => k("char", ArgList),
        "FUNCTION" | "FUNCTION_SMALL" | "POLYFUNCTION" => k("", Callback),
        "EVENT_CB_FUNCTION" => k("MPI_T_event_cb_function", Callback),
        "EVENT_FREE_CB_FUNCTION" => k("MPI_T_event_free_cb_function", Callback),
        "EVENT_DROP_CB_FUNCTION" => k("MPI_T_event_dropped_cb_function", Callback),
        "F90_STATUS" => k("MPI_Fint", FortranStatus),
        "F08_STATUS" => k("MPI_F08_status", FortranStatus),
        "VARARGS" => k("...", Varargs),
        "WALL_TIME" | "TICK_RESOLUTION" => k("double", Number),
        _ => return None,
    })
}

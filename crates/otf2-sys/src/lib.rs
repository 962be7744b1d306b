//! Raw bindings to the OTF2 library (OTF2 3.0, as Debian's
//! `libotf2-trace-dev` ships it): only the calls mpigram's OTF2 export
//! makes, written by hand from `otf2/*.h`. Constants are checked against
//! the headers by a test that compiles a C program printing them.
//!
//! Everything here is `unsafe` C; `mpigram-otf2` wraps it.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

pub type OTF2_ErrorCode = i32;
pub type OTF2_FileMode = u8;
pub type OTF2_FileSubstrate = u8;
pub type OTF2_Compression = u8;
pub type OTF2_FileType = u8;
pub type OTF2_FlushType = u8;
pub type OTF2_TimeStamp = u64;
pub type OTF2_StringRef = u32;
pub type OTF2_RegionRef = u32;
pub type OTF2_SystemTreeNodeRef = u32;
pub type OTF2_LocationGroupRef = u32;
pub type OTF2_LocationRef = u64;
pub type OTF2_GroupRef = u32;
pub type OTF2_CommRef = u32;
pub type OTF2_RegionRole = u8;
pub type OTF2_Paradigm = u8;
pub type OTF2_ParadigmClass = u8;
pub type OTF2_RegionFlag = u32;
pub type OTF2_LocationGroupType = u8;
pub type OTF2_LocationType = u8;
pub type OTF2_GroupType = u8;
pub type OTF2_GroupFlag = u32;
pub type OTF2_CommFlag = u32;
pub type OTF2_CollectiveOp = u8;

pub const OTF2_SUCCESS: OTF2_ErrorCode = 0;
pub const OTF2_FILEMODE_WRITE: OTF2_FileMode = 0;
pub const OTF2_SUBSTRATE_POSIX: OTF2_FileSubstrate = 1;
pub const OTF2_COMPRESSION_NONE: OTF2_Compression = 1;
pub const OTF2_FLUSH: OTF2_FlushType = 1;
pub const OTF2_UNDEFINED_UINT32: u32 = u32::MAX;
pub const OTF2_UNDEFINED_UINT64: u64 = u64::MAX;
pub const OTF2_UNDEFINED_STRING: OTF2_StringRef = u32::MAX;
pub const OTF2_UNDEFINED_SYSTEM_TREE_NODE: OTF2_SystemTreeNodeRef = u32::MAX;
pub const OTF2_UNDEFINED_LOCATION_GROUP: OTF2_LocationGroupRef = u32::MAX;
pub const OTF2_UNDEFINED_COMM: OTF2_CommRef = u32::MAX;
pub const OTF2_UNDEFINED_TIMESTAMP: OTF2_TimeStamp = u64::MAX;

pub const OTF2_REGION_ROLE_FUNCTION: OTF2_RegionRole = 1;
pub const OTF2_REGION_ROLE_BARRIER: OTF2_RegionRole = 15;
pub const OTF2_REGION_ROLE_COLL_ONE2ALL: OTF2_RegionRole = 23;
pub const OTF2_REGION_ROLE_COLL_ALL2ONE: OTF2_RegionRole = 24;
pub const OTF2_REGION_ROLE_COLL_ALL2ALL: OTF2_RegionRole = 25;
pub const OTF2_REGION_ROLE_COLL_OTHER: OTF2_RegionRole = 26;
pub const OTF2_REGION_ROLE_POINT2POINT: OTF2_RegionRole = 28;
pub const OTF2_PARADIGM_MPI: OTF2_Paradigm = 4;
pub const OTF2_PARADIGM_CLASS_PROCESS: OTF2_ParadigmClass = 0;
pub const OTF2_REGION_FLAG_NONE: OTF2_RegionFlag = 0;
pub const OTF2_LOCATION_GROUP_TYPE_PROCESS: OTF2_LocationGroupType = 1;
pub const OTF2_LOCATION_TYPE_CPU_THREAD: OTF2_LocationType = 1;
pub const OTF2_GROUP_TYPE_COMM_LOCATIONS: OTF2_GroupType = 4;
pub const OTF2_GROUP_TYPE_COMM_GROUP: OTF2_GroupType = 5;
pub const OTF2_GROUP_TYPE_COMM_SELF: OTF2_GroupType = 6;
pub const OTF2_GROUP_FLAG_NONE: OTF2_GroupFlag = 0;
pub const OTF2_COMM_FLAG_NONE: OTF2_CommFlag = 0;

pub const OTF2_COLLECTIVE_OP_BARRIER: OTF2_CollectiveOp = 0;
pub const OTF2_COLLECTIVE_OP_BCAST: OTF2_CollectiveOp = 1;
pub const OTF2_COLLECTIVE_OP_GATHER: OTF2_CollectiveOp = 2;
pub const OTF2_COLLECTIVE_OP_GATHERV: OTF2_CollectiveOp = 3;
pub const OTF2_COLLECTIVE_OP_SCATTER: OTF2_CollectiveOp = 4;
pub const OTF2_COLLECTIVE_OP_SCATTERV: OTF2_CollectiveOp = 5;
pub const OTF2_COLLECTIVE_OP_ALLGATHER: OTF2_CollectiveOp = 6;
pub const OTF2_COLLECTIVE_OP_ALLGATHERV: OTF2_CollectiveOp = 7;
pub const OTF2_COLLECTIVE_OP_ALLTOALL: OTF2_CollectiveOp = 8;
pub const OTF2_COLLECTIVE_OP_ALLTOALLV: OTF2_CollectiveOp = 9;
pub const OTF2_COLLECTIVE_OP_ALLTOALLW: OTF2_CollectiveOp = 10;
pub const OTF2_COLLECTIVE_OP_ALLREDUCE: OTF2_CollectiveOp = 11;
pub const OTF2_COLLECTIVE_OP_REDUCE: OTF2_CollectiveOp = 12;
pub const OTF2_COLLECTIVE_OP_REDUCE_SCATTER: OTF2_CollectiveOp = 13;
pub const OTF2_COLLECTIVE_OP_SCAN: OTF2_CollectiveOp = 14;
pub const OTF2_COLLECTIVE_OP_EXSCAN: OTF2_CollectiveOp = 15;
pub const OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK: OTF2_CollectiveOp = 16;
pub const OTF2_COLLECTIVE_OP_CREATE_HANDLE: OTF2_CollectiveOp = 17;
pub const OTF2_COLLECTIVE_OP_DESTROY_HANDLE: OTF2_CollectiveOp = 18;
pub const OTF2_COLLECTIVE_ROOT_NONE: u32 = u32::MAX;

#[repr(C)]
pub struct OTF2_Archive {
    _private: [u8; 0],
}
#[repr(C)]
pub struct OTF2_EvtWriter {
    _private: [u8; 0],
}
#[repr(C)]
pub struct OTF2_DefWriter {
    _private: [u8; 0],
}
#[repr(C)]
pub struct OTF2_GlobalDefWriter {
    _private: [u8; 0],
}
#[repr(C)]
pub struct OTF2_AttributeList {
    _private: [u8; 0],
}

pub type OTF2_PreFlushCallback = unsafe extern "C" fn(
    user_data: *mut c_void,
    file_type: OTF2_FileType,
    location: OTF2_LocationRef,
    caller_data: *mut c_void,
    final_: bool,
) -> OTF2_FlushType;
pub type OTF2_PostFlushCallback = unsafe extern "C" fn(
    user_data: *mut c_void,
    file_type: OTF2_FileType,
    location: OTF2_LocationRef,
) -> OTF2_TimeStamp;

#[repr(C)]
pub struct OTF2_FlushCallbacks {
    pub otf2_pre_flush: Option<OTF2_PreFlushCallback>,
    pub otf2_post_flush: Option<OTF2_PostFlushCallback>,
}

unsafe extern "C" {
    pub fn OTF2_Error_GetName(error_code: OTF2_ErrorCode) -> *const c_char;
    pub fn OTF2_Error_GetDescription(error_code: OTF2_ErrorCode) -> *const c_char;

    pub fn OTF2_Archive_Open(
        archive_path: *const c_char,
        archive_name: *const c_char,
        file_mode: OTF2_FileMode,
        chunk_size_events: u64,
        chunk_size_defs: u64,
        file_substrate: OTF2_FileSubstrate,
        compression: OTF2_Compression,
    ) -> *mut OTF2_Archive;
    pub fn OTF2_Archive_Close(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetCreator(
        archive: *mut OTF2_Archive,
        creator: *const c_char,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetDescription(
        archive: *mut OTF2_Archive,
        description: *const c_char,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetFlushCallbacks(
        archive: *mut OTF2_Archive,
        flush_callbacks: *const OTF2_FlushCallbacks,
        flush_data: *mut c_void,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_SetSerialCollectiveCallbacks(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_OpenEvtFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_CloseEvtFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_OpenDefFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_CloseDefFiles(archive: *mut OTF2_Archive) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetEvtWriter(
        archive: *mut OTF2_Archive,
        location: OTF2_LocationRef,
    ) -> *mut OTF2_EvtWriter;
    pub fn OTF2_Archive_CloseEvtWriter(
        archive: *mut OTF2_Archive,
        writer: *mut OTF2_EvtWriter,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetDefWriter(
        archive: *mut OTF2_Archive,
        location: OTF2_LocationRef,
    ) -> *mut OTF2_DefWriter;
    pub fn OTF2_Archive_CloseDefWriter(
        archive: *mut OTF2_Archive,
        writer: *mut OTF2_DefWriter,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_Archive_GetGlobalDefWriter(archive: *mut OTF2_Archive)
    -> *mut OTF2_GlobalDefWriter;

    pub fn OTF2_GlobalDefWriter_WriteClockProperties(
        writer: *mut OTF2_GlobalDefWriter,
        timer_resolution: u64,
        global_offset: u64,
        trace_length: u64,
        realtime_timestamp: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteParadigm(
        writer: *mut OTF2_GlobalDefWriter,
        paradigm: OTF2_Paradigm,
        name: OTF2_StringRef,
        paradigm_class: OTF2_ParadigmClass,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteString(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_StringRef,
        string: *const c_char,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteSystemTreeNode(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_SystemTreeNodeRef,
        name: OTF2_StringRef,
        class_name: OTF2_StringRef,
        parent: OTF2_SystemTreeNodeRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocationGroup(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_LocationGroupRef,
        name: OTF2_StringRef,
        location_group_type: OTF2_LocationGroupType,
        system_tree_parent: OTF2_SystemTreeNodeRef,
        creating_location_group: OTF2_LocationGroupRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocation(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_LocationRef,
        name: OTF2_StringRef,
        location_type: OTF2_LocationType,
        number_of_events: u64,
        location_group: OTF2_LocationGroupRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteRegion(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_RegionRef,
        name: OTF2_StringRef,
        canonical_name: OTF2_StringRef,
        description: OTF2_StringRef,
        region_role: OTF2_RegionRole,
        paradigm: OTF2_Paradigm,
        region_flags: OTF2_RegionFlag,
        source_file: OTF2_StringRef,
        begin_line_number: u32,
        end_line_number: u32,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteGroup(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_GroupRef,
        name: OTF2_StringRef,
        group_type: OTF2_GroupType,
        paradigm: OTF2_Paradigm,
        group_flags: OTF2_GroupFlag,
        number_of_members: u32,
        members: *const u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteComm(
        writer: *mut OTF2_GlobalDefWriter,
        self_: OTF2_CommRef,
        name: OTF2_StringRef,
        group: OTF2_GroupRef,
        parent: OTF2_CommRef,
        flags: OTF2_CommFlag,
    ) -> OTF2_ErrorCode;

    pub fn OTF2_EvtWriter_Enter(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        region: OTF2_RegionRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_Leave(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        region: OTF2_RegionRef,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiSend(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        receiver: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIsend(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        receiver: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIsendComplete(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIrecvRequest(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiRecv(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        sender: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiIrecv(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        sender: u32,
        communicator: OTF2_CommRef,
        msg_tag: u32,
        msg_length: u64,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiCollectiveBegin(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
    ) -> OTF2_ErrorCode;
    pub fn OTF2_EvtWriter_MpiCollectiveEnd(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        collective_op: OTF2_CollectiveOp,
        communicator: OTF2_CommRef,
        root: u32,
        size_sent: u64,
        size_received: u64,
    ) -> OTF2_ErrorCode;
    /// Since OTF2 3.0.
    pub fn OTF2_EvtWriter_NonBlockingCollectiveRequest(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        request_id: u64,
    ) -> OTF2_ErrorCode;
    /// Since OTF2 3.0.
    pub fn OTF2_EvtWriter_NonBlockingCollectiveComplete(
        writer: *mut OTF2_EvtWriter,
        attribute_list: *mut OTF2_AttributeList,
        time: OTF2_TimeStamp,
        collective_op: OTF2_CollectiveOp,
        communicator: OTF2_CommRef,
        root: u32,
        size_sent: u64,
        size_received: u64,
        request_id: u64,
    ) -> OTF2_ErrorCode;
}

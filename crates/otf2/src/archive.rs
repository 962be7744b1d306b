//! A safe writer of OTF2 archives over `mpigram-otf2-sys`: one archive,
//! its global definitions, and one event writer at a time per location.
//! Every OTF2 call's error code becomes an [`Otf2Error`] naming the call.

use mpigram_otf2_sys as sys;
use rustc_hash::FxHashMap;
use std::ffi::{CStr, CString, c_void};
use std::path::Path;
use std::ptr;

/// A failed OTF2 call.
#[derive(Debug, thiserror::Error)]
#[error("OTF2: {call} failed: {reason}")]
pub struct Otf2Error {
    pub call: &'static str,
    pub reason: String,
}

fn check(code: sys::OTF2_ErrorCode, call: &'static str) -> Result<(), Otf2Error> {
    if code == sys::OTF2_SUCCESS {
        return Ok(());
    }
    // SAFETY: OTF2 returns static strings for every error code.
    let text = |s: *const std::ffi::c_char| {
        if s.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        }
    };
    let (name, description) = unsafe {
        (
            text(sys::OTF2_Error_GetName(code)),
            text(sys::OTF2_Error_GetDescription(code)),
        )
    };
    Err(Otf2Error {
        call,
        reason: format!("{name} ({description})"),
    })
}

fn not_null<T>(p: *mut T, call: &'static str) -> Result<*mut T, Otf2Error> {
    if p.is_null() {
        Err(Otf2Error {
            call,
            reason: "it returned NULL".into(),
        })
    } else {
        Ok(p)
    }
}

fn c_string(s: &str) -> CString {
    // Names come from the trace; an interior NUL cannot be written.
    CString::new(s.replace('\0', "?")).expect("NULs replaced")
}

/// Buffers are flushed to the files whenever full, without a flush
/// record in the trace (no post-flush callback).
unsafe extern "C" fn pre_flush(
    _user_data: *mut c_void,
    _file_type: sys::OTF2_FileType,
    _location: sys::OTF2_LocationRef,
    _caller_data: *mut c_void,
    _final: bool,
) -> sys::OTF2_FlushType {
    sys::OTF2_FLUSH
}

static FLUSH_CALLBACKS: sys::OTF2_FlushCallbacks = sys::OTF2_FlushCallbacks {
    otf2_pre_flush: Some(pre_flush),
    otf2_post_flush: None,
};

/// An OTF2 archive being written: `DIR/NAME.otf2` (the anchor file),
/// `DIR/NAME.def` and `DIR/NAME/` (a definition and an event file per
/// location).
pub struct Archive {
    raw: *mut sys::OTF2_Archive,
    defs: *mut sys::OTF2_GlobalDefWriter,
    strings: FxHashMap<String, u32>,
}

impl Archive {
    pub fn create(dir: &Path, name: &str, creator: &str) -> Result<Archive, Otf2Error> {
        let path = c_string(&dir.to_string_lossy());
        let name = c_string(name);
        // SAFETY: the strings outlive the call; OTF2 copies them.
        let raw = unsafe {
            sys::OTF2_Archive_Open(
                path.as_ptr(),
                name.as_ptr(),
                sys::OTF2_FILEMODE_WRITE,
                1 << 20, // event chunk size
                4 << 20, // definition chunk size
                sys::OTF2_SUBSTRATE_POSIX,
                sys::OTF2_COMPRESSION_NONE,
            )
        };
        let raw = not_null(raw, "OTF2_Archive_Open")?;
        let mut archive = Archive {
            raw,
            defs: ptr::null_mut(),
            strings: FxHashMap::default(),
        };
        let creator = c_string(creator);
        // SAFETY: `raw` is an open archive; the callbacks are 'static.
        unsafe {
            check(
                sys::OTF2_Archive_SetFlushCallbacks(raw, &FLUSH_CALLBACKS, ptr::null_mut()),
                "OTF2_Archive_SetFlushCallbacks",
            )?;
            check(
                sys::OTF2_Archive_SetSerialCollectiveCallbacks(raw),
                "OTF2_Archive_SetSerialCollectiveCallbacks",
            )?;
            check(
                sys::OTF2_Archive_SetCreator(raw, creator.as_ptr()),
                "OTF2_Archive_SetCreator",
            )?;
            check(
                sys::OTF2_Archive_OpenEvtFiles(raw),
                "OTF2_Archive_OpenEvtFiles",
            )?;
            archive.defs = not_null(
                sys::OTF2_Archive_GetGlobalDefWriter(raw),
                "OTF2_Archive_GetGlobalDefWriter",
            )?;
        }
        Ok(archive)
    }

    /// The event writer of `location`; events must be written in time order.
    pub fn events(&mut self, location: u64) -> Result<EventWriter<'_>, Otf2Error> {
        // SAFETY: `self.raw` is open; the writer is closed by `EventWriter::close`.
        let raw = unsafe { sys::OTF2_Archive_GetEvtWriter(self.raw, location) };
        Ok(EventWriter {
            archive: self,
            raw: not_null(raw, "OTF2_Archive_GetEvtWriter")?,
            events: 0,
            last: 0,
        })
    }

    /// Clock properties: ticks per second, the first tick, the ticks the
    /// trace spans. They must be the first global definition.
    pub fn clock(&mut self, resolution: u64, offset: u64, length: u64) -> Result<(), Otf2Error> {
        // SAFETY: `self.defs` is the archive's global definition writer.
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteClockProperties(
                    self.defs,
                    resolution,
                    offset,
                    length,
                    sys::OTF2_UNDEFINED_TIMESTAMP,
                )
            },
            "OTF2_GlobalDefWriter_WriteClockProperties",
        )
    }

    /// The reference of string `s`, defined on first use.
    pub fn string(&mut self, s: &str) -> Result<u32, Otf2Error> {
        if let Some(&id) = self.strings.get(s) {
            return Ok(id);
        }
        let id = self.strings.len() as u32;
        let c = c_string(s);
        // SAFETY: `c` outlives the call.
        check(
            unsafe { sys::OTF2_GlobalDefWriter_WriteString(self.defs, id, c.as_ptr()) },
            "OTF2_GlobalDefWriter_WriteString",
        )?;
        self.strings.insert(s.to_owned(), id);
        Ok(id)
    }

    /// The MPI paradigm's definition.
    pub fn mpi_paradigm(&mut self) -> Result<(), Otf2Error> {
        let name = self.string("MPI")?;
        // SAFETY (here and below): `self.defs` is the archive's global
        // definition writer; arrays outlive the calls.
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteParadigm(
                    self.defs,
                    sys::OTF2_PARADIGM_MPI,
                    name,
                    sys::OTF2_PARADIGM_CLASS_PROCESS,
                )
            },
            "OTF2_GlobalDefWriter_WriteParadigm",
        )
    }

    /// A node of the system tree (`parent`: None for the root).
    pub fn system_tree_node(
        &mut self,
        id: u32,
        name: &str,
        class: &str,
        parent: Option<u32>,
    ) -> Result<(), Otf2Error> {
        let (name, class) = (self.string(name)?, self.string(class)?);
        let parent = parent.unwrap_or(sys::OTF2_UNDEFINED_SYSTEM_TREE_NODE);
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteSystemTreeNode(self.defs, id, name, class, parent)
            },
            "OTF2_GlobalDefWriter_WriteSystemTreeNode",
        )
    }

    /// A process (location group) on system tree node `node`.
    pub fn process(&mut self, id: u32, name: &str, node: u32) -> Result<(), Otf2Error> {
        let name = self.string(name)?;
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteLocationGroup(
                    self.defs,
                    id,
                    name,
                    sys::OTF2_LOCATION_GROUP_TYPE_PROCESS,
                    node,
                    sys::OTF2_UNDEFINED_LOCATION_GROUP,
                )
            },
            "OTF2_GlobalDefWriter_WriteLocationGroup",
        )
    }

    /// A thread (location) of process `group` that has `events` events.
    pub fn thread(
        &mut self,
        id: u64,
        name: &str,
        events: u64,
        group: u32,
    ) -> Result<(), Otf2Error> {
        let name = self.string(name)?;
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteLocation(
                    self.defs,
                    id,
                    name,
                    sys::OTF2_LOCATION_TYPE_CPU_THREAD,
                    events,
                    group,
                )
            },
            "OTF2_GlobalDefWriter_WriteLocation",
        )
    }

    /// A region of the MPI paradigm.
    pub fn mpi_region(
        &mut self,
        id: u32,
        name: &str,
        role: sys::OTF2_RegionRole,
    ) -> Result<(), Otf2Error> {
        let name = self.string(name)?;
        let description = self.string("MPI function")?;
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteRegion(
                    self.defs,
                    id,
                    name,
                    name,
                    description,
                    role,
                    sys::OTF2_PARADIGM_MPI,
                    sys::OTF2_REGION_FLAG_NONE,
                    sys::OTF2_UNDEFINED_STRING,
                    0,
                    0,
                )
            },
            "OTF2_GlobalDefWriter_WriteRegion",
        )
    }

    /// A group of the MPI paradigm: of locations (`OTF2_GROUP_TYPE_COMM_LOCATIONS`),
    /// of a communicator's members as ranks in that group, or MPI_COMM_SELF's.
    pub fn mpi_group(
        &mut self,
        id: u32,
        name: &str,
        kind: sys::OTF2_GroupType,
        members: &[u64],
    ) -> Result<(), Otf2Error> {
        let name = self.string(name)?;
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteGroup(
                    self.defs,
                    id,
                    name,
                    kind,
                    sys::OTF2_PARADIGM_MPI,
                    sys::OTF2_GROUP_FLAG_NONE,
                    members.len() as u32,
                    members.as_ptr(),
                )
            },
            "OTF2_GlobalDefWriter_WriteGroup",
        )
    }

    /// A communicator over `group`.
    pub fn comm(&mut self, id: u32, name: &str, group: u32) -> Result<(), Otf2Error> {
        let name = self.string(name)?;
        check(
            unsafe {
                sys::OTF2_GlobalDefWriter_WriteComm(
                    self.defs,
                    id,
                    name,
                    group,
                    sys::OTF2_UNDEFINED_COMM,
                    sys::OTF2_COMM_FLAG_NONE,
                )
            },
            "OTF2_GlobalDefWriter_WriteComm",
        )
    }

    /// Writes the (empty) local definitions of `locations` and closes the
    /// archive.
    pub fn close(mut self, locations: &[u64]) -> Result<(), Otf2Error> {
        let raw = std::mem::replace(&mut self.raw, ptr::null_mut());
        // SAFETY: `raw` is open; every writer is closed before the archive.
        unsafe {
            check(
                sys::OTF2_Archive_CloseEvtFiles(raw),
                "OTF2_Archive_CloseEvtFiles",
            )?;
            check(
                sys::OTF2_Archive_OpenDefFiles(raw),
                "OTF2_Archive_OpenDefFiles",
            )?;
            for &location in locations {
                let w = not_null(
                    sys::OTF2_Archive_GetDefWriter(raw, location),
                    "OTF2_Archive_GetDefWriter",
                )?;
                check(
                    sys::OTF2_Archive_CloseDefWriter(raw, w),
                    "OTF2_Archive_CloseDefWriter",
                )?;
            }
            check(
                sys::OTF2_Archive_CloseDefFiles(raw),
                "OTF2_Archive_CloseDefFiles",
            )?;
            check(sys::OTF2_Archive_Close(raw), "OTF2_Archive_Close")
        }
    }
}

impl Drop for Archive {
    fn drop(&mut self) {
        if !self.raw.is_null() {
            // SAFETY: an archive abandoned on an error is still closed once.
            unsafe { sys::OTF2_Archive_Close(self.raw) };
        }
    }
}

/// The events of one location, in time order: a timestamp earlier than
/// the last one written is written at the last one.
pub struct EventWriter<'a> {
    archive: &'a mut Archive,
    raw: *mut sys::OTF2_EvtWriter,
    events: u64,
    last: u64,
}

/// Writes one event: the writer, no attributes, the (monotonic) time.
macro_rules! event {
    ($self:ident, $f:ident, $t:expr $(, $arg:expr)*) => {{
        let time = $t.max($self.last);
        $self.last = time;
        $self.events += 1;
        // SAFETY: `raw` is an open event writer.
        check(
            unsafe { sys::$f($self.raw, ptr::null_mut(), time $(, $arg)*) },
            stringify!($f),
        )
    }};
}

impl EventWriter<'_> {
    pub fn enter(&mut self, time: u64, region: u32) -> Result<(), Otf2Error> {
        event!(self, OTF2_EvtWriter_Enter, time, region)
    }

    pub fn leave(&mut self, time: u64, region: u32) -> Result<(), Otf2Error> {
        event!(self, OTF2_EvtWriter_Leave, time, region)
    }

    pub fn send(&mut self, time: u64, m: &Message) -> Result<(), Otf2Error> {
        event!(
            self,
            OTF2_EvtWriter_MpiSend,
            time,
            m.peer,
            m.comm,
            m.tag,
            m.bytes
        )
    }

    pub fn isend(&mut self, time: u64, m: &Message, request: u64) -> Result<(), Otf2Error> {
        let (peer, comm, tag, bytes) = (m.peer, m.comm, m.tag, m.bytes);
        event!(
            self,
            OTF2_EvtWriter_MpiIsend,
            time,
            peer,
            comm,
            tag,
            bytes,
            request
        )
    }

    pub fn isend_complete(&mut self, time: u64, request: u64) -> Result<(), Otf2Error> {
        event!(self, OTF2_EvtWriter_MpiIsendComplete, time, request)
    }

    pub fn irecv_request(&mut self, time: u64, request: u64) -> Result<(), Otf2Error> {
        event!(self, OTF2_EvtWriter_MpiIrecvRequest, time, request)
    }

    pub fn recv(&mut self, time: u64, m: &Message) -> Result<(), Otf2Error> {
        event!(
            self,
            OTF2_EvtWriter_MpiRecv,
            time,
            m.peer,
            m.comm,
            m.tag,
            m.bytes
        )
    }

    pub fn irecv(&mut self, time: u64, m: &Message, request: u64) -> Result<(), Otf2Error> {
        let (peer, comm, tag, bytes) = (m.peer, m.comm, m.tag, m.bytes);
        event!(
            self,
            OTF2_EvtWriter_MpiIrecv,
            time,
            peer,
            comm,
            tag,
            bytes,
            request
        )
    }

    pub fn collective_begin(&mut self, time: u64) -> Result<(), Otf2Error> {
        event!(self, OTF2_EvtWriter_MpiCollectiveBegin, time)
    }

    pub fn collective_end(&mut self, time: u64, e: &CollectiveEnd) -> Result<(), Otf2Error> {
        let (op, comm, root, sent, received) = (e.op, e.comm, e.root, e.sent, e.received);
        event!(
            self,
            OTF2_EvtWriter_MpiCollectiveEnd,
            time,
            op,
            comm,
            root,
            sent,
            received
        )
    }

    /// A non-blocking collective operation (or a persistent one's start)
    /// was posted as request `request`.
    pub fn collective_request(&mut self, time: u64, request: u64) -> Result<(), Otf2Error> {
        event!(
            self,
            OTF2_EvtWriter_NonBlockingCollectiveRequest,
            time,
            request
        )
    }

    /// The non-blocking collective operation of request `request` completed.
    pub fn collective_complete(
        &mut self,
        time: u64,
        e: &CollectiveEnd,
        request: u64,
    ) -> Result<(), Otf2Error> {
        let (op, comm, root, sent, received) = (e.op, e.comm, e.root, e.sent, e.received);
        event!(
            self,
            OTF2_EvtWriter_NonBlockingCollectiveComplete,
            time,
            op,
            comm,
            root,
            sent,
            received,
            request
        )
    }

    /// Closes the writer; returns the number of events written.
    pub fn close(self) -> Result<u64, Otf2Error> {
        // SAFETY: the writer belongs to the archive and is closed once.
        check(
            unsafe { sys::OTF2_Archive_CloseEvtWriter(self.archive.raw, self.raw) },
            "OTF2_Archive_CloseEvtWriter",
        )?;
        Ok(self.events)
    }
}

/// A message record's fields: the peer's rank in the communicator, the
/// communicator's reference, the tag and the length in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    pub peer: u32,
    pub comm: u32,
    pub tag: u32,
    pub bytes: u64,
}

/// An MPI_COLLECTIVE_END (or NON_BLOCKING_COLLECTIVE_COMPLETE) record's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectiveEnd {
    pub op: sys::OTF2_CollectiveOp,
    pub comm: u32,
    /// The root's rank in the communicator, or `OTF2_COLLECTIVE_ROOT_NONE`.
    pub root: u32,
    pub sent: u64,
    pub received: u64,
}

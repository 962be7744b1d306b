//! Writing container files: sections stream to a temporary file that replaces the destination
//! atomically when finished, so a reader never sees a half-written file under the final name.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::codec::{Codec, encode_into};
use crate::compact;
use crate::error::{Error, ErrorKind, SectionRef};
use crate::layout::Entry;

/// zstd level used unless [`TraceWriter::set_zstd_level`] says otherwise.
const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// One section to write with [`write_file`] or [`to_bytes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewSection<'a> {
    /// Section kind (an open registry: see `docs/format.md`).
    pub kind: u32,
    /// Instance of that kind (rank, stream, ...); (kind, index) is unique in a file.
    pub index: u32,
    /// The decoded payload.
    pub data: &'a [u8],
    /// How to store it.
    pub codec: Codec,
}

impl<'a> From<(u32, u32, &'a [u8], Codec)> for NewSection<'a> {
    fn from((kind, index, data, codec): (u32, u32, &'a [u8], Codec)) -> Self {
        NewSection {
            kind,
            index,
            data,
            codec,
        }
    }
}

/// Lays out the version, payloads and table on any sink; shared by the file writer and the
/// in-memory encoder so there is one implementation of the layout.
struct Assembler<W: Write> {
    out: W,
    name: String,
    pos: u64,
    file_kind: u32,
    flags: u32,
    zstd_level: i32,
    entries: Vec<Entry>,
    seen: HashMap<(u32, u32), usize>,
    /// Set after an I/O error, when the sink's content is unknown.
    broken: bool,
}

impl<W: Write> Assembler<W> {
    fn start(mut out: W, name: String, file_kind: u32) -> Result<Self, Error> {
        out.write_all(&compact::prefix())
            .map_err(|e| Error::new(&name, ErrorKind::Io(e)))?;
        Ok(Assembler {
            out,
            name,
            pos: compact::PREFIX_LEN as u64,
            file_kind,
            flags: 0,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            entries: Vec::new(),
            seen: HashMap::new(),
            broken: false,
        })
    }

    fn io_error(&mut self, e: io::Error) -> Error {
        self.broken = true;
        Error::new(&self.name, ErrorKind::Io(e))
    }

    fn check_usable(&self) -> Result<(), Error> {
        if self.broken {
            let e = io::Error::other("an earlier write failed; the file is abandoned");
            return Err(Error::new(&self.name, ErrorKind::Io(e)));
        }
        Ok(())
    }

    fn add(&mut self, kind: u32, index: u32, data: &[u8], codec: Codec) -> Result<(), Error> {
        self.check_usable()?;
        let position = self.entries.len();
        let here = SectionRef {
            position,
            kind,
            index,
        };
        if let Some(&first) = self.seen.get(&(kind, index)) {
            let kind = ErrorKind::DuplicateSection { first };
            return Err(Error::new(&self.name, kind).in_section(here));
        }
        if u32::try_from(position).is_err() {
            return Err(Error::new(&self.name, ErrorKind::TooManySections));
        }
        let offset = self.pos;
        let (stored_len, checksum) = match encode_into(codec, data, self.zstd_level, &mut self.out)
        {
            Ok(r) => r,
            Err(e) => return Err(self.io_error(e).in_section(here).at(offset)),
        };
        self.pos += stored_len;
        self.entries.push(Entry {
            kind,
            index,
            codec: codec.id(),
            checksum,
            offset,
            stored_len,
            decoded_len: data.len() as u64,
        });
        self.seen.insert((kind, index), position);
        Ok(())
    }

    fn finish(mut self) -> Result<W, Error> {
        self.check_usable()?;
        let Some(table) = compact::table_and_footer(self.file_kind, self.flags, &self.entries)
        else {
            return Err(Error::new(&self.name, ErrorKind::TooManySections));
        };
        match self.out.write_all(&table).and_then(|()| self.out.flush()) {
            Ok(()) => Ok(self.out),
            Err(e) => Err(self.io_error(e)),
        }
    }
}

/// Writes one container file. Sections are encoded and written as they are added (memory
/// stays at one section), into a temporary file in the destination's directory;
/// [`finish`](TraceWriter::finish) writes the table and header, syncs, and renames the
/// temporary over the destination. Dropping an unfinished writer removes the temporary file.
pub struct TraceWriter {
    path: PathBuf,
    tmp: PathBuf,
    asm: Option<Assembler<BufWriter<File>>>,
}

impl TraceWriter {
    /// Starts a file that will appear at `path` when finished; `file_kind` is carried in the
    /// header (an open registry: see `docs/format.md`).
    pub fn create(path: impl AsRef<Path>, file_kind: u32) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        let name = path.display().to_string();
        let (file, tmp) =
            crate::temp::create_temp(&path).map_err(|e| Error::new(&name, ErrorKind::Io(e)))?;
        let asm = match Assembler::start(BufWriter::new(file), name, file_kind) {
            Ok(asm) => asm,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        Ok(TraceWriter {
            path,
            tmp,
            asm: Some(asm),
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sets the header flags written by `finish` (e.g. [`flags::PARTIAL`](crate::flags::PARTIAL)).
    pub fn set_flags(&mut self, flags: u32) {
        if let Some(asm) = &mut self.asm {
            asm.flags = flags;
        }
    }

    /// Sets the zstd compression level for sections added from now on (default 3).
    pub fn set_zstd_level(&mut self, level: i32) {
        if let Some(asm) = &mut self.asm {
            asm.zstd_level = level;
        }
    }

    /// Encodes `data` with `codec` and appends it as section (`kind`, `index`). Fails on a
    /// duplicate (kind, index) (the writer stays usable) or an I/O error (it does not).
    pub fn add(&mut self, kind: u32, index: u32, data: &[u8], codec: Codec) -> Result<(), Error> {
        match &mut self.asm {
            Some(asm) => asm.add(kind, index, data, codec),
            None => unreachable!("the assembler is only taken by finish(self)"),
        }
    }

    /// Writes the table and header, syncs the data to disk and atomically renames the file to
    /// its destination (replacing any file there), then syncs the directory.
    pub fn finish(mut self) -> Result<(), Error> {
        let name = self.path.display().to_string();
        let io = |e: io::Error| Error::new(&name, ErrorKind::Io(e));
        let Some(asm) = self.asm.take() else {
            unreachable!("finish consumes the writer")
        };
        let file = asm.finish()?.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(io)?;
        drop(file);
        fs::rename(&self.tmp, &self.path).map_err(io)?;
        // The rename is done: nothing left for Drop to clean up.
        self.tmp = PathBuf::new();
        sync_parent_dir(&self.path).map_err(io)
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.asm = None; // close before removing
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Makes the rename durable: on POSIX systems a rename is persisted by syncing the directory.
fn sync_parent_dir(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// Writes a complete file at `path` in one go (atomically, like [`TraceWriter`]).
pub fn write_file(
    path: impl AsRef<Path>,
    file_kind: u32,
    flags: u32,
    sections: &[NewSection<'_>],
) -> Result<(), Error> {
    let mut w = TraceWriter::create(path, file_kind)?;
    w.set_flags(flags);
    for s in sections {
        w.add(s.kind, s.index, s.data, s.codec)?;
    }
    w.finish()
}

/// Encodes a complete file in memory: the same bytes [`write_file`] would write.
pub fn to_bytes(file_kind: u32, flags: u32, sections: &[NewSection<'_>]) -> Result<Vec<u8>, Error> {
    let mut asm = Assembler::start(Vec::new(), "<memory>".to_owned(), file_kind)?;
    asm.flags = flags;
    for s in sections {
        asm.add(s.kind, s.index, s.data, s.codec)?;
    }
    asm.finish()
}

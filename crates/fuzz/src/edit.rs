//! Mutations: edits of a byte string ([`Edit`]), and edits of a container
//! file that keep it well-formed ([`FileEdit`]), so that the section
//! decoders behind the checksums get to see them.

use mpigram_format::{Codec, NewSection, TraceFile, to_bytes};
use mpigram_varint::PutVarint;
use proptest::prelude::*;

/// A position in data of any length: the fraction `At / 2^64` of the length
/// at the time the edit is applied (so that shrinking keeps it meaningful).
pub type At = u64;

/// One edit of a byte string.
#[derive(Clone, Debug)]
pub enum Edit {
    /// XOR one byte with a non-zero mask.
    Flip(At, u8),
    /// Overwrite one byte.
    Set(At, u8),
    Insert(At, Vec<u8>),
    /// Remove up to this many bytes.
    Remove(At, usize),
    Truncate(At),
    /// Replace the varint around a position with the encoding of a value,
    /// often a limit (0, 1, 2^31, 2^32, u64::MAX): counts and lengths are
    /// varints, so this is how a file comes to declare a huge count.
    Varint(At, u64),
    /// Copy a stretch of the data over another place.
    Copy {
        from: At,
        to: At,
        len: usize,
    },
}

/// Values that make decoders take their edge paths.
fn telling_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..4,
        Just(127),
        Just(128),
        Just(u64::from(u32::MAX)),
        Just(u64::from(u32::MAX) + 1),
        Just(1 << 31),
        Just(1 << 24),
        Just(1 << 62),
        Just(u64::MAX - 1),
        Just(u64::MAX),
        any::<u64>(),
    ]
}

pub fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<At>(), 1u8..).prop_map(|(at, mask)| Edit::Flip(at, mask)),
        (any::<At>(), any::<u8>()).prop_map(|(at, v)| Edit::Set(at, v)),
        (any::<At>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, b)| Edit::Insert(at, b)),
        (any::<At>(), 1usize..16).prop_map(|(at, n)| Edit::Remove(at, n)),
        any::<At>().prop_map(Edit::Truncate),
        (any::<At>(), telling_value()).prop_map(|(at, v)| Edit::Varint(at, v)),
        (any::<At>(), any::<At>(), 1usize..32).prop_map(|(from, to, len)| Edit::Copy {
            from,
            to,
            len
        }),
    ]
}

/// One to five edits.
pub fn edits() -> impl Strategy<Value = Vec<Edit>> {
    prop::collection::vec(edit(), 1..6)
}

/// A position in `0..len` (0 when empty).
fn pos(at: &At, len: usize) -> usize {
    ((u128::from(*at) * len as u128) >> 64) as usize
}

/// Applies `edits` in order.
pub fn apply(data: &mut Vec<u8>, edits: &[Edit]) {
    for e in edits {
        let len = data.len();
        match e {
            Edit::Flip(at, mask) if len > 0 => data[pos(at, len)] ^= mask,
            Edit::Set(at, v) if len > 0 => data[pos(at, len)] = *v,
            Edit::Insert(at, bytes) => {
                let i = pos(at, len + 1);
                data.splice(i..i, bytes.iter().copied());
            }
            Edit::Remove(at, n) if len > 0 => {
                let i = pos(at, len);
                data.drain(i..(i + n).min(len));
            }
            Edit::Truncate(at) => data.truncate(pos(at, len)),
            Edit::Varint(at, v) => {
                let (start, end) = varint_around(data, pos(at, len));
                let mut encoded = Vec::new();
                encoded.put_u64(*v);
                data.splice(start..end, encoded);
            }
            Edit::Copy { from, to, len: n } if len > 0 => {
                let from = pos(from, len);
                let stretch = data[from..(from + n).min(len)].to_vec();
                let to = pos(to, len);
                let end = (to + stretch.len()).min(len);
                data.splice(to..end, stretch);
            }
            _ => {} // an edit that needs a byte, on empty data
        }
    }
}

/// The bytes `start..end` of the varint that byte `at` belongs to (as if
/// the data were varints from where the previous one ended).
fn varint_around(data: &[u8], at: usize) -> (usize, usize) {
    let continues = |i: usize| data.get(i).is_some_and(|&b| b >= 0x80);
    let mut start = at.min(data.len());
    while start > 0 && continues(start - 1) {
        start -= 1;
    }
    let mut end = start;
    while continues(end) && end - start < 9 {
        end += 1;
    }
    (start, (end + 1).min(data.len()))
}

/// A section of a container file, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub kind: u32,
    pub index: u32,
    pub codec: Codec,
    pub payload: Vec<u8>,
}

/// The file kind, flags and sections of a valid container file.
pub fn read_sections(bytes: &[u8]) -> (u32, u32, Vec<Section>) {
    let file = TraceFile::from_bytes("sample", bytes.to_vec()).expect("a valid sample file");
    let sections = file
        .sections()
        .iter()
        .map(|s| Section {
            kind: s.kind,
            index: s.index,
            codec: s.codec().expect("a known codec"),
            payload: file.read(s).expect("a valid section").into_owned(),
        })
        .collect();
    (file.kind(), file.flags(), sections)
}

/// A container file of these sections, every checksum right.
pub fn write_sections(kind: u32, flags: u32, sections: &[Section]) -> Vec<u8> {
    let new: Vec<NewSection<'_>> = sections
        .iter()
        .map(|s| (s.kind, s.index, s.payload.as_slice(), s.codec).into())
        .collect();
    to_bytes(kind, flags, &new).expect("writing to memory")
}

/// An edit of a container file that leaves it well-formed.
#[derive(Clone, Debug)]
pub enum FileEdit {
    /// Edits of one section's decoded payload.
    Payload(At, Vec<Edit>),
    Drop(At),
    /// Swaps the payloads of two sections (a grammar where the signature
    /// table should be).
    Swap(At, At),
    /// Stores a section with the other codec.
    Recode(At),
    /// Gives a section another kind (possibly one the file already has).
    Rekind(At, u32),
    FileKind(u32),
    Flags(u32),
}

/// Mostly payload edits: they are what reaches the decoders.
pub fn file_edit() -> impl Strategy<Value = FileEdit> {
    prop_oneof![
        8 => (any::<At>(), edits()).prop_map(|(s, e)| FileEdit::Payload(s, e)),
        1 => any::<At>().prop_map(FileEdit::Drop),
        1 => (any::<At>(), any::<At>()).prop_map(|(a, b)| FileEdit::Swap(a, b)),
        1 => any::<At>().prop_map(FileEdit::Recode),
        1 => (any::<At>(), 0u32..9).prop_map(|(s, k)| FileEdit::Rekind(s, k)),
        1 => (0u32..4).prop_map(FileEdit::FileKind),
        1 => any::<u32>().prop_map(FileEdit::Flags),
    ]
}

/// Applies a file edit to a valid container file and writes it again.
pub fn apply_file_edit(bytes: &[u8], edit: &FileEdit) -> Vec<u8> {
    let (mut kind, mut flags, mut sections) = read_sections(bytes);
    let n = sections.len();
    match edit {
        FileEdit::Payload(s, edits) if n > 0 => apply(&mut sections[pos(s, n)].payload, edits),
        FileEdit::Drop(s) if n > 0 => {
            sections.remove(pos(s, n));
        }
        FileEdit::Swap(a, b) if n > 0 => {
            let (a, b) = (pos(a, n), pos(b, n));
            let payload = std::mem::take(&mut sections[a].payload);
            sections[a].payload = std::mem::replace(&mut sections[b].payload, payload);
        }
        FileEdit::Recode(s) if n > 0 => {
            let s = &mut sections[pos(s, n)];
            s.codec = if s.codec == Codec::Raw {
                Codec::Zstd
            } else {
                Codec::Raw
            };
        }
        FileEdit::Rekind(s, k) if n > 0 => {
            // A second section of one (kind, index) cannot be written (the
            // container tests have that case): take a free index then.
            let free = sections
                .iter()
                .filter(|s| s.kind == *k)
                .map(|s| s.index + 1)
                .max();
            let s = &mut sections[pos(s, n)];
            s.kind = *k;
            s.index = free.unwrap_or(0);
        }
        FileEdit::FileKind(k) => kind = *k,
        FileEdit::Flags(f) => flags = *f,
        _ => {}
    }
    write_sections(kind, flags, &sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `At` of position `i` in data of `len` bytes.
    fn at(i: usize, len: usize) -> At {
        let at = ((i as u128) << 64).div_ceil(len as u128) as At;
        assert_eq!(pos(&at, len), i);
        at
    }

    #[test]
    fn varint_edits_replace_the_whole_varint() {
        // 5, 300 (two bytes), 7
        let mut data = vec![5, 0xac, 0x02, 7];
        apply(&mut data, &[Edit::Varint(at(2, 4), u64::MAX)]);
        assert_eq!(data[0], 5);
        assert_eq!(data.len(), 1 + 10 + 1);
        assert_eq!(data[11], 7);
    }

    #[test]
    fn edits_of_empty_data_do_not_fail() {
        let mut data = Vec::new();
        let all = [
            Edit::Flip(at(0, 1), 1),
            Edit::Set(at(0, 1), 1),
            Edit::Remove(at(0, 1), 3),
            Edit::Truncate(at(0, 1)),
            Edit::Copy {
                from: at(0, 1),
                to: at(0, 1),
                len: 4,
            },
            Edit::Varint(at(0, 1), 300),
            Edit::Insert(at(0, 1), vec![9]),
        ];
        apply(&mut data, &all);
        assert_eq!(data, [9, 0xac, 0x02]);
    }

    #[test]
    fn file_edits_keep_the_file_readable() {
        let sections = vec![
            Section {
                kind: 1,
                index: 0,
                codec: Codec::Raw,
                payload: b"abc".to_vec(),
            },
            Section {
                kind: 2,
                index: 0,
                codec: Codec::Zstd,
                payload: b"defdefdef".to_vec(),
            },
        ];
        let bytes = write_sections(7, 0, &sections);
        assert_eq!(read_sections(&bytes), (7, 0, sections.clone()));
        let swapped = apply_file_edit(&bytes, &FileEdit::Swap(at(0, 2), at(1, 2)));
        let (_, _, got) = read_sections(&swapped);
        assert_eq!(got[0].payload, b"defdefdef");
        assert_eq!(got[1].payload, b"abc");
        let recoded = apply_file_edit(&bytes, &FileEdit::Recode(at(0, 2)));
        assert_eq!(read_sections(&recoded).2[0].codec, Codec::Zstd);
    }
}

//! HPACK (RFC 7541): a bounded decoder for response header blocks, and the encoder of the
//! one request block a run sends.
//!
//! The decoder never allocates per response: Huffman strings (section 5.2) are decoded into
//! two buffers it keeps, and only those the caller asks for or the table must keep (a value
//! nobody reads is skipped: nginx Huffman-codes its Date, ETag and Last-Modified, and decoding
//! them was 40% of the client's own CPU per response); and its dynamic table (section 2.3.2) lives in one byte buffer sized
//! once for the table's limit. Two limits bound what a server can make it do: the table size
//! it may ask for (at most our SETTINGS_HEADER_TABLE_SIZE, section 4.2) and the decoded size of
//! one header list (SETTINGS_MAX_HEADER_LIST_SIZE, counted as section 4.1 counts entries).
//!
//! The encoder writes the three representations a request needs (`h2::request` decides which
//! field takes which): a static table index, a literal that indexes nothing (section 6.2.2),
//! and a literal entered in the table (section 6.2.1) with the index that names it later.

use std::collections::VecDeque;

/// Our SETTINGS_HEADER_TABLE_SIZE: the protocol's initial value, not announced.
pub const TABLE_SIZE: usize = 4096;

/// Why a header block could not be decoded; each is a connection error (COMPRESSION_ERROR,
/// RFC 9113 section 4.3), except [`HpackError::ListTooLarge`], which is ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HpackError {
    #[error("HPACK: truncated header block")]
    Truncated,
    #[error("HPACK: integer too large")]
    Integer,
    #[error("HPACK: index not in the tables")]
    Index,
    #[error("HPACK: invalid Huffman string")]
    Huffman,
    #[error("HPACK: table size update above the limit")]
    TableSize,
    #[error("HPACK: table size update after a field")]
    LateTableSize,
    #[error("header list larger than SETTINGS_MAX_HEADER_LIST_SIZE")]
    ListTooLarge,
}

/// The static table (RFC 7541 Appendix A), index 1 first.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Each entry's size is its name and value plus this (section 4.1).
pub const ENTRY_OVERHEAD: usize = 32;

/// The dynamic table: entries' bytes back to back in one buffer, oldest first. Eviction moves
/// the start; the buffer is compacted when an insertion would pass its end, so it never grows
/// beyond twice the table's limit.
#[derive(Debug)]
struct Table {
    bytes: Vec<u8>,
    start: usize,
    /// (offset in `bytes`, name length, value length), oldest first.
    entries: VecDeque<(usize, usize, usize)>,
    size: usize,
    max: usize,
}

impl Table {
    fn new(max: usize) -> Table {
        Table {
            bytes: Vec::with_capacity(2 * max),
            start: 0,
            entries: VecDeque::with_capacity(max / ENTRY_OVERHEAD + 1),
            size: 0,
            max,
        }
    }

    /// Entry `i` of the dynamic table, 0 being the newest.
    fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let (off, n, v) = *self.entries.get(self.entries.len().checked_sub(i + 1)?)?;
        Some((&self.bytes[off..off + n], &self.bytes[off + n..off + n + v]))
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            let Some((_, n, v)) = self.entries.pop_front() else { break };
            self.size -= n + v + ENTRY_OVERHEAD;
            self.start = self.entries.front().map_or(self.bytes.len(), |e| e.0);
        }
        if self.entries.is_empty() {
            self.bytes.clear();
            self.start = 0;
        }
    }

    /// Adds an entry (section 4.4): older ones are evicted to make room; one larger than the
    /// table empties it and is not added.
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let need = name.len() + value.len() + ENTRY_OVERHEAD;
        if need > self.max {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - need);
        if self.bytes.len() + name.len() + value.len() > self.bytes.capacity() {
            // Live bytes are at most `max`, so after this the entry fits in 2 * max.
            self.bytes.drain(..self.start);
            let shift = self.start;
            for e in self.entries.iter_mut() {
                e.0 -= shift;
            }
            self.start = 0;
        }
        let off = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_back((off, name.len(), value.len()));
        self.size += need;
    }
}

/// Decodes the header blocks of one connection's responses, in order.
#[derive(Debug)]
pub struct Decoder {
    table: Table,
    /// The largest table the server may ask for: our SETTINGS_HEADER_TABLE_SIZE.
    allowed: usize,
    max_list: usize,
    name: Vec<u8>,
    value: Vec<u8>,
    /// Huffman-coded literal names already decoded on this connection, by their coded bytes
    /// (decoding is a function of them): a server names the fields it does not index the
    /// same way in every response (nginx: `etag`, `accept-ranges`), and decoding those names
    /// again, only to learn that they are not wanted, was 3% of the client's CPU at c=10 x
    /// m=10. At most [`NAMES`] of them, each [`NAME_CODED`] bytes at most.
    names: Vec<(Vec<u8>, Vec<u8>)>,
}

/// How many Huffman-coded names a connection's decoder keeps decoded ([`Decoder::names`]),
/// and how long (coded) each may be: enough for a server's own fields, bounded whatever it
/// sends.
const NAMES: usize = 16;
const NAME_CODED: usize = 64;

impl Decoder {
    /// A decoder whose header lists may decode to at most `max_list` bytes (section 4.1's
    /// accounting: name, value and 32 per field).
    pub fn new(max_list: usize) -> Decoder {
        Decoder {
            table: Table::new(TABLE_SIZE),
            allowed: TABLE_SIZE,
            max_list,
            name: Vec::with_capacity(256),
            value: Vec::with_capacity(256),
            names: Vec::new(),
        }
    }

    /// A literal name at `block[pos..]` (section 5.2): its range in the block, or `None` when
    /// it was Huffman-coded and is decoded into `self.name` (from [`Decoder::names`] when it
    /// came before); and the bytes it took.
    fn literal_name(
        &mut self,
        block: &[u8],
        pos: usize,
    ) -> Result<(Option<(usize, usize)>, usize), HpackError> {
        let (huffman, start, end, taken) = literal(block, pos, 7)?;
        if !huffman {
            return Ok((Some((start, end)), taken));
        }
        let coded = &block[start..end];
        if let Some((_, name)) = self.names.iter().find(|(c, _)| c == coded) {
            self.name.clear();
            self.name.extend_from_slice(name);
            return Ok((None, taken));
        }
        string(block, pos, &mut self.name)?;
        if self.names.len() < NAMES && coded.len() <= NAME_CODED {
            self.names.push((coded.to_vec(), self.name.clone()));
        }
        Ok((None, taken))
    }

    /// Decodes one whole header block, giving each field whose name `wanted` accepts to
    /// `field`, in order. A literal value of another field is skipped undecoded (unless the
    /// table keeps it) and counts in the header list at its encoded length.
    pub fn decode(
        &mut self,
        block: &[u8],
        wanted: impl Fn(&[u8]) -> bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut list = 0usize;
        let max_list = self.max_list;
        let mut fields = false;
        while pos < block.len() {
            let b = block[pos];
            if b & 0x80 != 0 {
                // Indexed field (section 6.1).
                let (index, n) = integer(&block[pos..], 7)?;
                pos += n;
                let (name, value) = entry(&self.table, index)?;
                add_to_list(&mut list, name.len() + value.len(), max_list)?;
                if wanted(name) {
                    field(name, value);
                }
                fields = true;
                continue;
            }
            if b & 0xe0 == 0x20 {
                // Dynamic table size update (section 6.3): only before the first field.
                if fields {
                    return Err(HpackError::LateTableSize);
                }
                let (size, n) = integer(&block[pos..], 5)?;
                pos += n;
                if size > self.allowed {
                    return Err(HpackError::TableSize);
                }
                self.table.max = size;
                self.table.evict_to(size);
                continue;
            }
            // A literal (section 6.2): with incremental indexing (01), without (0000) or never
            // indexed (0001); the name by index or as a string.
            let (indexing, prefix) = if b & 0x40 != 0 { (true, 6) } else { (false, 4) };
            let (index, n) = integer(&block[pos..], prefix)?;
            pos += n;
            let name = if index == 0 {
                let (s, n) = self.literal_name(block, pos)?;
                pos += n;
                s
            } else {
                // The name is copied out, since an insertion may evict the entry it names.
                let (name, _) = entry(&self.table, index)?;
                self.name.clear();
                self.name.extend_from_slice(name);
                None
            };
            let name: &[u8] = name.map_or(&self.name, |(a, b)| &block[a..b]);
            // With a table of size 0 an indexed literal is not kept (section 4.4) either.
            if (!indexing || self.table.max == 0) && !wanted(name) {
                let (len, n) = skip_string(block, pos)?;
                pos += n;
                add_to_list(&mut list, name.len() + len, max_list)?;
                fields = true;
                continue;
            }
            let (value, n) = string(block, pos, &mut self.value)?;
            pos += n;
            let value: &[u8] = value.map_or(&self.value, |(a, b)| &block[a..b]);
            add_to_list(&mut list, name.len() + value.len(), max_list)?;
            if wanted(name) {
                field(name, value);
            }
            fields = true;
            if indexing && self.table.max > 0 {
                self.table.insert(name, value);
            }
        }
        Ok(())
    }
}

/// Counts a field of `len` bytes (name and value) in the header list, with its 32 bytes of
/// overhead (RFC 9113 section 6.5.2), refusing a list longer than `max`.
fn add_to_list(list: &mut usize, len: usize, max: usize) -> Result<(), HpackError> {
    *list += len + ENTRY_OVERHEAD;
    if *list > max {
        return Err(HpackError::ListTooLarge);
    }
    Ok(())
}

/// Field `index` of the static table (1 to 61) or the dynamic one (62 on).
fn entry(table: &Table, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
    match index {
        0 => Err(HpackError::Index),
        1..=61 => Ok(STATIC[index - 1]),
        _ => table.get(index - 62).ok_or(HpackError::Index),
    }
}

/// A string literal (section 5.2) at `block[pos..]`: its range in the block, or `None` when
/// it was Huffman-coded and is decoded into `buf`; and the bytes it took.
fn string(
    block: &[u8],
    pos: usize,
    buf: &mut Vec<u8>,
) -> Result<(Option<(usize, usize)>, usize), HpackError> {
    prefixed_string(block, pos, 7, buf)
}

/// [`string`] whose length has a `prefix`-bit prefix, the Huffman flag the bit above it: QPACK
/// (RFC 9204 section 4.1.2) writes a literal name's length after 3 or 5 bits of its own.
pub(crate) fn prefixed_string(
    block: &[u8],
    pos: usize,
    prefix: u8,
    buf: &mut Vec<u8>,
) -> Result<(Option<(usize, usize)>, usize), HpackError> {
    let (huffman, start, end, taken) = literal(block, pos, prefix)?;
    if !huffman {
        return Ok((Some((start, end)), taken));
    }
    buf.clear();
    httlib_huffman::decode(&block[start..end], buf, httlib_huffman::DecoderSpeed::FourBits)
        .map_err(|_| HpackError::Huffman)?;
    Ok((None, taken))
}

/// A string literal at `block[pos..]` passed over: its encoded length, and the bytes it took.
pub(crate) fn skip_string(block: &[u8], pos: usize) -> Result<(usize, usize), HpackError> {
    let (_, start, end, taken) = literal(block, pos, 7)?;
    Ok((end - start, taken))
}

/// Where the string literal at `block[pos..]` lies, its length after a `prefix`-bit prefix:
/// whether it is Huffman-coded (the bit above the prefix), its bytes' range in the block, and
/// the bytes it takes with its length.
fn literal(
    block: &[u8],
    pos: usize,
    prefix: u8,
) -> Result<(bool, usize, usize, usize), HpackError> {
    let rest = block.get(pos..).ok_or(HpackError::Truncated)?;
    let first = *rest.first().ok_or(HpackError::Truncated)?;
    let (len, n) = integer(rest, prefix)?;
    let end = n.checked_add(len).filter(|e| *e <= rest.len()).ok_or(HpackError::Truncated)?;
    Ok((first & (1 << prefix) != 0, pos + n, pos + end, end))
}

/// An integer with an N-bit prefix (section 5.1): its value and the bytes it took. Values
/// beyond 2^28 are refused: no length or index this client accepts comes near.
pub(crate) fn integer(b: &[u8], prefix: u8) -> Result<(usize, usize), HpackError> {
    let mask = (1usize << prefix) - 1;
    let first = usize::from(*b.first().ok_or(HpackError::Truncated)?) & mask;
    if first < mask {
        return Ok((first, 1));
    }
    let mut value = mask;
    let mut shift = 0;
    for (i, &byte) in b.iter().enumerate().skip(1) {
        value += usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
        shift += 7;
        if shift > 21 {
            return Err(HpackError::Integer);
        }
    }
    Err(HpackError::Truncated)
}

/// Appends an integer with an N-bit prefix; `flags` fills the first byte's other bits.
pub(crate) fn put_integer(out: &mut Vec<u8>, value: usize, prefix: u8, flags: u8) {
    let mask = (1usize << prefix) - 1;
    if value < mask {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push((rest & 0x7f) as u8 | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Appends a dynamic table size update (section 6.3).
pub fn put_size_update(out: &mut Vec<u8>, size: usize) {
    put_integer(out, size, 5, 0x20);
}

/// Appends a string literal, Huffman-coded when that is shorter (section 5.2).
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_prefixed_string(out, s, 7, 0);
}

/// [`put_string`] with a `prefix`-bit length, the Huffman flag the bit above it, and `flags`
/// in the first byte's bits above that (QPACK's literal names, RFC 9204 section 4.5.6).
pub(crate) fn put_prefixed_string(out: &mut Vec<u8>, s: &[u8], prefix: u8, flags: u8) {
    let mut coded = Vec::new();
    if httlib_huffman::encode(s, &mut coded).is_ok() && coded.len() < s.len() {
        put_integer(out, coded.len(), prefix, flags | 1 << prefix);
        out.extend_from_slice(&coded);
    } else {
        put_integer(out, s.len(), prefix, flags);
        out.extend_from_slice(s);
    }
}

/// The static table's index of this name with this value, if it has both (`:method GET`).
pub fn static_index(name: &[u8], value: &[u8]) -> Option<usize> {
    let i = STATIC.iter().position(|e| e.0 == name && e.1 == value && !value.is_empty())?;
    Some(i + 1)
}

/// Appends one field as a literal without indexing (section 6.2.2), naming it by its static
/// table index when it has one; a name and value both in the static table are indexed
/// (section 6.1), which uses no dynamic state either.
pub fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    if let Some(i) = static_index(name, value) {
        return put_indexed(out, i);
    }
    put_literal(out, name, value, 4, 0);
}

/// Appends one field as a literal entered in the dynamic table (section 6.2.1).
pub fn put_indexing(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    put_literal(out, name, value, 6, 0x40);
}

/// Appends a field named by its index in the static or dynamic table (section 6.1).
pub fn put_indexed(out: &mut Vec<u8>, index: usize) {
    put_integer(out, index, 7, 0x80);
}

/// A literal whose representation has a `prefix`-bit name index and these `flags`: the name
/// by its static table index when it has one, else as a string.
fn put_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8], prefix: u8, flags: u8) {
    match STATIC.iter().position(|e| e.0 == name) {
        Some(i) => put_integer(out, i + 1, prefix, flags),
        None => {
            out.push(flags);
            put_string(out, name);
        }
    }
    put_string(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
        let mut out = Vec::new();
        d.decode(block, |_| true, &mut |n, v| {
            out.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()))
        })?;
        Ok(out)
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// RFC 7541 C.1: integers with a 5-bit prefix.
    #[test]
    fn integers_of_the_rfc() {
        assert_eq!(integer(&[0x0a], 5).unwrap(), (10, 1));
        assert_eq!(integer(&[0x1f, 0x9a, 0x0a], 5).unwrap(), (1337, 3));
        assert_eq!(integer(&[0x2a], 8).unwrap(), (42, 1));
        let mut out = Vec::new();
        put_integer(&mut out, 1337, 5, 0);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        assert_eq!(integer(&[0x1f, 0x80], 5), Err(HpackError::Truncated));
        assert_eq!(integer(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0x0f], 5), Err(HpackError::Integer));
    }

    /// RFC 7541 C.6: three responses with Huffman coding and a 256-byte table, evictions
    /// included.
    #[test]
    fn responses_of_the_rfc_with_huffman_and_eviction() {
        let mut d = Decoder::new(64 * 1024);
        d.table.max = 256;
        let first =
            hex("4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3");
        assert_eq!(
            decode_all(&mut d, &first).unwrap(),
            pairs(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.table.size, 222);
        let second = hex("4883 640e ff c1 c0 bf");
        assert_eq!(
            decode_all(&mut d, &second).unwrap(),
            pairs(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.table.size, 222);
        let third =
            hex("88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
             77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
             9587 3160 65c0 03ed 4ee5 b106 3d50 07");
        assert_eq!(
            decode_all(&mut d, &third).unwrap(),
            pairs(&[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                ("set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"),
            ])
        );
        assert_eq!(d.table.size, 215);
        assert_eq!(d.table.entries.len(), 3);
    }

    #[test]
    fn the_limits_hold() {
        // A table size update above our setting.
        let mut d = Decoder::new(1024);
        assert_eq!(decode_all(&mut d, &[0x3f, 0xe2, 0x1f]), Err(HpackError::TableSize));
        // An index beyond both tables.
        assert_eq!(decode_all(&mut Decoder::new(1024), &[0xbe]), Err(HpackError::Index));
        // A string longer than the block.
        assert_eq!(
            decode_all(&mut Decoder::new(1024), &[0x00, 0x05, b'a']),
            Err(HpackError::Truncated)
        );
        // A header list above the limit: 40 fields of 32 + 14 bytes each.
        let mut block = Vec::new();
        for _ in 0..40 {
            put_field(&mut block, b"x-a", b"0123456789a");
        }
        assert_eq!(decode_all(&mut Decoder::new(1024), &block), Err(HpackError::ListTooLarge));
        assert_eq!(decode_all(&mut Decoder::new(4096), &block).unwrap().len(), 40);
        // A size update after a field.
        assert_eq!(
            decode_all(&mut Decoder::new(1024), &[0x88, 0x20]),
            Err(HpackError::LateTableSize)
        );
    }

    #[test]
    fn the_table_keeps_its_bytes_within_twice_its_size() {
        let mut d = Decoder::new(1 << 20);
        for i in 0..2_000u32 {
            let mut block = vec![0x40];
            put_string(&mut block, format!("x-n{i}").as_bytes());
            put_string(&mut block, &vec![b'v'; (i % 300) as usize]);
            block.push(0xbe); // the entry just added, by index 62
            let got = decode_all(&mut d, &block).unwrap();
            assert_eq!(got[0], got[1], "entry {i}");
            assert!(d.table.size <= TABLE_SIZE && d.table.bytes.capacity() <= 2 * TABLE_SIZE);
        }
    }

    /// Values nobody asked for are skipped, Huffman-coded or not; the table still gets what
    /// it must keep.
    #[test]
    fn only_wanted_values_are_given() {
        let mut block = Vec::new();
        put_field(&mut block, b"date", b"Mon, 21 Oct 2013 20:13:21 GMT");
        put_field(&mut block, b"content-length", b"13");
        block.extend_from_slice(&[0x40, 0x03, b'x', b'-', b'a', 0x01, b'1']); // indexed: x-a 1
        block.push(0xbe);
        let mut got = Vec::new();
        let wanted = |n: &[u8]| n != b"date";
        Decoder::new(4096)
            .decode(&block, wanted, &mut |n, v| got.push((n.to_vec(), v.to_vec())))
            .unwrap();
        let expect: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"content-length".to_vec(), b"13".to_vec()),
            (b"x-a".to_vec(), b"1".to_vec()),
            (b"x-a".to_vec(), b"1".to_vec()),
        ];
        assert_eq!(got, expect);
    }

    /// nginx's answer to a second request on a connection whose table is 0 (its Server,
    /// Date, Content-Type and Last-Modified by static name, ETag and Accept-Ranges by
    /// Huffman-coded names): each response's names decode alike, the coded ones once per
    /// connection, and a coded name seen before is told from one that is not.
    #[test]
    fn huffman_coded_names_decode_alike_and_once() {
        let nginx = "887689aa6355e580ae212e1f6196df697e940054be52282009c504cdc69fb82754c5a37f\
                     5f87497ca58ae819aa5c0231336c96df697e940054be52282009c504cdc69fb826d4c5a37f\
                     00832a47378afe5c8c12b7201b5a4fe7008919085ad2b583aa62a3848fd24a8f";
        let block: Vec<u8> = (0..nginx.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&nginx[i..i + 2], 16).unwrap())
            .collect();
        let mut d = Decoder::new(4096);
        d.table.max = 0;
        for _ in 0..3 {
            let mut got = Vec::new();
            let wanted = |n: &[u8]| n == b":status" || n == b"content-length" || n == b"etag";
            d.decode(&block, wanted, &mut |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
            let names: Vec<&[u8]> = got.iter().map(|(n, _)| &n[..]).collect();
            assert_eq!(names, [&b":status"[..], b"content-length", b"etag"]);
            assert_eq!(got[1].1, b"13");
            assert_eq!(got[2].1, b"\"6b0f5d05-d\"");
            assert_eq!(d.names.len(), 2, "etag and accept-ranges, decoded once");
        }
        // Names that are not those: another coded name, and the same one uncoded.
        let mut other = Vec::new();
        put_field(&mut other, b"etah", b"1");
        other.extend_from_slice(&[0x00, 0x04, b'e', b't', b'a', b'g', 0x01, b'2']);
        let mut got = Vec::new();
        d.decode(&other, |_| true, &mut |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
        assert_eq!(got, [(b"etah".to_vec(), b"1".to_vec()), (b"etag".to_vec(), b"2".to_vec())]);
        assert_eq!(d.names.len(), 3);
        // However many names a server makes up, the decoder keeps NAMES of them.
        for i in 0..2 * NAMES {
            let mut block = Vec::new();
            put_field(&mut block, format!("x-name-{i}").as_bytes(), b"v");
            let mut got = Vec::new();
            d.decode(&block, |_| true, &mut |n, _| got.push(n.to_vec())).unwrap();
            assert_eq!(got, [format!("x-name-{i}").into_bytes()]);
        }
        assert_eq!(d.names.len(), NAMES);
    }

    #[test]
    fn the_request_fields_decode_to_what_was_encoded() {
        let mut block = Vec::new();
        put_field(&mut block, b":method", b"GET");
        put_field(&mut block, b":scheme", b"http");
        put_field(&mut block, b":authority", b"127.0.0.1:8080");
        put_field(&mut block, b":path", b"/hello.txt");
        put_field(&mut block, b"x-custom", b"some value");
        assert_eq!(block[..2], [0x82, 0x86], "fully indexed static fields");
        let got = decode_all(&mut Decoder::new(4096), &block).unwrap();
        assert_eq!(
            got,
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":authority", "127.0.0.1:8080"),
                (":path", "/hello.txt"),
                ("x-custom", "some value"),
            ])
        );
    }
}

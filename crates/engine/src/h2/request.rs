//! The requests of a run as HTTP/2 HEADERS blocks, encoded once: the fields every request
//! shares, which a connection's first request enters in HPACK's dynamic table and every later
//! one names by index, and each request's own fields as literals.
//!
//! Why index: a server decodes and validates every literal field of every request, and an
//! indexed one is a table lookup (RFC 7541 section 6.1). Browsers, nghttp2 and h2load index
//! what repeats; a client that never does made nginx spend ~4% more CPU per request than on
//! h2load's traffic (bench/vs-peers.sh H2=1: 52 against 23 bytes of HEADERS per request).
//!
//! The shared fields are entered in one order, whichever request comes first, so their
//! indices are the same for every request: pseudo-header fields and the others each keep their
//! relative order, and a block is laid out as shared pseudo-header fields, the request's own
//! pseudo-header fields, shared fields, its own fields (RFC 9113 section 8.3 asks only that
//! pseudo-header fields come first). A field is shared only if every request has exactly one
//! field of that name with that value, so no request's own field of the same name changes
//! places with it. Nothing else is ever entered, and the shared fields fit the 4,096 bytes
//! every table starts with, so none is evicted unless the server shrinks its table below
//! them; the connection then stops indexing (`Indexing::Off`).

use super::hpack;

/// One header field as a request has it: name (lower case) and value.
pub type Field = (String, String);

/// Every request of a run, by entry, and the fields they share.
#[derive(Debug, Default)]
pub struct Requests {
    list: Vec<Request>,
    shared: Shared,
}

/// One request's own part: its fields that are not shared, and its body.
#[derive(Debug)]
pub struct Request {
    /// Its own pseudo-header fields, then its own other fields, as literals that index
    /// nothing (or static table indices).
    own: Box<[u8]>,
    /// Where its pseudo-header fields end in `own`.
    pseudo_end: usize,
    pub body: Box<[u8]>,
}

/// The shared fields in each of the three ways a connection may send them.
#[derive(Debug, Default)]
struct Shared {
    /// Indexed by [`Indexing`]: entered (the first request), named by index, or plain.
    forms: [Form; 3],
    /// What they take in the table (RFC 7541 section 4.1: name, value and 32 each).
    size: usize,
}

#[derive(Debug, Default)]
struct Form {
    pseudo: Vec<u8>,
    regular: Vec<u8>,
}

/// Where a connection stands with the shared fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexing {
    /// Nothing entered yet: the next block enters the shared fields.
    Unseeded = 0,
    /// They are in the server's table: blocks name them by index.
    Seeded = 1,
    /// The server's table became too small for them: they go as literals.
    Off = 2,
}

impl Requests {
    /// Encodes `n` requests, `fields(i)` giving request `i`'s fields (pseudo-header fields
    /// first) and `body(i)` its body. `fields` is called twice per request: once to find what
    /// all share, once to encode.
    pub fn build<E>(
        n: usize,
        mut fields: impl FnMut(usize) -> Result<Vec<Field>, E>,
        mut body: impl FnMut(usize) -> Box<[u8]>,
    ) -> Result<Requests, E> {
        let mut shared: Vec<Field> = Vec::new();
        for i in 0..n {
            let f = fields(i)?;
            let once = |name: &str| f.iter().filter(|(n, _)| n == name).count() == 1;
            if i == 0 {
                shared = f.iter().filter(|(n, _)| once(n)).cloned().collect();
            } else {
                shared.retain(|(n, v)| once(n) && f.iter().any(|(fn_, fv)| fn_ == n && fv == v));
            }
        }
        // What does not fit the table's initial size is sent by each request as its own.
        let mut size = 0;
        shared.retain(|(n, v)| {
            if hpack::static_index(n.as_bytes(), v.as_bytes()).is_some() {
                return true;
            }
            let entry = n.len() + v.len() + hpack::ENTRY_OVERHEAD;
            let fits = size + entry <= hpack::TABLE_SIZE;
            size += if fits { entry } else { 0 };
            fits
        });
        let names: Vec<&str> = shared.iter().map(|(n, _)| n.as_str()).collect();
        let mut list = Vec::with_capacity(n);
        for i in 0..n {
            let mut own = Vec::new();
            let mut pseudo_end = None;
            for (name, value) in fields(i)? {
                if !name.starts_with(':') && pseudo_end.is_none() {
                    pseudo_end = Some(own.len());
                }
                if !names.contains(&name.as_str()) {
                    hpack::put_field(&mut own, name.as_bytes(), value.as_bytes());
                }
            }
            let pseudo_end = pseudo_end.unwrap_or(own.len());
            list.push(Request { own: own.into(), pseudo_end, body: body(i) });
        }
        Ok(Requests { list, shared: Shared::encode(&shared, size) })
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn get(&self, entry: usize) -> &Request {
        &self.list[entry]
    }

    /// What the shared fields take in the server's table.
    pub fn shared_size(&self) -> usize {
        self.shared.size
    }

    /// The length of request `entry`'s block sent as `indexing` says.
    pub fn block_len(&self, entry: usize, indexing: Indexing) -> usize {
        let form = &self.shared.forms[indexing as usize];
        form.pseudo.len() + form.regular.len() + self.list[entry].own.len()
    }

    /// Appends request `entry`'s block, sent as `indexing` says.
    pub fn put_block(&self, out: &mut Vec<u8>, entry: usize, indexing: Indexing) {
        let form = &self.shared.forms[indexing as usize];
        let r = &self.list[entry];
        out.extend_from_slice(&form.pseudo);
        out.extend_from_slice(&r.own[..r.pseudo_end]);
        out.extend_from_slice(&form.regular);
        out.extend_from_slice(&r.own[r.pseudo_end..]);
    }
}

impl Shared {
    fn encode(fields: &[Field], size: usize) -> Shared {
        let mut forms: [Form; 3] = Default::default();
        // The dynamic table's newest entry is index 62 (section 2.3.3): the first field entered
        // ends up oldest, at 62 + (entered - 1).
        let entered = fields
            .iter()
            .filter(|(n, v)| hpack::static_index(n.as_bytes(), v.as_bytes()).is_none())
            .count();
        let mut next = 0;
        // Pseudo-header fields first, in both the blocks and the order they are entered.
        let (pseudo, regular): (Vec<&Field>, Vec<&Field>) =
            fields.iter().partition(|(n, _)| n.starts_with(':'));
        for (part, group) in [(0, pseudo), (1, regular)] {
            for (name, value) in group {
                let (n, v) = (name.as_bytes(), value.as_bytes());
                let mut put = |form: usize, f: &dyn Fn(&mut Vec<u8>)| {
                    let f_ = &mut forms[form];
                    f(if part == 0 { &mut f_.pseudo } else { &mut f_.regular })
                };
                if hpack::static_index(n, v).is_some() {
                    for form in 0..3 {
                        put(form, &|out| hpack::put_field(out, n, v));
                    }
                    continue;
                }
                let index = 62 + (entered - 1 - next);
                next += 1;
                put(Indexing::Unseeded as usize, &|out| hpack::put_indexing(out, n, v));
                put(Indexing::Seeded as usize, &|out| hpack::put_indexed(out, index));
                put(Indexing::Off as usize, &|out| hpack::put_field(out, n, v));
            }
        }
        Shared { forms, size }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::hpack::Decoder;

    fn f(pairs: &[(&str, &str)]) -> Vec<Field> {
        pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
    }

    fn build(requests: &[Vec<Field>]) -> Requests {
        Requests::build(requests.len(), |i| Ok::<_, ()>(requests[i].clone()), |_| Box::new([]))
            .unwrap()
    }

    fn decode(d: &mut Decoder, block: &[u8]) -> Vec<Field> {
        let mut got = Vec::new();
        d.decode(block, |_| true, &mut |n: &[u8], v: &[u8]| {
            got.push((String::from_utf8_lossy(n).into(), String::from_utf8_lossy(v).into()));
        })
        .unwrap();
        got
    }

    fn sorted(mut v: Vec<Field>) -> Vec<Field> {
        v.sort();
        v
    }

    fn block(r: &Requests, entry: usize, indexing: Indexing) -> Vec<u8> {
        let mut out = Vec::new();
        r.put_block(&mut out, entry, indexing);
        assert_eq!(out.len(), r.block_len(entry, indexing));
        out
    }

    fn request(path: &str, extra: &[(&str, &str)]) -> Vec<Field> {
        let mut fields = f(&[
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "127.0.0.1:8080"),
            (":path", path),
            ("user-agent", "loadlab/0.1.0"),
            ("accept", "*/*"),
        ]);
        fields.extend(f(extra));
        fields
    }

    #[test]
    fn a_connection_enters_the_shared_fields_once_and_names_them_after() {
        let list = [
            request("/a", &[("x-one", "1")]),
            request("/b", &[("cookie", "a=1"), ("cookie", "b=2")]),
            request("/c", &[]),
        ];
        let r = build(&list);
        // :authority, user-agent and accept are shared; :path differs, cookie repeats.
        assert_eq!(r.shared_size(), (10 + 14 + 32) + (10 + 13 + 32) + (6 + 3 + 32));
        // Whichever request seeds, every later block decodes to its own fields, in an order
        // whose pseudo-header fields come first.
        for seed in 0..list.len() {
            let mut d = Decoder::new(16 << 10);
            let first = decode(&mut d, &block(&r, seed, Indexing::Unseeded));
            assert_eq!(sorted(first), sorted(list[seed].clone()));
            for (i, fields) in list.iter().enumerate() {
                let indexed = block(&r, i, Indexing::Seeded);
                let got = decode(&mut d, &indexed);
                let pseudo = got.iter().take_while(|(n, _)| n.starts_with(':')).count();
                assert!(got[pseudo..].iter().all(|(n, _)| !n.starts_with(':')), "{got:?}");
                let cookies: Vec<&Field> = got.iter().filter(|(n, _)| n == "cookie").collect();
                assert!(cookies.is_empty() || cookies[0].1 == "a=1", "cookie order kept");
                assert_eq!(sorted(got), sorted(fields.clone()));
                // Off: the same fields with no table at all.
                let mut fresh = Decoder::new(16 << 10);
                let plain = decode(&mut fresh, &block(&r, i, Indexing::Off));
                assert_eq!(sorted(plain), sorted(fields.clone()));
            }
        }
        // Named by index, a request is a few bytes: GET and http static, three indices, /b.
        assert!(block(&r, 2, Indexing::Seeded).len() < 10);
    }

    #[test]
    fn a_field_some_request_lacks_or_repeats_is_its_own() {
        let list = [
            request("/same", &[("x-a", "1"), ("x-b", "1")]),
            request("/same", &[("x-a", "2"), ("x-b", "1"), ("x-b", "2")]),
        ];
        let r = build(&list);
        // :authority, :path, user-agent and accept; x-a differs and x-b repeats in one.
        assert_eq!(r.shared_size(), (10 + 14 + 32) + (5 + 5 + 32) + (10 + 13 + 32) + (6 + 3 + 32));
        let mut d = Decoder::new(16 << 10);
        decode(&mut d, &block(&r, 0, Indexing::Unseeded));
        assert_eq!(decode(&mut d, &block(&r, 1, Indexing::Seeded)), list[1]);
    }

    #[test]
    fn shared_fields_beyond_the_initial_table_go_as_literals() {
        let big = "v".repeat(3000);
        let list = [request("/a", &[("x-big", &big), ("x-big2", &big), ("x-small", "1")])];
        let r = build(&list);
        // x-big fits, x-big2 would not, x-small still does.
        let expect = (10 + 14 + 32) + (5 + 2 + 32) + (10 + 13 + 32) + (6 + 3 + 32);
        assert_eq!(r.shared_size(), expect + (5 + 3000 + 32) + (7 + 1 + 32));
        let mut d = Decoder::new(16 << 10);
        assert_eq!(
            sorted(decode(&mut d, &block(&r, 0, Indexing::Unseeded))),
            sorted(list[0].clone())
        );
        assert_eq!(
            sorted(decode(&mut d, &block(&r, 0, Indexing::Seeded))),
            sorted(list[0].clone())
        );
    }
}

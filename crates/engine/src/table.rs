//! Every request of a run encoded once, before the first connection opens, for the protocol
//! it speaks: HTTP/1.1 bytes end to end, or HTTP/2 HEADERS blocks and bodies. The hot path only
//! indexes it.

use std::borrow::Cow;

use crate::h2::Requests;
use crate::mix::Traffic;
use crate::{EngineError, Protocol, RequestSpec, Target};

/// Every request of a run, encoded once for the protocol it speaks; entry `i` of the traffic
/// (a list's line, a log's distinct request) is request `i` here (a single request is 0).
#[derive(Debug, Default)]
pub(crate) struct Table {
    /// HTTP/1.1: the requests' bytes end to end (one allocation for a log's 100,000 distinct
    /// requests, not one each); empty over HTTP/2.
    h1: Vec<u8>,
    /// Where each request ends in `h1` (it starts where the one before ends).
    h1_ends: Vec<usize>,
    /// HTTP/2: the requests' HEADERS blocks and bodies; empty over HTTP/1.1.
    h2: Requests,
    /// HTTP/3: each request's HEADERS frame (QPACK, static table only) and its body's DATA
    /// frame, end to end as `h1`; empty otherwise.
    h3: Vec<u8>,
    h3_ends: Vec<usize>,
    /// HEAD requests, whose responses have no body whatever their headers say.
    head: Vec<bool>,
}

impl Table {
    /// Encodes every request of `traffic`, each `base` with what its entry changes, toward
    /// `target` over `protocol` ([`crate::BenchConfig::table`] passes the run's). A request
    /// that cannot be encoded (a header HTTP/2 forbids) is an error naming its file and line.
    pub fn build(
        traffic: &Traffic,
        base: &RequestSpec,
        target: &Target,
        keepalive: bool,
        protocol: Protocol,
    ) -> Result<Table, EngineError> {
        let n = match traffic {
            Traffic::Single => 1,
            Traffic::Mix(mix) => mix.entries.len(),
            Traffic::Replay(replay) => replay.distinct.len(),
        };
        // Request `i` of the traffic: what it sends, and to which path.
        let request = |i: usize| -> (Cow<'_, RequestSpec>, &str) {
            match traffic {
                Traffic::Single => (Cow::Borrowed(base), &target.path),
                Traffic::Mix(mix) => (Cow::Owned(mix.entries[i].spec(base)), &mix.entries[i].path),
                Traffic::Replay(replay) => match replay.distinct.get(i) {
                    (Some(method), path) if method != base.method => {
                        let spec = RequestSpec { method: method.to_string(), ..base.clone() };
                        (Cow::Owned(spec), path)
                    }
                    (_, path) => (Cow::Borrowed(base), path),
                },
            }
        };
        // A list's line that cannot be encoded is named by its file and line.
        let located = |i: usize, e: EngineError| match (traffic, e) {
            (Traffic::Mix(mix), EngineError::Config(what)) => {
                EngineError::Input { file: mix.file.clone(), line: Some(mix.entries[i].line), what }
            }
            (_, e) => e,
        };
        let mut table = Table::default();
        for i in 0..n {
            let (spec, path) = request(i);
            table.head.push(spec.is_head());
            if protocol == Protocol::Http1 {
                let bytes = spec.encode_to(target, path, keepalive).map_err(|e| located(i, e))?;
                table.h1.extend_from_slice(&bytes);
                table.h1_ends.push(table.h1.len());
            }
            if protocol.is_h3() {
                // The fields are HTTP/2's, whose rules (lower-case names, no connection-
                // specific fields) HTTP/3 shares (RFC 9114 section 4.2).
                let fields = spec.h2_fields(target, path).map_err(|e| located(i, e))?;
                let fields: Vec<(&[u8], &[u8])> =
                    fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())).collect();
                table.h3.extend_from_slice(&crate::h3::headers_frame(&fields));
                if !spec.body.is_empty() {
                    crate::h3::frame::put_header(
                        &mut table.h3,
                        crate::h3::frame::DATA,
                        spec.body.len(),
                    );
                    table.h3.extend_from_slice(&spec.body);
                }
                table.h3_ends.push(table.h3.len());
            }
        }
        if let Protocol::Http2 { .. } = protocol {
            table.h2 = Requests::build(
                n,
                |i| {
                    let (spec, path) = request(i);
                    spec.h2_fields(target, path).map_err(|e| located(i, e))
                },
                |i| request(i).0.body.clone().into(),
            )?;
        }
        Ok(table)
    }

    #[inline]
    pub fn h1(&self, entry: u32) -> &[u8] {
        piece(&self.h1, &self.h1_ends, entry)
    }

    /// HTTP/3: request `entry`'s frames, as its stream carries them.
    #[inline]
    pub fn h3(&self, entry: u32) -> &[u8] {
        piece(&self.h3, &self.h3_ends, entry)
    }

    /// HTTP/2: every request, indexed by entry.
    #[inline]
    pub fn h2s(&self) -> &Requests {
        &self.h2
    }

    #[inline]
    pub fn is_head(&self, entry: u32) -> bool {
        self.head[entry as usize]
    }
}

/// Request `entry` of requests stored end to end in `bytes`, each ending at its `ends`.
#[inline]
fn piece<'a>(bytes: &'a [u8], ends: &[usize], entry: u32) -> &'a [u8] {
    let i = entry as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] };
    &bytes[start..ends[i]]
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::mix::{Entry, Mix, Order, Traffic};
    use crate::{BenchConfig, Protocol, Target};

    #[test]
    fn the_table_encodes_each_entry_once_with_its_path_and_names_the_line_of_a_bad_one() {
        let mut config = BenchConfig::new(Target::parse("http://127.0.0.1:8080/x").unwrap());
        let entries = (0..2).map(|i| Entry::new(format!("/{i}"), i + 1)).collect();
        let list = Mix { file: "list".into(), entries, order: Order::Weighted };
        config.traffic = Traffic::Mix(Arc::new(list));
        let table = config.table().unwrap();
        assert!(table.h1(1).starts_with(b"GET /1 HTTP/1.1\r\n"));
        let Traffic::Mix(m) = &config.traffic else { unreachable!() };
        let mut m = (**m).clone();
        m.entries[1].headers.push(("Connection".into(), "close".into()));
        config.traffic = Traffic::Mix(Arc::new(m));
        config.protocol = Protocol::Http2 { streams: 1 };
        let e = config.table().unwrap_err().to_string();
        assert!(e.starts_with("list:2: header connection is not allowed in HTTP/2"), "{e}");
    }
}

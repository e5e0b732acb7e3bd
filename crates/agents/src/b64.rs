//! Byte strings (HdrHistogram V2 encodings) as base64 text, for `#[serde(with = ...)]` on the
//! fields of [`crate::part`] and [`crate::stream`] that travel in the rendezvous's messages
//! ([`crate::wire`] says why base64).

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One byte string, borrowed, as it is written.
struct Text<'a>(&'a [u8]);

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(self.0))
    }
}

/// One byte string, as it is read.
struct Bytes(Vec<u8>);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct Base64;
        impl Visitor<'_> for Base64 {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("base64 text")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                STANDARD.decode(v).map(Bytes).map_err(E::custom)
            }
        }
        d.deserialize_str(Base64)
    }
}

/// `Vec<u8>`.
pub mod one {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        Text(v).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Bytes::deserialize(d).map(|b| b.0)
    }
}

/// `Vec<Vec<u8>>`.
pub mod list {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|b| Text(b)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Ok(Vec::<Bytes>::deserialize(d)?.into_iter().map(|b| b.0).collect())
    }
}

/// Interval histograms: per tag, per worker, (second, V2).
pub mod intervals {
    use super::*;

    type Of<B> = Vec<(Option<String>, Vec<Vec<(u32, B)>>)>;

    pub fn serialize<S: Serializer>(v: &Of<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|(tag, workers)| {
            let workers: Vec<Vec<(u32, Text)>> = workers
                .iter()
                .map(|w| w.iter().map(|(second, b)| (*second, Text(b))).collect())
                .collect();
            (tag, workers)
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Of<Vec<u8>>, D::Error> {
        let read = Of::<Bytes>::deserialize(d)?;
        let bytes = |w: Vec<(u32, Bytes)>| w.into_iter().map(|(s, b)| (s, b.0)).collect();
        Ok(read
            .into_iter()
            .map(|(tag, workers)| (tag, workers.into_iter().map(bytes).collect()))
            .collect())
    }
}

//! loadlab's visitors: what a visit is, read from the files that describe one, and the state a
//! visitor carries from one answer to its next request. No I/O: the engine drives the visits.
//!
//! - [`Visit`] (`model`): bursts of [`Call`]s with a [`Think`] time after each; a burst's first
//!   call goes alone, the others once its answer is in (httperf's bursts, a page and its
//!   resources).
//! - Two files make one: a visit file in the suites' TOML style (`visit_file`), and httperf's
//!   `--wsesslog` session log (`wsesslog`), read as its man page documents it.
//! - A visitor's state ([`Visitor`]): its cookie jar (`cookies`) and the values it captured
//!   (`capture`, used by later calls' [`Template`]s as `{name}`); [`Check`]s say when a visit
//!   fails.
//! - `discover` finds a page's resources in its HTML and CSS, once, before any load; `cache`
//!   says what a repeat view does with each (RFC 9111).

pub mod cache;
pub mod capture;
pub mod cookies;
pub mod discover;
mod duration;
mod error;
pub mod model;
pub mod template;
pub mod visit_file;
pub mod visitor;
pub mod wsesslog;

pub use capture::{Capture, Check, Response, Source, CHECK_CLASSES};
pub use cookies::Jar;
pub use error::VisitError;
pub use model::{Burst, Call, Think, Visit};
pub use template::{given_refusal, Template, Vars};
pub use visitor::{Broken, Visitor};

/// The name every visit may use without capturing it: `{visitor}`, the visitor's number
/// (from 1; no two visitors in a visit at once share one), in a step and in a given value.
pub const VISITOR: &str = "visitor";

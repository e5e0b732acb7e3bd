//! loadlab's load generator.
pub mod error;
pub mod http;
pub use error::{EngineError, ErrorClass, ErrorCounts};

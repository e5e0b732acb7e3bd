// Every unsafe block of the tests is in `support::sys` and says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]

mod support;

mod agents;
mod it;
mod schema;

mod lab;
mod run;

mod remote;

mod docs;

//! One module per area.

mod browser;
mod report;

//! One module per area.

mod browser;
mod profiles;
mod report;

//! loadlab-report end to end: a synthetic but realistic run through a real store file into the
//! HTML report, and the report opened in headless Chromium.

mod it;
mod support;

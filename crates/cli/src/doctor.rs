//! `loadlab doctor`: what is installed of the lab's packages, the limits that bound a load
//! test (open files, ephemeral ports, listen backlog), the CPUs, and stale lab instances.

use std::io::Write;

use clap::Args;
use loadlab_output::doctor as output;
use loadlab_remote::Host;
use loadlab_runner::commands::doctor;

use crate::exit::{failure, OK};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Ask that lab host's loadlab instead, over ssh (the binary is copied there if need
    /// be, as `stack up --host` does).
    #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host)]
    host: Option<Host>,
}

pub fn run(args: DoctorArgs) -> anyhow::Result<u8> {
    if let Some(host) = &args.host {
        return crate::remote::pass_through(host);
    }
    let found = doctor::find().map_err(failure)?;
    let warnings = doctor::warnings(&found);
    if args.json {
        writeln!(std::io::stdout(), "{:#}", output::json(&found, &warnings))?;
    } else {
        output::write_text(&mut std::io::stdout().lock(), &found, &warnings)?;
    }
    Ok(OK)
}

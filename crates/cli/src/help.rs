//! Help texts more than one flag shares, made from what the program does (the URL schemes, the
//! network profiles the net crate knows), and the test that every flag's help agrees with the
//! docs' tables.

use loadlab_lab::net::profile::{Profile, BUILT_IN};

/// A benchmark target's URL, as `bench` and `sweep` take it.
pub const URL: &str = "The target, an http:// or https:// URL (host name, IPv4 or [IPv6] \
                       literal); https:// trusts the system's CAs, --cacert or --insecure";

/// `--net`'s help: `lead`, then the profiles, each built-in one from the net crate with its
/// shape, then the custom form, so that `stack up --net` and `run --net` say the same.
pub fn net_profiles(lead: &str) -> String {
    let names: Vec<String> = BUILT_IN.iter().map(|name| described(name)).collect();
    format!(
        "{lead}: {}, or rate=RATE[,delay=D][,jitter=J][,loss=P%] (e.g. rate=50mbit,delay=5ms,loss=0.1%; \
         delay, jitter and loss each way); delay, jitter or loss may end in ,via=netem or \
         ,via=stage. Needs root and iproute2",
        names.join(", ")
    )
}

/// A built-in profile's name with what it is.
fn described(name: &str) -> String {
    let Ok(p) = name.parse::<Profile>() else { return name.to_string() };
    if p.is_loopback() {
        return format!("{name} (the default)");
    }
    let Some(rate) = p.rate_bps else { return name.to_string() };
    let rate = format!("{} Mbit/s", rate / 1_000_000);
    if !p.has_delay() {
        return format!("{name} ({rate})");
    }
    format!(
        "{name} ({rate}, {} ms each way, {} ms jitter, {}% loss)",
        p.delay.as_millis(),
        p.jitter.as_millis(),
        p.loss * 100.0
    )
}

#[cfg(test)]
mod tests;

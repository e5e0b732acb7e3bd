//! What a network profile says: the built-in ones (`loopback`, `lan-100mbit`, `lan-1gbit`,
//! `wan`), the custom form (`rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%`), and which path
//! carries its delay, jitter and loss ([`DelayPath`]: netem, or loadlab's own stage), chosen by
//! `via=` or by what the kernel has.

use std::str::FromStr;
use std::time::Duration;

/// A link's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// `loopback`, `lan-100mbit`, ... or `custom` for the `rate=...,delay=...` form.
    pub name: String,
    /// Bandwidth each way, bit/s; `None`: not shaped (loopback).
    pub rate_bps: Option<u64>,
    /// One-way delay, and its jitter.
    pub delay: Duration,
    pub jitter: Duration,
    /// Loss each way, as a fraction.
    pub loss: f64,
    /// The delay path the user asked for (`via=`); `None`: the machine's default.
    pub via: Option<DelayPath>,
}

/// What carries a profile's delay, jitter and loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelayPath {
    /// The kernel's network emulator (sch_netem) on each end of a veth pair.
    Netem,
    /// loadlab's own stage between two TUN devices ([`crate::stage`]).
    Stage,
}

impl DelayPath {
    pub fn as_str(self) -> &'static str {
        match self {
            DelayPath::Netem => "netem",
            DelayPath::Stage => "stage",
        }
    }
}

impl std::fmt::Display for DelayPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DelayPath {
    type Err = String;

    fn from_str(s: &str) -> Result<DelayPath, String> {
        match s.trim() {
            "netem" => Ok(DelayPath::Netem),
            "stage" => Ok(DelayPath::Stage),
            other => Err(format!("via={other:?} is not netem or stage")),
        }
    }
}

/// The built-in profiles' names, in the order help texts list them.
pub const BUILT_IN: [&str; 4] = ["loopback", "lan-100mbit", "lan-1gbit", "wan"];

/// Said when netem is asked for where the kernel has none.
pub const NO_NETEM: &str = "this kernel has no netem (CONFIG_NET_SCH_NETEM is not set, or its \
                            sch_netem module is missing): leave via= out, or say via=stage for \
                            loadlab's own delay stage";

impl Profile {
    pub fn is_loopback(&self) -> bool {
        self.name == "loopback"
    }

    /// Delay, jitter or loss: what needs netem or loadlab's delay stage.
    pub fn has_delay(&self) -> bool {
        !self.delay.is_zero() || !self.jitter.is_zero() || self.loss > 0.0
    }

    /// Which path carries the delay: the one `via=` names, else netem where the kernel has it
    /// and the stage where it does not; `None` for a profile without delay, jitter or loss.
    /// `netem` (whether the kernel has it) is asked only when the answer depends on it. An
    /// error when `via=netem` meets a kernel without netem.
    pub fn delay_path(&self, netem: impl FnOnce() -> bool) -> Result<Option<DelayPath>, String> {
        if !self.has_delay() {
            return Ok(None);
        }
        if self.via == Some(DelayPath::Stage) {
            return Ok(Some(DelayPath::Stage));
        }
        match (self.via, netem()) {
            (_, true) => Ok(Some(DelayPath::Netem)),
            (Some(DelayPath::Netem), false) => Err(NO_NETEM.into()),
            (_, false) => Ok(Some(DelayPath::Stage)),
        }
    }

    fn shaped(name: &str, mbit: u64) -> Profile {
        Profile {
            name: name.into(),
            rate_bps: Some(mbit * 1_000_000),
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            via: None,
        }
    }
}

impl FromStr for Profile {
    type Err = String;

    /// A built-in name, optionally followed by `,via=netem|stage`, or the custom form.
    fn from_str(s: &str) -> Result<Profile, String> {
        let mut parts = s.split(',');
        let first = parts.next().unwrap_or_default().trim();
        let p = if first.contains('=') {
            custom_profile(s)?
        } else {
            let mut p = built_in(first)?;
            for part in parts {
                match part.split_once('=') {
                    Some((key, value)) if key.trim() == "via" => {
                        p.via =
                            Some(value.parse().map_err(|e| format!("network profile {s:?}: {e}"))?)
                    }
                    _ => {
                        return Err(format!(
                            "network profile {s:?}: after a built-in profile only via=netem or \
                             via=stage may follow ({part:?}); other shapes take the custom form \
                             rate=...,delay=...,jitter=...,loss=..."
                        ))
                    }
                }
            }
            p
        };
        if p.via.is_some() && !p.has_delay() {
            return Err(format!(
                "network profile {s:?}: via= chooses what carries delay, jitter and loss, and {} \
                 has none",
                p.name
            ));
        }
        Ok(p)
    }
}

fn built_in(name: &str) -> Result<Profile, String> {
    match name {
        "loopback" => Ok(Profile { rate_bps: None, ..Profile::shaped(name, 0) }),
        "lan-100mbit" => Ok(Profile::shaped(name, 100)),
        "lan-1gbit" => Ok(Profile::shaped(name, 1_000)),
        // 40 ms round trip: 20 ms each way, 2 ms of jitter, 0.1% loss, at 100 Mbit/s.
        "wan" => Ok(Profile {
            delay: Duration::from_millis(20),
            jitter: Duration::from_millis(2),
            loss: 0.001,
            ..Profile::shaped(name, 100)
        }),
        other => Err(format!(
            "unknown network profile {other:?}: loopback, lan-100mbit, lan-1gbit, wan, or \
             rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%, each optionally with ,via=netem or \
             ,via=stage"
        )),
    }
}

/// `rate=100mbit,delay=20ms,jitter=2ms,loss=0.1%,via=netem`: any subset, `rate` needed.
fn custom_profile(s: &str) -> Result<Profile, String> {
    let mut p = Profile { rate_bps: None, ..Profile::shaped("custom", 0) };
    for part in s.split(',') {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("network profile {s:?}: {part:?} is not key=value"))?;
        let bad = |what: &str| format!("network profile {s:?}: {key}={value:?} is not {what}");
        match key.trim() {
            "rate" => {
                p.rate_bps =
                    Some(parse_rate(value.trim()).ok_or_else(|| bad("a rate such as 100mbit"))?)
            }
            "delay" => {
                p.delay = humantime::parse_duration(value.trim()).map_err(|_| bad("a duration"))?
            }
            "jitter" => {
                p.jitter = humantime::parse_duration(value.trim()).map_err(|_| bad("a duration"))?
            }
            "loss" => {
                let pct: f64 =
                    value.trim().trim_end_matches('%').parse().map_err(|_| bad("a percentage"))?;
                if !(0.0..100.0).contains(&pct) {
                    return Err(bad("a percentage below 100"));
                }
                p.loss = pct / 100.0;
            }
            "via" => {
                p.via = Some(value.parse().map_err(|e| format!("network profile {s:?}: {e}"))?)
            }
            other => {
                return Err(format!(
                    "network profile {s:?}: unknown key {other:?} (rate, delay, jitter, loss, via)"
                ))
            }
        }
    }
    if p.rate_bps.is_none() {
        return Err(format!("network profile {s:?}: rate= is needed (e.g. rate=100mbit)"));
    }
    Ok(p)
}

/// `100mbit`, `1gbit`, `500kbit`, `2000000bit` in bit/s.
fn parse_rate(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let (digits, scale) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
        .iter()
        .find_map(|(suffix, scale)| lower.strip_suffix(suffix).map(|d| (d.to_string(), *scale)))?;
    let n: f64 = digits.trim().parse().ok()?;
    (n > 0.0).then_some((n * scale) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_and_custom_profiles() {
        let lan: Profile = "lan-100mbit".parse().unwrap();
        assert_eq!((lan.rate_bps, lan.has_delay()), (Some(100_000_000), false));
        assert!("loopback".parse::<Profile>().unwrap().is_loopback());
        let wan: Profile = "wan".parse().unwrap();
        assert_eq!((wan.delay, wan.loss, wan.via), (Duration::from_millis(20), 0.001, None));
        for name in BUILT_IN {
            assert_eq!(name.parse::<Profile>().unwrap().name, name);
        }
        assert!(wan.has_delay());
        let c: Profile = "rate=50mbit,delay=10ms,loss=0.5%".parse().unwrap();
        assert_eq!(
            (c.rate_bps, c.delay, c.loss),
            (Some(50_000_000), Duration::from_millis(10), 0.005)
        );
        for bad in ["lan", "rate=fast", "delay=10ms", "rate=1mbit,loss=100%", "rate=1mbit,mtu=9000"]
        {
            assert!(bad.parse::<Profile>().is_err(), "{bad}");
        }
        assert_eq!(parse_rate("1gbit"), Some(1_000_000_000));
        assert_eq!(parse_rate("500kbit"), Some(500_000));
        assert_eq!(parse_rate("0mbit"), None);
    }

    #[test]
    fn via_names_the_delay_path_after_a_built_in_or_in_the_custom_form() {
        let wan: Profile = "wan,via=stage".parse().unwrap();
        assert_eq!((wan.name.as_str(), wan.via), ("wan", Some(DelayPath::Stage)));
        assert_eq!(wan.delay, Duration::from_millis(20));
        let c: Profile = "rate=1gbit,delay=1ms,via=netem".parse().unwrap();
        assert_eq!((c.name.as_str(), c.via), ("custom", Some(DelayPath::Netem)));
        for bad in [
            "wan,via=tc",            // neither path
            "wan,delay=5ms",         // a built-in takes nothing else
            "lan-100mbit,via=netem", // nothing to carry
            "rate=1gbit,via=stage",  // nor here
            "loopback,via=stage",
        ] {
            let err = bad.parse::<Profile>().unwrap_err();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn the_delay_path_is_netem_where_the_kernel_has_it_unless_via_says() {
        let p = |s: &str| s.parse::<Profile>().unwrap();
        let asked = std::cell::Cell::new(0);
        let has = |yes: bool| {
            let asked = &asked;
            move || {
                asked.set(asked.get() + 1);
                yes
            }
        };
        assert_eq!(p("wan").delay_path(has(true)), Ok(Some(DelayPath::Netem)));
        assert_eq!(p("wan").delay_path(has(false)), Ok(Some(DelayPath::Stage)));
        assert_eq!(p("wan,via=netem").delay_path(has(true)), Ok(Some(DelayPath::Netem)));
        assert_eq!(p("wan,via=netem").delay_path(has(false)), Err(NO_NETEM.to_string()));
        assert_eq!(asked.get(), 4);
        // Where the answer cannot depend on the kernel, the kernel is not asked.
        assert_eq!(p("wan,via=stage").delay_path(has(true)), Ok(Some(DelayPath::Stage)));
        assert_eq!(p("lan-1gbit").delay_path(has(true)), Ok(None));
        assert_eq!(asked.get(), 4);
    }
}

//! The settings an experiment varies on a stack (keep-alive, gzip, OPcache, workers, CPUs),
//! with the defaults that hold when a knob is not given.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A switch given as `on` or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    pub fn is_on(self) -> bool {
        self == OnOff::On
    }
}

impl FromStr for OnOff {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "on" => Ok(OnOff::On),
            "off" => Ok(OnOff::Off),
            other => Err(format!("expected on or off, not {other:?}")),
        }
    }
}

impl fmt::Display for OnOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_on() { "on" } else { "off" })
    }
}

/// How one instance of a stack is set up. `Default` is each server's setting as the seeds
/// ran them: keep-alive on, gzip off, OPcache on, the database only where the stack needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knobs {
    /// The front tier's port on 127.0.0.1; `None` picks a free one.
    pub port: Option<u16>,
    /// HTTP keep-alive on the front tier (off: each response closes its connection).
    pub keepalive: OnOff,
    /// gzip of text responses by the tier that serves them.
    pub gzip: OnOff,
    /// OPcache in every PHP tier; `None` is on (only PHP stacks accept the knob).
    pub opcache: Option<OnOff>,
    /// A MariaDB tier for the PHP pages that need one; `None` is the stack's default.
    pub db: Option<OnOff>,
    /// Worker processes of the tiers that take a fixed count: nginx `worker_processes`,
    /// php-fpm `pm.max_children` (pm = static), spawn-fcgi's php-cgi children, Apache
    /// prefork `MaxRequestWorkers`, Apache event processes. `None`: each server's default.
    pub workers: Option<u32>,
    /// CPUs every process of the stack is pinned to (`0`, `0,2-3`).
    pub cpus: Option<CpuList>,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            port: None,
            keepalive: OnOff::On,
            gzip: OnOff::Off,
            opcache: None,
            db: None,
            workers: None,
            cpus: None,
        }
    }
}

impl Knobs {
    pub fn opcache_on(&self) -> bool {
        self.opcache.is_none_or(OnOff::is_on)
    }
}

/// A set of CPU numbers, as taskset's `-c` takes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuList(pub Vec<usize>);

impl FromStr for CpuList {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("bad CPU list {s:?}: expected numbers and ranges, as 0,2-3");
        let mut cpus = Vec::new();
        for part in s.split(',') {
            let (lo, hi) = part.split_once('-').unwrap_or((part, part));
            let lo: usize = lo.trim().parse().map_err(|_| bad())?;
            let hi: usize = hi.trim().parse().map_err(|_| bad())?;
            if lo > hi || hi >= libc::CPU_SETSIZE as usize {
                return Err(bad());
            }
            cpus.extend(lo..=hi);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList(cpus))
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_like_taskset() {
        assert_eq!("0".parse::<CpuList>().unwrap().0, vec![0]);
        assert_eq!("3,0-1,1".parse::<CpuList>().unwrap().0, vec![0, 1, 3]);
        assert!("1-0".parse::<CpuList>().is_err());
        assert!("a".parse::<CpuList>().is_err());
        assert!("".parse::<CpuList>().is_err());
    }

    #[test]
    fn on_off() {
        assert_eq!("on".parse::<OnOff>(), Ok(OnOff::On));
        assert!("yes".parse::<OnOff>().is_err());
        assert!(Knobs::default().opcache_on());
    }
}

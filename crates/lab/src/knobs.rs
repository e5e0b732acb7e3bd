//! The settings an experiment varies on a stack (keep-alive, gzip, OPcache, workers, access
//! logs, CPUs, TLS and HTTP/2 on the front tier, the user's own config and docroot), with the
//! defaults that hold when a knob is not given.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
/// A record written before a knob existed reads it as its default (`serde(default)`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Knobs {
    /// The front tier's port; `None` picks a free one.
    pub port: Option<u16>,
    /// The address the front tier binds (one of this host's, `0.0.0.0` or `::`) so that
    /// clients elsewhere reach it; `None` is 127.0.0.1. Every tier behind it stays on loopback
    /// or unix sockets. Not written when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<std::net::IpAddr>,
    /// HTTP keep-alive on the front tier (off: each response closes its connection).
    pub keepalive: OnOff,
    /// How long an idle kept-alive connection stays open; `None` is 15 s (seed 003's), or
    /// Varnish's own 5 s `timeout_idle` in front.
    pub keepalive_timeout: Option<Timeout>,
    /// Requests served on one connection before the server closes it (nginx
    /// `keepalive_requests`, Apache `MaxKeepAliveRequests`); `None`: each server's default.
    pub keepalive_requests: Option<u32>,
    /// gzip of text responses by the tier that serves them.
    pub gzip: OnOff,
    /// OPcache in every PHP tier; `None` is on (only PHP stacks accept the knob).
    pub opcache: Option<OnOff>,
    /// A MariaDB tier for the PHP pages that need one; `None` is the stack's default.
    pub db: Option<OnOff>,
    /// Worker processes of the web tier: nginx `worker_processes`, Apache prefork
    /// `MaxRequestWorkers` (mod_php runs in those), Apache event processes. `None`: each
    /// server's default.
    pub workers: Option<u32>,
    /// PHP processes of a separate PHP tier: php-fpm `pm.max_children` (pm = static),
    /// spawn-fcgi's php-cgi children. `None`: 5, Debian's pool default.
    pub php_workers: Option<u32>,
    /// Access logs (one line per request) into the run directory's `logs/`, by every nginx
    /// and Apache tier; off, as seed 002 ran, unless an experiment logged as seed 004 did.
    pub access_log: OnOff,
    /// CPUs every process of the stack is pinned to (`0`, `0,2-3`).
    pub cpus: Option<CpuList>,
    /// The network profile the stack runs behind (see [`loadlab_net`]): `None` or `loopback`
    /// is 127.0.0.1; another puts the stack in a namespace of its own behind a shaped link.
    pub net: Option<String>,
    /// HTTPS on the front tier (nginx, Apache mod_ssl, or hitch in front of Varnish), with a
    /// certificate made for the instance by its own CA (see [`crate::cert`]). Not written
    /// when off, so that runs stored before the knob existed read the same.
    #[serde(skip_serializing_if = "is_off")]
    pub tls: OnOff,
    /// HTTP/2 on the front tier: offered by ALPN beside HTTP/1.1 with `tls` on, and as h2c
    /// with prior knowledge (RFC 9113 section 3.3) without it. Not written when off.
    #[serde(skip_serializing_if = "is_off")]
    pub http2: OnOff,
    /// The user's own config snippets, merged at the include points their names say (see
    /// [`crate::own`]). Not written when absent, as the two below.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<crate::includes::Config>,
    /// A directory of the user's files (a site, a PHP application), absolute, served beside
    /// the lab's workload files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docroot: Option<std::path::PathBuf>,
    /// PHP's own stacks ready to be sampled by php-excimer in every PHP tier (see
    /// [`crate::profiler::php`]): set by a profiled run, not by a suite. Not written when off.
    #[serde(skip_serializing_if = "is_off")]
    pub excimer: OnOff,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            port: None,
            listen: None,
            keepalive: OnOff::On,
            keepalive_timeout: None,
            keepalive_requests: None,
            gzip: OnOff::Off,
            opcache: None,
            db: None,
            workers: None,
            php_workers: None,
            access_log: OnOff::Off,
            cpus: None,
            net: None,
            tls: OnOff::Off,
            http2: OnOff::Off,
            config: None,
            docroot: None,
            excimer: OnOff::Off,
        }
    }
}

fn is_off(v: &OnOff) -> bool {
    !v.is_on()
}

/// The keep-alive timeout nginx and Apache get without the knob: seed 003's 15 s.
pub const DEFAULT_KEEPALIVE_TIMEOUT: Timeout = Timeout { ms: 15_000 };

/// PHP processes without `php_workers`: Debian's php-fpm pool allows 5 children.
pub const DEFAULT_PHP_WORKERS: u32 = 5;

impl Knobs {
    pub fn opcache_on(&self) -> bool {
        self.opcache.is_none_or(OnOff::is_on)
    }

    /// The keep-alive timeout of nginx and Apache.
    pub fn keepalive_timeout(&self) -> Timeout {
        self.keepalive_timeout.unwrap_or(DEFAULT_KEEPALIVE_TIMEOUT)
    }

    pub fn php_workers(&self) -> u32 {
        self.php_workers.unwrap_or(DEFAULT_PHP_WORKERS)
    }

    /// Whether the user gave a file for the include point `point`.
    pub fn has_own(&self, point: crate::includes::Point) -> bool {
        self.config.as_ref().is_some_and(|c| c.has(point))
    }
}

/// A keep-alive timeout: above zero, in whole milliseconds (the finest unit nginx, Apache and
/// Varnish all take), written `15s` or `500ms` (a bare number is seconds, as nginx reads it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timeout {
    ms: u64,
}

impl Timeout {
    pub fn as_millis(self) -> u64 {
        self.ms
    }

    /// Whole seconds, or `None` when the timeout has a fraction of one.
    pub fn whole_secs(self) -> Option<u64> {
        self.ms.is_multiple_of(1000).then_some(self.ms / 1000)
    }

    /// As nginx's `keepalive_timeout` and Apache's `KeepAliveTimeout` both read it: a bare
    /// number of seconds, or milliseconds with `ms`.
    pub fn config_value(self) -> String {
        self.whole_secs().map_or_else(|| format!("{}ms", self.ms), |s| s.to_string())
    }
}

impl TryFrom<Duration> for Timeout {
    type Error = String;
    fn try_from(d: Duration) -> Result<Self, String> {
        if d.is_zero() {
            return Err("a keep-alive timeout must be above zero (keep-alive off closes every \
                        connection)"
                .into());
        }
        if !d.subsec_nanos().is_multiple_of(1_000_000) {
            return Err(format!("{d:?}: give whole milliseconds"));
        }
        let ms = u64::try_from(d.as_millis()).map_err(|_| format!("{d:?} is too long"))?;
        Ok(Timeout { ms })
    }
}

impl FromStr for Timeout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let d = match s.parse::<u64>() {
            Ok(secs) => Duration::from_secs(secs),
            Err(_) => humantime::parse_duration(s)
                .map_err(|e| format!("invalid duration {s:?} ({e}); use e.g. 15s, 500ms"))?,
        };
        Timeout::try_from(d)
    }
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.whole_secs() {
            Some(secs) => write!(f, "{secs}s"),
            None => write!(f, "{}ms", self.ms),
        }
    }
}

/// As its text (`"15s"`), so that stored knobs and reports read as the flag was given.
impl Serialize for Timeout {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
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
    fn timeouts_parse_and_print_as_given() {
        let t = |s: &str| s.parse::<Timeout>();
        assert_eq!(t("15s").unwrap().as_millis(), 15_000);
        assert_eq!(t("15").unwrap().to_string(), "15s");
        assert_eq!(t("500ms").unwrap().to_string(), "500ms");
        assert_eq!(t("1m").unwrap().whole_secs(), Some(60));
        assert_eq!(t("1500ms").unwrap().whole_secs(), None);
        assert_eq!(t("1500ms").unwrap().config_value(), "1500ms");
        assert_eq!(t("15s").unwrap().config_value(), "15");
        for bad in ["0s", "0", "", "fast", "1us", "-1s"] {
            assert!(t(bad).is_err(), "{bad}");
        }
        let json = serde_json::to_string(&t("2s").unwrap()).unwrap();
        assert_eq!(json, "\"2s\"");
        assert_eq!(serde_json::from_str::<Timeout>(&json).unwrap(), t("2s").unwrap());
    }

    #[test]
    fn a_record_from_before_a_knob_reads_its_default() {
        let old = r#"{"port":null,"keepalive":"on","gzip":"off","opcache":null,"db":null,
                      "workers":2,"cpus":null}"#;
        let knobs: Knobs = serde_json::from_str(old).unwrap();
        assert_eq!(knobs, Knobs { workers: Some(2), ..Knobs::default() });
    }

    #[test]
    fn tls_and_http2_are_stored_only_when_on() {
        let json = serde_json::to_value(Knobs::default()).unwrap();
        assert!(json.get("tls").is_none() && json.get("http2").is_none(), "{json}");
        let on = Knobs { tls: OnOff::On, http2: OnOff::On, ..Knobs::default() };
        let json = serde_json::to_value(&on).unwrap();
        assert_eq!((&json["tls"], &json["http2"]), (&"on".into(), &"on".into()));
        assert_eq!(serde_json::from_value::<Knobs>(json).unwrap(), on);
    }

    #[test]
    fn on_off() {
        assert_eq!("on".parse::<OnOff>(), Ok(OnOff::On));
        assert!("yes".parse::<OnOff>().is_err());
        assert!(Knobs::default().opcache_on());
    }
}

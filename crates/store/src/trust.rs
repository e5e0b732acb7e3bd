//! What a cell's figures can be taken to say, as the runner judged it: the one [`Flag`] type
//! (raised by the runner's verdict, kept here by name, shown by the report) and the one
//! [`Limit`] (what limited the figure). Both are plain data, so the store, below the runner,
//! holds them, and the runner and the report use the same enums instead of strings.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a figure should not be taken at face value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Flag {
    /// The client used (nearly) all the CPU it had.
    ClientSaturated,
    /// The client's workers waited for a CPU while runnable for a material share of the run.
    ClientStarved,
    /// EMFILE/ENFILE or EADDRNOTAVAIL: the client ran out of descriptors or local ports.
    FdExhausted,
    /// The open-file limit is below what the connections need.
    FdLimitLow,
    /// The link carried (nearly) its capacity, or its queue or round trip set the pace.
    NetworkBound,
    /// The open-loop schedule fell behind.
    ScheduleMissed,
    /// Every allowed connection was busy at some point (open loop and sessions).
    ConnectionsExhausted,
    /// Closed loop: fewer connections were open at once than asked.
    ConnectionsShort,
    /// Requests failed (the detail says which classes and how many).
    Errors,
    /// Responses that were not 2xx were counted as completed.
    Non2xx,
    /// Visits' checks failed on answers that count as completed requests.
    ChecksFailed,
    /// Visitor numbers went above the users the lab made for them: visitors shared users.
    VisitorsPastUsers,
    /// Nothing completed: there is no rate or latency.
    NothingCompleted,
    /// The run was stopped before its end.
    Interrupted,
    /// A flag this version has no name for (written by a newer loadlab), kept as written.
    Other(String),
}

impl Flag {
    /// Every flag this version raises, with its name in JSON, in the store and in the report.
    const NAMES: [(Flag, &'static str); 14] = [
        (Flag::ClientSaturated, "client_saturated"),
        (Flag::ClientStarved, "client_starved"),
        (Flag::FdExhausted, "fd_exhausted"),
        (Flag::FdLimitLow, "fd_limit_low"),
        (Flag::NetworkBound, "network_bound"),
        (Flag::ScheduleMissed, "schedule_missed"),
        (Flag::ConnectionsExhausted, "connections_exhausted"),
        (Flag::ConnectionsShort, "connections_short"),
        (Flag::Errors, "errors"),
        (Flag::Non2xx, "non_2xx"),
        (Flag::ChecksFailed, "checks_failed"),
        (Flag::VisitorsPastUsers, "visitors_past_users"),
        (Flag::NothingCompleted, "nothing_completed"),
        (Flag::Interrupted, "interrupted"),
    ];

    /// The name of every flag this version raises, in [`Flag::NAMES`]' order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Flag::NAMES.iter().map(|(_, name)| *name)
    }

    /// The flag's name in JSON, in the `flags.flag` column and in the report.
    pub fn name(&self) -> &str {
        match self {
            Flag::Other(s) => s,
            known => Flag::NAMES
                .iter()
                .find(|(f, _)| f == known)
                .map(|(_, name)| *name)
                .expect("every flag but Other is named in NAMES"),
        }
    }

    /// The same name; the store's older spelling.
    pub fn as_str(&self) -> &str {
        self.name()
    }

    /// Whether the flag says the figure is the client's or the network's limit: then it says
    /// nothing about the server. What ends a knee search (a ramp's second, a bench's trust)
    /// reads this list, which leaves a missed schedule out on purpose: requests waiting for a
    /// busy connection of a server past its knee go out late too, so a missed schedule alone
    /// does not say whose limit the rate was ([`Flag::clients_figure`] adds it where that
    /// does not matter).
    pub fn untrusted(&self) -> bool {
        matches!(
            self,
            Flag::ClientSaturated | Flag::ClientStarved | Flag::FdExhausted | Flag::NetworkBound
        )
    }

    /// Whether a figure so flagged measures the client rather than the server: the client's
    /// or the link's limit ([`Flag::untrusted`]), or an open-loop schedule not kept: its
    /// latency then counts the delay in sending, whoever caused it. A comparison of two runs
    /// cannot blame the server for it (`compare --fail-on-regression` leaves it out unless
    /// `--gate-untrusted`).
    pub fn clients_figure(&self) -> bool {
        self.untrusted() || matches!(self, Flag::ScheduleMissed)
    }
}

impl From<&str> for Flag {
    fn from(s: &str) -> Flag {
        Flag::NAMES
            .iter()
            .find(|(_, name)| *name == s)
            .map_or_else(|| Flag::Other(s.to_owned()), |(f, _)| f.clone())
    }
}

impl From<String> for Flag {
    fn from(s: String) -> Flag {
        Flag::from(s.as_str())
    }
}

impl From<Flag> for String {
    fn from(f: Flag) -> String {
        f.name().to_owned()
    }
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A trust flag raised on a cell, with what a person needs to judge it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustFlag {
    pub flag: Flag,
    /// e.g. "client CPU 98%", "1 203 connreset of 50 000".
    pub detail: String,
}

/// What limited a figure.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "tier")]
pub enum Limit {
    /// The load generator: its CPU, a CPU it waited for, its descriptors or ports, its
    /// connection cap.
    Client,
    /// The link between client and server.
    Network,
    /// A worker pool (php-fpm children, Apache workers) was full.
    WorkerPool(String),
    /// A tier's processes used the CPUs they had.
    TierCpu(String),
    /// The database tier.
    Database,
    /// Every CPU of the machine was busy, client and servers together.
    MachineCpu,
    /// The server kept up with the offered rate: the figure is the offer, not a limit.
    Offered,
    /// Nothing measured says.
    NotDetermined,
}

impl Limit {
    /// How the limit is named in tables: `client`, `php-fpm pool`, `nginx CPU`...
    pub fn name(&self) -> String {
        match self {
            Limit::Client => "client".into(),
            Limit::Network => "network".into(),
            Limit::WorkerPool(t) => format!("{t} pool"),
            Limit::TierCpu(t) => format!("{t} CPU"),
            Limit::Database => "database".into(),
            Limit::MachineCpu => "machine CPU".into(),
            Limit::Offered => "offered load".into(),
            Limit::NotDetermined => "not determined".into(),
        }
    }

    /// Its `kind` in the store and in JSON: `client`, `worker_pool`, `not_determined`...
    pub fn kind(&self) -> &'static str {
        match self {
            Limit::Client => "client",
            Limit::Network => "network",
            Limit::WorkerPool(_) => "worker_pool",
            Limit::TierCpu(_) => "tier_cpu",
            Limit::Database => "database",
            Limit::MachineCpu => "machine_cpu",
            Limit::Offered => "offered",
            Limit::NotDetermined => "not_determined",
        }
    }

    /// The tier, for a pool or a tier's CPU.
    pub fn tier(&self) -> Option<&str> {
        match self {
            Limit::WorkerPool(t) | Limit::TierCpu(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the figure is the client's or the network's, not the servers': a comparison
    /// of servers on it would credit one with the link's or the load generator's limit.
    pub fn not_the_servers(&self) -> bool {
        matches!(self, Limit::Client | Limit::Network)
    }

    fn from_kind(kind: &str, tier: Option<String>) -> Option<Limit> {
        Some(match (kind, tier) {
            ("client", _) => Limit::Client,
            ("network", _) => Limit::Network,
            ("worker_pool", Some(t)) => Limit::WorkerPool(t),
            ("tier_cpu", Some(t)) => Limit::TierCpu(t),
            ("database", _) => Limit::Database,
            ("machine_cpu", _) => Limit::MachineCpu,
            ("offered", _) => Limit::Offered,
            ("not_determined", _) => Limit::NotDetermined,
            _ => return None,
        })
    }
}

/// What limited a cell's figures, with the evidence. Kept on disk as
/// `{"kind", "tier", "name", "evidence"}`, as loadlab has always kept it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "StoredLimit", into = "StoredLimit")]
pub struct LimitedBy {
    pub limit: Limit,
    /// e.g. "5 of 5 children busy, listen queue 37"; "nginx 1.93 of 2 CPUs".
    pub evidence: String,
}

impl LimitedBy {
    /// `limited by php-fpm pool: 5 of 5 children busy, listen queue 37`.
    pub fn sentence(&self) -> String {
        match self.limit {
            Limit::NotDetermined => format!("limit not determined: {}", self.evidence),
            Limit::Offered => format!("kept up with the offered load: {}", self.evidence),
            _ => format!("limited by {}: {}", self.limit.name(), self.evidence),
        }
    }
}

/// A [`LimitedBy`] as the `cells.limited_by` column keeps it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct StoredLimit {
    /// `client`, `network`, `worker_pool`, `tier_cpu`, `database`, `machine_cpu`, `offered`,
    /// `not_determined`.
    kind: String,
    /// The tier, for a pool or a tier's CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tier: Option<String>,
    /// How it is named in tables: `php-fpm pool`, `client`.
    name: String,
    evidence: String,
}

impl From<LimitedBy> for StoredLimit {
    fn from(l: LimitedBy) -> StoredLimit {
        StoredLimit {
            kind: l.limit.kind().to_owned(),
            tier: l.limit.tier().map(str::to_owned),
            name: l.limit.name(),
            evidence: l.evidence,
        }
    }
}

impl From<StoredLimit> for LimitedBy {
    /// A kind this version does not know (written by a newer loadlab) reads as not determined,
    /// with what was stored said in the evidence, so the cell still renders.
    fn from(s: StoredLimit) -> LimitedBy {
        match Limit::from_kind(&s.kind, s.tier) {
            Some(limit) => LimitedBy { limit, evidence: s.evidence },
            None => LimitedBy {
                limit: Limit::NotDetermined,
                evidence: format!(
                    "stored as \"{}\" ({}), unknown to this version: {}",
                    s.name, s.kind, s.evidence
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_reads_back_from_its_name() {
        for (flag, name) in &Flag::NAMES {
            assert_eq!(flag.name(), *name);
            assert_eq!(&Flag::from(*name), flag);
        }
        assert_eq!(Flag::from("warm_cache"), Flag::Other("warm_cache".into()));
        assert_eq!(Flag::Other("warm_cache".into()).name(), "warm_cache");
    }

    #[test]
    fn a_limit_keeps_its_stored_spelling() {
        let pool =
            LimitedBy { limit: Limit::WorkerPool("php-fpm".into()), evidence: "5 of 5".into() };
        let json = serde_json::to_value(&pool).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "worker_pool", "tier": "php-fpm", "name": "php-fpm pool",
                               "evidence": "5 of 5"})
        );
        assert_eq!(serde_json::from_value::<LimitedBy>(json).unwrap(), pool);
        let client = serde_json::json!({"kind": "client", "name": "client", "evidence": "e"});
        assert_eq!(serde_json::from_value::<LimitedBy>(client).unwrap().limit, Limit::Client);
    }

    #[test]
    fn an_unknown_kind_reads_as_not_determined_and_says_what_was_stored() {
        let json = serde_json::json!({"kind": "gpu", "name": "GPU", "evidence": "99%"});
        let l: LimitedBy = serde_json::from_value(json).unwrap();
        assert_eq!(l.limit, Limit::NotDetermined);
        assert!(l.evidence.contains("GPU") && l.evidence.contains("99%"), "{}", l.evidence);
    }
}

//! What limited a stored cell's figures, as the report reads it: the runner's decision, stored
//! with the cell (`limited_by`), never judged again here. The one exception is a cell stored
//! by a loadlab older than that decision: its client and network flags stand in for it, and
//! every sentence built from such a cell says so.

use loadlab_store::{CellRecord, Flag, Limit};

/// A cell's limit as the report uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct CellLimit {
    pub limit: Limit,
    pub evidence: String,
    /// Read from the cell's flags because it was stored without a limit (an older loadlab).
    pub from_flags: bool,
}

/// What the flags of a cell stored without a limit say, in the order older reports read them:
/// the network first, then the client.
const LEGACY: [(Flag, Limit); 4] = [
    (Flag::NetworkBound, Limit::Network),
    (Flag::ClientSaturated, Limit::Client),
    (Flag::ClientStarved, Limit::Client),
    (Flag::FdExhausted, Limit::Client),
];

/// The cell's stored limit; for a cell stored without one, the limit its client or network
/// flag names (said as such in the evidence), else `None`: nothing known.
pub fn of(cell: &CellRecord) -> Option<CellLimit> {
    if let Some(l) = &cell.limited_by {
        return Some(CellLimit {
            limit: l.limit.clone(),
            evidence: l.evidence.clone(),
            from_flags: false,
        });
    }
    LEGACY.iter().find_map(|(flag, limit)| {
        let f = cell.flags.iter().find(|f| f.flag == *flag)?;
        let detail = if f.detail.is_empty() { String::new() } else { format!(": {}", f.detail) };
        Some(CellLimit {
            limit: limit.clone(),
            evidence: format!(
                "stored by an older loadlab without a limit, read from its flag {}{detail}",
                f.flag
            ),
            from_flags: true,
        })
    })
}

/// A repetition whose limit was the client's or the network's, not a server's.
#[derive(Debug, Clone)]
pub struct NotTheServers<'a> {
    pub stack: &'a str,
    pub cell: &'a CellRecord,
    pub limit: CellLimit,
}

impl NotTheServers<'_> {
    /// "the load generator limited these figures, not the servers: nginx-fpm, repetition 2
    /// (a worker waited for a CPU 30% of the run)", with how many other repetitions it
    /// limited too (`others`).
    pub fn sentence(&self, others: usize) -> String {
        let who = match self.limit.limit {
            Limit::Network => "the network",
            _ => "the load generator",
        };
        let more = match others {
            0 => String::new(),
            1 => "; and 1 other repetition, by the client or the network".to_owned(),
            n => format!("; and {n} other repetitions, by the client or the network"),
        };
        format!(
            "{who} limited these figures, not the servers: {}, repetition {} ({}){more}",
            self.stack,
            crate::format::repetition(self.cell.repetition),
            self.limit.evidence
        )
    }
}

/// Every repetition of `stacks` (label, cells) whose limit was the client or the network, in
/// plan order.
pub fn not_the_servers<'a>(
    stacks: impl IntoIterator<Item = (&'a str, &'a [&'a CellRecord])>,
) -> Vec<NotTheServers<'a>> {
    let mut out: Vec<NotTheServers<'a>> = stacks
        .into_iter()
        .flat_map(|(stack, cells)| {
            cells.iter().filter_map(move |&cell| {
                let limit = of(cell).filter(|l| l.limit.not_the_servers())?;
                Some(NotTheServers { stack, cell, limit })
            })
        })
        .collect();
    out.sort_by_key(|n| n.cell.ordinal);
    out
}

#[cfg(test)]
mod tests {
    use loadlab_store::{LimitedBy, TrustFlag};

    use super::*;
    use crate::testcell::cell;

    fn limited(limit: Limit, evidence: &str) -> Option<LimitedBy> {
        Some(LimitedBy { limit, evidence: evidence.into() })
    }

    #[test]
    fn the_stored_limit_is_read_whatever_the_flags_say() {
        let mut c = cell("nginx", "hello", 10, 0, 1_000.0);
        c.flags.push(TrustFlag { flag: Flag::ClientStarved, detail: "waited 30%".into() });
        c.limited_by = limited(Limit::MachineCpu, "the machine's CPUs were 99% busy");
        let l = of(&c).unwrap();
        assert_eq!((l.limit, l.from_flags), (Limit::MachineCpu, false));
        assert!(not_the_servers([("nginx", &[&c][..])]).is_empty());
    }

    #[test]
    fn a_cell_stored_without_a_limit_reads_its_flags_and_says_so() {
        let mut c = cell("nginx", "hello", 10, 0, 1_000.0);
        assert_eq!(of(&c), None);
        c.flags.push(TrustFlag { flag: Flag::Errors, detail: "3 connreset".into() });
        assert_eq!(of(&c), None);
        c.flags.push(TrustFlag { flag: Flag::ClientStarved, detail: "waited 30%".into() });
        c.flags.push(TrustFlag { flag: Flag::NetworkBound, detail: String::new() });
        let l = of(&c).unwrap();
        assert_eq!((l.limit, l.from_flags), (Limit::Network, true));
        assert!(l.evidence.contains("older loadlab"), "{}", l.evidence);
    }

    #[test]
    fn the_sentence_names_the_first_repetition_and_counts_the_others() {
        let mut a = cell("apache", "hello", 10, 2, 1_000.0);
        a.ordinal = 5;
        a.limited_by = limited(Limit::Client, "client CPU 98%");
        let mut b = cell("nginx", "hello", 10, 1, 1_000.0);
        b.ordinal = 2;
        b.limited_by = limited(Limit::Client, "waited 40%");
        let (a, b) = ([&a], [&b]);
        let found = not_the_servers([("apache", &a[..]), ("nginx", &b[..])]);
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0].sentence(found.len() - 1),
            "the load generator limited these figures, not the servers: nginx, repetition 2 \
             (waited 40%); and 1 other repetition, by the client or the network"
        );
    }
}

//! The verdict's arithmetic on hand-made cells, with expected values worked out by hand from
//! the order statistics and the exact Mann-Whitney distribution.

use loadlab_stats::Recorder;
use loadlab_store::Flag;

use super::*;
use crate::testcell::{flagged, open_cell, reps};

const NGINX: [f64; 7] = [1_010.0, 990.0, 1_005.0, 1_020.0, 1_000.0, 995.0, 1_015.0];
const APACHE: [f64; 7] = [510.0, 490.0, 505.0, 500.0, 520.0, 495.0, 515.0];

fn two_stacks(a: &[f64], b: &[f64]) -> Vec<CellRecord> {
    let mut cells = reps("nginx", "static", 50, a);
    cells.extend(reps("apache", "static", 50, b));
    cells
}

#[test]
fn separated_stacks_have_a_significant_winner_with_ratio_interval() {
    let v = verdicts(&two_stacks(&NGINX, &APACHE));
    assert_eq!(v.len(), 1);
    let g = &v[0];
    assert_eq!(g.primary, Measure::Rps);
    assert_eq!(g.winner.as_deref(), Some("nginx"));

    let nginx = g.stacks[0].figure(Measure::Rps).ci.unwrap();
    // 7 values: the median is the 4th smallest; a 95% interval needs 6, so [x(1), x(7)] with
    // coverage 1 - 2/2^7.
    assert_eq!((nginx.median, nginx.lo, nginx.hi, nginx.has_ci), (1_005.0, 990.0, 1_020.0, true));
    assert_eq!(nginx.confidence, 1.0 - 2.0 / 128.0);

    let c = g.headline().unwrap();
    assert_eq!((c.better.as_str(), c.worse.as_str()), ("nginx", "apache"));
    let r = c.ratio.unwrap();
    // Each side at √0.95 ≈ 97.5% still takes the range for n = 7, so the ratio's bounds are
    // min(nginx)/max(apache) and max(nginx)/min(apache).
    assert_eq!(r.ratio, 1_005.0 / 505.0);
    assert_eq!((r.lo, r.hi), (990.0 / 520.0, 1_020.0 / 490.0));
    assert!(r.has_ci && r.confidence >= CONFIDENCE);
    // No overlap at 7 vs 7: U = 49, p = 2 / C(14, 7) = 2 / 3432.
    let t = c.test.unwrap();
    assert_eq!(t.u, 49.0);
    assert!((t.p_value - 2.0 / 3432.0).abs() < 1e-12, "{}", t.p_value);
    assert!(c.significant && !c.underpowered);
    assert!(g.warnings.is_empty(), "{:?}", g.warnings);
}

#[test]
fn overlapping_stacks_have_no_winner() {
    let a = [1_000.0, 1_010.0, 990.0, 1_005.0, 995.0, 1_020.0, 985.0];
    let b = [1_002.0, 1_008.0, 992.0, 1_003.0, 997.0, 1_015.0, 988.0];
    let g = &verdicts(&two_stacks(&a, &b))[0];
    assert_eq!(g.winner, None);
    let c = g.headline().unwrap();
    assert!(!c.significant && !c.underpowered);
    assert!(c.test.unwrap().p_value > 0.5);
    assert!(c.ratio.unwrap().lo < 1.0 && c.ratio.unwrap().hi > 1.0);
}

#[test]
fn three_repetitions_can_never_be_significant_and_say_so() {
    let g = &verdicts(&two_stacks(&NGINX[..3], &APACHE[..3]))[0];
    let c = g.headline().unwrap();
    // Complete separation of 3 vs 3 is the best case: p = 2 / C(6, 3) = 0.1.
    assert!((c.test.unwrap().p_value - 0.1).abs() < 1e-12);
    assert!(!c.significant && c.underpowered);
    assert_eq!(g.winner, None);
    assert!(g.warnings.iter().any(|w| matches!(
        w,
        Warning::Underpowered { n_better: 3, n_worse: 3, min_p, .. } if (*min_p - 0.1).abs() < 1e-12
    )));
    // Below 6 repetitions the "interval" is the range and is said to be.
    let ci = g.stacks[0].figure(Measure::Rps).ci.unwrap();
    assert!(!ci.has_ci);
    assert_eq!((ci.lo, ci.hi), (990.0, 1_010.0));
    assert!(g.warnings.contains(&Warning::NoMedianCi { stack: "nginx".into(), n: 3 }));
    assert!(g.warnings.iter().any(|w| w.to_string().contains("can never reach significance")));
}

#[test]
fn a_flag_marks_its_stacks_figures_and_every_comparison_with_it() {
    let mut cells = two_stacks(&NGINX, &APACHE);
    let last = cells.pop().unwrap();
    cells.push(flagged(last, Flag::ClientSaturated, "client CPU 99%"));
    let g = &verdicts(&cells)[0];
    let apache = &g.stacks[1];
    assert_eq!(apache.flags.len(), 1);
    for m in Measure::ALL {
        assert!(!apache.figure(m).trusted(), "{m:?}");
        assert!(g.stacks[0].figure(m).trusted(), "nginx's own figures are untouched");
    }
    for c in &g.comparisons {
        assert_eq!(c.flags.len(), 1, "{c:?}");
        assert_eq!(c.flags[0].flag, Flag::ClientSaturated);
        assert_eq!(c.flags[0].repetition, 6);
    }
    assert!(g.flagged());
    let w = g.warnings.iter().find(|w| matches!(w, Warning::Trust(_))).unwrap();
    // Stored from 0, shown from 1.
    assert_eq!(w.to_string(), "apache, repetition 7: client_saturated (client CPU 99%)");
}

#[test]
fn a_network_bound_cell_is_flagged_with_its_link() {
    let mut cells = two_stacks(&NGINX, &APACHE);
    let detail = "the link eth0 (100 Mbit/s) carried 96% of its capacity: the network, not the \
                  server, limited throughput";
    cells[0] = flagged(cells[0].clone(), Flag::NetworkBound, detail);
    let g = &verdicts(&cells)[0];
    assert_eq!(g.stacks[0].flags[0].flag, Flag::NetworkBound);
    assert!(!g.stacks[0].figure(Measure::Rps).trusted());
    assert!(g.headline().unwrap().flags.iter().any(|f| f.flag == Flag::NetworkBound));
    let lines = warning_lines(&g.warnings);
    assert!(
        lines.iter().any(|l| l.trust
            && l.text.starts_with("nginx: network_bound in repetition 1: the link eth0")),
        "{lines:?}"
    );
}

#[test]
fn errors_and_schedule_flags_reach_the_group() {
    let mut cells = two_stacks(&NGINX, &APACHE);
    cells[0] = flagged(cells[0].clone(), Flag::Errors, "3 connreset of 10 000");
    cells[8] = flagged(cells[8].clone(), Flag::FdExhausted, "");
    cells[9] = flagged(cells[9].clone(), Flag::ScheduleMissed, "behind by 2.1 s");
    let g = &verdicts(&cells)[0];
    let kinds: Vec<&Flag> = g.stacks.iter().flat_map(|s| &s.flags).map(|f| &f.flag).collect();
    assert_eq!(kinds, [&Flag::Errors, &Flag::FdExhausted, &Flag::ScheduleMissed]);
    assert_eq!(g.headline().unwrap().flags.len(), 3);
}

#[test]
fn an_outlying_repetition_is_named() {
    let mut a = NGINX;
    a[2] = 400.0;
    let g = &verdicts(&two_stacks(&a, &APACHE))[0];
    let o = &g.stacks[0].figure(Measure::Rps).outliers;
    assert_eq!(o, &[Outlier { repetition: 2, value: 400.0 }]);
    assert!(g.warnings.iter().any(|w| matches!(
        w,
        Warning::Outlier { stack, measure: Measure::Rps, repetition: 2, .. } if stack == "nginx"
    )));
}

#[test]
fn a_small_deviation_among_tight_repetitions_is_not_an_outlier() {
    // The MAD of the others is 1, so 1_030 scores 0.6745 * 25 ≈ 17: an outlier by the score,
    // but 2.5% off the median, which no reader should chase.
    let a = [1_005.0, 1_004.0, 1_006.0, 1_005.0, 1_030.0, 1_005.0, 1_004.0];
    let g = &verdicts(&two_stacks(&a, &APACHE))[0];
    assert!(g.stacks[0].figure(Measure::Rps).outliers.is_empty());
    assert!(!g.warnings.iter().any(|w| matches!(w, Warning::Outlier { .. })));
}

#[test]
fn three_repetitions_are_too_few_to_name_an_outlier() {
    // With three values the MAD rests on one difference: 1_200 scores 0.6745 * 199 / 1, far
    // above 3.5, and is 20% off the median, yet three runs cannot say which one is odd.
    let a = [1_000.0, 1_001.0, 1_200.0];
    let g = &verdicts(&two_stacks(&a, &APACHE[..3]))[0];
    assert!(g.stacks[0].figure(Measure::Rps).outliers.is_empty());
    assert!(!g.warnings.iter().any(|w| matches!(w, Warning::Outlier { .. })));
}

#[test]
fn open_loads_are_won_on_tail_latency() {
    let mut cells = Vec::new();
    for rep in 0..7 {
        cells.push(open_cell("varnish", "wp-front", 500.0, rep, 2_000.0 + f64::from(rep)));
        cells.push(open_cell("apache", "wp-front", 500.0, rep, 90_000.0 + f64::from(rep)));
    }
    let g = &verdicts(&cells)[0];
    assert_eq!(g.primary, Measure::P99);
    assert_eq!(g.winner.as_deref(), Some("varnish"));
    let c = g.headline().unwrap();
    assert_eq!((c.better.as_str(), c.worse.as_str()), ("varnish", "apache"));
    // Lower is better, so the ratio is the worse over the better: "45× lower p99".
    assert_eq!(c.ratio.unwrap().ratio, 90_003.0 / 2_003.0);
    // Equal rates tie on req/s: no significant difference there.
    let rps = g.comparisons_on(Measure::Rps).next().unwrap();
    assert!(!rps.significant);
    assert_eq!(rps.test.unwrap().p_value, 1.0);
}

#[test]
fn winner_must_beat_every_other_stack_and_headline_is_the_closest() {
    let mut cells = two_stacks(&NGINX, &APACHE);
    let close = [1_000.0, 1_011.0, 994.0, 1_004.0, 999.0, 1_016.0, 989.0];
    cells.extend(reps("lighttpd", "static", 50, &close));
    let g = &verdicts(&cells)[0];
    assert_eq!(g.comparisons_on(Measure::Rps).count(), 2);
    let h = g.headline().unwrap();
    assert_eq!((h.better.as_str(), h.worse.as_str()), ("nginx", "lighttpd"));
    assert!(!h.significant);
    assert_eq!(g.winner, None, "nginx beats apache but not lighttpd");
}

#[test]
fn a_single_stack_gets_figures_but_no_comparison() {
    let g = &verdicts(&reps("nginx", "static", 50, &NGINX))[0];
    assert!(g.comparisons.is_empty() && g.headline().is_none() && g.winner.is_none());
    assert_eq!(g.stacks[0].figure(Measure::Rps).median(), Some(1_005.0));
}

#[test]
fn percentiles_fall_back_to_the_latency_histogram() {
    let mut cells = reps("nginx", "static", 50, &[1_000.0, 1_001.0]);
    let mut r = Recorder::new();
    for us in 1..=1_000 {
        r.record(us);
    }
    cells[0].histograms.latency = Some(r);
    let g = &verdicts(&cells)[0];
    let p50 = g.stacks[0].figure(Measure::P50);
    assert_eq!(p50.values, [500.0]);
    assert_eq!(g.stacks[0].figure(Measure::P99).values, [990.0]);
    assert!(g.warnings.contains(&Warning::Missing {
        stack: "nginx".into(),
        measure: Measure::P50,
        missing: 1,
        counted: crate::counted::Counted::Requests,
    }));
}

/// Flagged repetitions read as one line per flag, and one repetition outlying on several
/// measures as one line; repetitions are shown counted from 1, as `loadlab run` shows them.
#[test]
fn warnings_merge_by_flag_and_by_outlying_repetition() {
    let trust = |repetition: u32, detail: &str| {
        Warning::Trust(CellFlag {
            stack: "nginx".into(),
            repetition,
            ordinal: repetition,
            flag: Flag::ScheduleMissed,
            detail: detail.into(),
        })
    };
    let outlier = |measure: Measure, value: f64, median: f64| Warning::Outlier {
        stack: "apache".into(),
        measure,
        repetition: 1,
        value,
        median,
        counted: crate::counted::Counted::Requests,
    };
    let warnings = vec![
        trust(0, "late p99 1.2ms"),
        outlier(Measure::Rps, 1000.0, 3000.0),
        trust(2, ""),
        outlier(Measure::P99, 9000.0, 3000.0),
        Warning::NoMedianCi { stack: "nginx".into(), n: 5 },
    ];
    let lines = warning_lines(&warnings);
    let texts: Vec<(&str, bool)> = lines.iter().map(|l| (l.text.as_str(), l.trust)).collect();
    assert_eq!(
        texts,
        [
            ("nginx: schedule_missed in repetition 1: late p99 1.2ms; 3", true),
            (
                "apache, repetition 2 is an outlier: req/s 1,000 (median 3,000), \
                 p99 9.00 ms (median 3.00 ms)",
                false
            ),
        ]
    );
}

/// On loopback a p99 of 10 µs against siblings at 12 µs is 17% off and scores far above 3.5
/// (their MAD is 0), but two microseconds are the scheduler's: not named. 60 µs is.
#[test]
fn a_few_microseconds_off_a_tiny_latency_is_not_an_outlier() {
    let cells = |odd: f64| -> Vec<CellRecord> {
        let p99 = [12.0, 12.0, odd, 12.0, 12.0];
        p99.iter()
            .enumerate()
            .map(|(i, &p)| open_cell("nginx", "robots", 200.0, i as u32, p))
            .collect()
    };
    let g = &verdicts(&cells(10.0))[0];
    assert!(g.stacks[0].figure(Measure::P99).outliers.is_empty(), "{g:#?}");
    let g = &verdicts(&cells(60.0))[0];
    let outliers = &g.stacks[0].figure(Measure::P99).outliers;
    assert_eq!(outliers.iter().map(|o| o.repetition).collect::<Vec<_>>(), [2], "{g:#?}");
}

/// Seed 000 behind a 100 Mbit/s link, stored by a loadlab older than `limited_by`: its flags
/// stand in for the limit, said as such, and no server is named the winner however clearly the
/// figures differ; a client limit likewise.
#[test]
fn old_cells_limited_by_the_network_or_the_client_by_their_flags_name_no_winner() {
    let mut cells = two_stacks(&NGINX, &APACHE);
    assert_eq!(verdicts(&cells)[0].winner.as_deref(), Some("nginx"));
    cells[0] = flagged(cells[0].clone(), Flag::NetworkBound, "RTT 6 µs idle, 40 ms under load");
    let g = &verdicts(&cells)[0];
    assert_eq!(g.winner, None);
    assert_eq!(
        g.not_the_servers.as_deref(),
        Some(
            "the network limited these figures, not the servers: nginx, repetition 1 (stored \
             by an older loadlab without a limit, read from its flag network_bound: RTT 6 µs \
             idle, 40 ms under load)"
        )
    );
    let line = crate::text::headline(g).unwrap();
    assert!(line.starts_with("~ no verdict on the servers: the network limited"), "{line}");
    let mut cells = two_stacks(&NGINX, &APACHE);
    cells[3] = flagged(cells[3].clone(), Flag::ClientStarved, "waited 30%");
    let g = &verdicts(&cells)[0];
    assert_eq!(g.winner, None);
    assert!(g.not_the_servers.as_deref().is_some_and(|w| w.contains("load generator")));
}

/// As in `make demo`'s runs: every repetition's stored limit is the machine's CPUs, and one
/// of them also carries `client_starved` (the runner judged the wait to be the stack's own).
/// The text, the JSON and the HTML follow the stored limit: a winner, or "no significant
/// difference" by statistics alone. A repetition whose stored limit is the client or the
/// network (whatever its flags) withholds the winner in all three, naming that repetition and
/// its evidence.
#[test]
fn every_output_follows_the_stored_limit_not_the_flags() {
    use loadlab_store::{Limit, LimitedBy};
    let limited = |mut cells: Vec<CellRecord>, limit: Limit| {
        for c in &mut cells {
            let evidence = "the machine's CPUs were 99% busy".to_owned();
            c.limited_by = Some(LimitedBy { limit: limit.clone(), evidence });
        }
        cells
    };
    let outputs = |cells: &[CellRecord]| {
        let v = verdicts(cells);
        let text = crate::text::verdict_table(&v);
        let json = serde_json::to_value(&v).unwrap();
        let html = crate::render_html(&crate::testcell::run(), cells, &[], &Default::default());
        (text, json[0].clone(), html)
    };
    let starved = |mut cells: Vec<CellRecord>| {
        cells[3] = flagged(cells[3].clone(), Flag::ClientStarved, "waited 30%");
        cells
    };

    // Separated stacks: nginx wins everywhere, starved repetition or not.
    let cells = starved(limited(two_stacks(&NGINX, &APACHE), Limit::MachineCpu));
    let (text, json, html) = outputs(&cells);
    assert!(text.contains("nginx wins"), "{text}");
    assert!(!text.contains("no verdict on the servers"), "{text}");
    assert_eq!(json["winner"], "nginx");
    assert!(json["not_the_servers"].is_null(), "{json}");
    assert!(html.contains("<span class=\"winner\">nginx</span>"));
    assert!(!html.contains("no verdict on the servers"));

    // Overlapping stacks: no winner by statistics alone, and nothing said of the servers.
    let a = [1_000.0, 1_010.0, 990.0, 1_005.0, 995.0, 1_020.0, 985.0];
    let b = [1_002.0, 1_008.0, 992.0, 1_003.0, 997.0, 1_015.0, 988.0];
    let cells = starved(limited(two_stacks(&a, &b), Limit::MachineCpu));
    let (text, json, html) = outputs(&cells);
    assert!(text.contains("~ no significant winner"), "{text}");
    assert!(json["winner"].is_null() && json["not_the_servers"].is_null(), "{json}");
    assert!(html.contains("class=\"tilde\"") && !html.contains("no verdict on the servers"));

    // One repetition stored as the client's limit or the network's, with no flag at all.
    for (limit, who) in [(Limit::Client, "the load generator"), (Limit::Network, "the network")] {
        let mut cells = limited(two_stacks(&NGINX, &APACHE), Limit::MachineCpu);
        let evidence = "a worker waited for a CPU 40% of the run".to_owned();
        cells[10].limited_by = Some(LimitedBy { limit, evidence });
        let why = format!(
            "{who} limited these figures, not the servers: apache, repetition 4 (a worker \
             waited for a CPU 40% of the run)"
        );
        let (text, json, html) = outputs(&cells);
        assert!(text.contains(&format!("~ no verdict on the servers: {why}")), "{text}");
        assert!(json["winner"].is_null(), "{json}");
        assert_eq!(json["not_the_servers"], why.as_str());
        assert!(!html.contains("class=\"winner\""));
        assert!(html.contains(&format!("no verdict on the servers: {why}")));
    }
}

/// The gate is judged once, from the SLO stored with the cells, over a stack's repetitions
/// (medians): one of three slow repetitions does not fail it; cells stored without an SLO (an
/// old store) are not judged at all.
#[test]
fn each_stack_is_judged_by_the_slo_stored_with_its_cells() {
    let mut cells = two_stacks(&[1_010.0, 990.0, 400.0], &[510.0, 490.0, 505.0]);
    for c in &mut cells {
        c.slo = Some("rps>=600".into());
    }
    let v = verdicts(&cells);
    let (nginx, apache) = (&v[0].stacks[0], &v[0].stacks[1]);
    let judged = nginx.slo.as_ref().unwrap();
    assert!(judged.passed, "{judged:?}");
    assert_eq!(judged.terms[0].observed, Some(990.0));
    assert_eq!(apache.slo.as_ref().unwrap().line(), "SLO rps>=600: FAIL (rps 505 < 600)");
    let gates = crate::gate::gates(&v);
    assert_eq!(gates.len(), 2);
    assert_eq!(
        crate::gate::summary(&gates).unwrap(),
        "SLO gate: FAIL (1 of 2 failed: apache · static · closed, 50 conn, 10 s)"
    );
    let text = crate::text::verdict_table(&v);
    assert!(text.contains("\n  ✓ nginx: SLO rps>=600: pass (rps 990 >= 600)\n"), "{text}");
    assert!(text.contains("\n  ✗ apache: SLO rps>=600: FAIL (rps 505 < 600)\n"), "{text}");
    assert!(
        text.ends_with(
            "\nSLO gate: FAIL (1 of 2 failed: apache · static · closed, 50 conn, 10 s)\n"
        ),
        "{text}"
    );

    let old = verdicts(&two_stacks(&NGINX, &APACHE));
    assert!(old[0].stacks.iter().all(|s| s.slo.is_none()));
    assert!(crate::gate::gates(&old).is_empty());
    assert!(!crate::text::verdict_table(&old).contains("SLO"));
}

/// An SLO stored by another version that this one cannot read fails, saying why: a gate no
/// one can judge must not pass.
#[test]
fn a_stored_slo_this_build_cannot_read_fails_saying_why() {
    let mut cells = reps("nginx", "static", 50, &[1_000.0]);
    cells[0].slo = Some("p99>50ms".into());
    let judged = verdicts(&cells)[0].stacks[0].slo.clone().unwrap();
    assert!(!judged.passed);
    assert!(judged.line().starts_with("SLO p99>50ms: FAIL (not an SLO this loadlab reads: "));
}

//! `run --profile` on a real stack with the real perf: each tier's stacks are stored with
//! its cell, `loadlab profile` lists their top functions and writes them folded, the report
//! draws them (or says they were too few) and its JSON has them, a cell not profiled says so
//! (exit 2); seed 004's question (what OPcache removes from WordPress) answered from the
//! stored stacks. Needs nginx, php-fpm, php-excimer and linux-perf, as root (seed 004:
//! WordPress and MariaDB too).

use std::time::Duration;

use loadlab_lab::profiler::{php, share, Share};
use loadlab_store::{RunId, Store};

use super::{require, Scratch};
use crate::support::{assert_success, output_within};

const PROFILED: &str = r#"name = "profile-e2e"
description = "nginx + php-fpm under phpinfo.php, the highest load profiled"
repetitions = 1
warmup = "300ms"
profile = "knee"

[[stacks]]
name = "nginx-fpm"

[[workloads]]
name = "phpinfo.php"

[[loads]]
model = "closed"
concurrency = [1, 4]
duration = "3s"
"#;

#[test]
fn a_profiled_cell_keeps_each_tiers_stacks_and_profile_lists_them() {
    let scratch = Scratch::new();
    if !profilable(&scratch, "nginx-fpm") {
        return;
    }
    let suite = scratch.write("profile.toml", PROFILED);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &suite, "--out", &out]);
    if refused(&stdout) {
        return;
    }
    let doc = scratch.json(&["profile", "2", "--db", &scratch.db(), "--json"]);
    let tiers = doc["tiers"].as_array().expect("tiers");
    let names: Vec<&str> = tiers.iter().filter_map(|t| t["tier"].as_str()).collect();
    // Most phpinfo requests need less CPU than excimer's first period: PHP's own stacks have
    // few samples or none, and a tier without samples is not stored.
    assert!(matches!(names[..], ["nginx", "php-fpm"] | ["nginx", php::TIER, "php-fpm"]), "{doc:#}");
    let php = tiers.iter().find(|t| t["tier"] == "php-fpm").expect("php-fpm");
    assert!(php["samples"].as_u64().unwrap() > 0, "{doc:#}");
    assert_eq!(php["interval_us"], 10_101);
    assert!(!php["functions"].as_array().unwrap().is_empty(), "{doc:#}");

    let dir = scratch.out().join("folded");
    let text = scratch.ok(&[
        "profile",
        "2",
        "--db",
        &scratch.db(),
        "--top",
        "3",
        "--folded",
        &dir.display().to_string(),
    ]);
    assert!(text.contains("php-fpm: ") && text.contains("self%"), "{text}");
    let folded = std::fs::read_to_string(dir.join("cell-2-php-fpm.folded")).unwrap();
    assert!(folded.lines().all(|l| l.starts_with("php-fpm")), "{folded}");

    // The report: c=4's group has each tier's flame graph (or says it had too few samples),
    // c=1's none; its JSON the same.
    let html = std::fs::read_to_string(scratch.out().join("report.html")).unwrap();
    let section = &html[html.find("<section id=\"profiles\">").expect("a profiles section")..];
    let section = &section[..section.find("</section>").unwrap()];
    let verdicts = scratch.json(&["report", "--db", &scratch.db(), "--format", "json"]);
    let groups = verdicts.as_array().expect("verdicts");
    assert!(groups[0].get("profiles").is_none(), "c=1 was not profiled: {:#}", groups[0]);
    let stacks = &groups[1]["profiles"]["stacks"];
    assert_eq!(stacks[0]["cells"], serde_json::json!([2]), "{stacks:#}");
    // nginx and php-fpm from perf; PHP's own stacks (excimer) only when a phpinfo request
    // outlasted excimer's first 1 ms period.
    let tiers: Vec<&str> = stacks[0]["tiers"]
        .as_array()
        .expect("tiers")
        .iter()
        .map(|t| t["tier"].as_str().expect("a tier's name"))
        .collect();
    assert!(tiers.contains(&"nginx") && tiers.contains(&"php-fpm"), "{stacks:#}");
    let figures = section.matches("<figure class=\"flame\">").count();
    assert_eq!(figures, tiers.len(), "a figure per stored tier: {section}");
    let drawn = section.matches("<svg").count();
    let said = section.matches("too few for a flame graph").count();
    assert_eq!(drawn + said, tiers.len(), "each tier drawn or said: {section}");

    let none = scratch.run(&["profile", "1", "--db", &scratch.db()]);
    assert_eq!(none.status.code(), Some(2), "cell 1 (c=1) was not profiled");
    let said = String::from_utf8_lossy(&none.stderr);
    assert!(said.contains("has no profile (run it with --profile)"), "{said}");
}

/// Whether `stack`'s packages, perf and php-excimer are here; a skip said locally when one is
/// missing, a failure in CI.
fn profilable(scratch: &Scratch, stack: &str) -> bool {
    if let Err(skip) = require(scratch, &[stack]) {
        skip.report();
        return false;
    }
    use loadlab_lab::programs::{EXCIMER, PERF};
    match [PERF, EXCIMER].iter().find(|need| need.find().is_err()) {
        Some(need) => {
            super::skip::missing(stack, need.package).report();
            false
        }
        None => true,
    }
}

/// Whether perf may not record here, as `run` says it: a skip locally, a failure in CI.
fn refused(stdout: &str) -> bool {
    if stdout.contains("perf could not record") {
        assert!(!super::skip::servers_required(), "perf refused in CI:\n{stdout}");
        eprintln!("skipped: perf refused here:\n{stdout}");
        return true;
    }
    false
}

/// Seed 004 profiled (`wordpress-cache-layers --quick --profile`): without OPcache PHP's
/// compiler is a large share of php-fpm's CPU, in perf's native stacks (the lexer and parser
/// by name) and in PHP's own (the top-level code of the files WordPress `require`s, where
/// the compiling is counted); with OPcache both shares fall at least five-fold. Each stack's
/// four repetitions are summed, so that the OPcache side has enough samples for its share
/// to mean something (a WordPress page costs a seventh of the CPU there).
#[test]
fn seed_004_opcache_cuts_the_compilers_share_of_php_at_least_five_fold() {
    let scratch = Scratch::new();
    if !profilable(&scratch, "wordpress-nginx-fpm") {
        return;
    }
    let out = scratch.out().display().to_string();
    let args = ["run", "--suite", "wordpress-cache-layers", "--quick", "--profile", "--out", &out];
    // 12 cells of 100 WordPress pages, a third of them without OPcache at a few per second.
    let output = output_within(scratch.command(&args), Duration::from_secs(900));
    assert_success(&output, &args);
    if refused(&String::from_utf8_lossy(&output.stdout)) {
        return;
    }
    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("cells");
    let folded = |stack: &str, tier: &str| -> String {
        let mut all = String::new();
        for cell in cells.iter().filter(|c| c.stack == stack) {
            for p in store.profiles(RunId(1), cell.ordinal).expect("profiles") {
                if p.tier == tier {
                    all.push_str(&p.folded);
                }
            }
        }
        all
    };
    let shares = |tier: &str, picks: fn(&str) -> bool| -> [Share; 2] {
        ["wordpress-no-opcache", "wordpress-opcache"].map(|s| share(&folded(s, tier), picks))
    };
    for (tier, picks, large) in
        [("php-fpm", php::compiles as fn(&str) -> bool, 0.15), (php::TIER, php::in_file_code, 0.4)]
    {
        let [without, with] = shares(tier, picks);
        let said = format!("{tier}: without OPcache {without:?}, with {with:?}");
        assert!(without.samples >= 500 && with.samples >= 500, "too few samples: {said}");
        assert!(without.self_fraction() >= large, "the compiler is no large share: {said}");
        assert!(
            without.self_fraction() >= 5.0 * with.self_fraction(),
            "OPcache did not cut the compiler's share five-fold: {said}"
        );
    }
}

//! `run --profile` on a real stack with the real perf: each tier's stacks are stored with
//! its cell, `loadlab profile` lists their top functions and writes them folded, the report
//! draws them (or says they were too few) and its JSON has them, a cell not profiled says so
//! (exit 2). Needs nginx, php-fpm and linux-perf, as root.

use super::{require, Scratch};

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
    if let Err(skip) = require(&scratch, &["nginx-fpm"]) {
        skip.report();
        return;
    }
    if loadlab_lab::programs::PERF.find().is_err() {
        let skip = super::skip::Skip("perf not found: install linux-perf".into());
        assert!(!super::skip::servers_required(), "{}", skip.0);
        return skip.report();
    }
    let suite = scratch.write("profile.toml", PROFILED);
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &suite, "--out", &out]);
    if stdout.contains("perf could not record") {
        assert!(!super::skip::servers_required(), "perf refused in CI:\n{stdout}");
        return eprintln!("skipped: perf refused here:\n{stdout}");
    }
    let doc = scratch.json(&["profile", "2", "--db", &scratch.db(), "--json"]);
    let tiers = doc["tiers"].as_array().expect("tiers");
    let names: Vec<&str> = tiers.iter().filter_map(|t| t["tier"].as_str()).collect();
    assert_eq!(names, ["nginx", "php-fpm"], "{doc:#}");
    let php = &tiers[1];
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
    assert_eq!(section.matches("<figure class=\"flame\">").count(), 2, "{section}");
    let drawn = section.matches("<svg").count();
    let said = section.matches("too few for a flame graph").count();
    assert_eq!(drawn + said, 2, "each tier drawn or said: {section}");
    let verdicts = scratch.json(&["report", "--db", &scratch.db(), "--format", "json"]);
    let groups = verdicts.as_array().expect("verdicts");
    assert!(groups[0].get("profiles").is_none(), "c=1 was not profiled: {:#}", groups[0]);
    let stacks = &groups[1]["profiles"]["stacks"];
    assert_eq!(stacks[0]["cells"], serde_json::json!([2]), "{stacks:#}");
    assert_eq!(stacks[0]["tiers"][1]["tier"], "php-fpm", "{stacks:#}");

    let none = scratch.run(&["profile", "1", "--db", &scratch.db()]);
    assert_eq!(none.status.code(), Some(2), "cell 1 (c=1) was not profiled");
    let said = String::from_utf8_lossy(&none.stderr);
    assert!(said.contains("has no profile (run it with --profile)"), "{said}");
}

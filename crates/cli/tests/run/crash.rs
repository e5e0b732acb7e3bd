//! A run whose process is killed (SIGKILL: no handler runs) is not `running` forever: `runs`,
//! `report` and `compare` show it as crashed with its finished cells, and the next run into
//! the store says so once. The stack the dead run left is cleaned by the next run.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use super::{require_stacks, wait_until, Scratch};

#[test]
fn a_killed_run_is_crashed_with_its_cells_and_the_next_run_says_so_once() {
    let scratch = Scratch::new();
    if let Err(skip) = require_stacks(&scratch) {
        skip.report();
        return;
    }
    let suite = scratch.write(
        "four.toml",
        "name = \"four\"\nrepetitions = 4\nwarmup = \"0s\"\n[[stacks]]\nname = \"nginx\"\n\
         [[workloads]]\nname = \"hello.txt\"\n[[loads]]\nmodel = \"closed\"\n\
         concurrency = [2]\nduration = \"2s\"\n",
    );
    let out = scratch.out().display().to_string();
    let mut command = scratch.command(&["run", "--suite", &suite, "--out", &out]);
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = command.spawn().expect("spawn loadlab run");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut seen = String::new();
    while !seen.lines().any(|l| l.starts_with("[  1/4]")) {
        let mut line = String::new();
        if stdout.read_line(&mut line).expect("read stdout") == 0 {
            panic!("loadlab run ended before its first cell:\n{seen}");
        }
        seen.push_str(&line);
    }
    child.kill().expect("SIGKILL loadlab run");
    child.wait().expect("reap it");

    let runs = scratch.json(&["runs", "--db", &scratch.db(), "--json"]);
    assert_eq!(runs[0]["status"], "crashed", "{runs:#}");
    let cells = runs[0]["cells"].as_u64().expect("cells");
    assert!((1..4).contains(&cells), "{runs:#}");
    let table = scratch.ok(&["runs", "--db", &scratch.db()]);
    assert!(table.lines().any(|l| l.ends_with("crashed")), "{table}");

    // The report covers the finished cells and says why there are no more.
    let output = scratch.run(&["report", "1", "--db", &scratch.db(), "--format", "text"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("run 1 crashed: the process that ran it is gone"), "{stderr}");
    assert!(stderr.contains(&format!("its {cells} finished cells are shown")), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("hello.txt"), "{output:?}");

    // The next run into the store says so, once; the one after it does not.
    let one = scratch.write(
        "one.toml",
        "name = \"one\"\nrepetitions = 1\nwarmup = \"0s\"\n[[stacks]]\nname = \"nginx\"\n\
         [[workloads]]\nname = \"hello.txt\"\n[[loads]]\nmodel = \"closed\"\n\
         concurrency = [2]\nduration = \"300ms\"\n",
    );
    let notice = "loadlab: run 1 (four) did not finish: the process that ran it is gone";
    let second = scratch.run(&["run", "--suite", &one, "--out", &out]);
    assert_eq!(second.status.code(), Some(0), "{second:?}");
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(said.matches(notice).count(), 1, "{said}");
    assert!(said.contains(&format!("its {cells} finished cells are kept")), "{said}");
    let third = scratch.run(&["run", "--suite", &one, "--out", &out]);
    assert_eq!(third.status.code(), Some(0), "{third:?}");
    assert!(!String::from_utf8_lossy(&third.stderr).contains(notice), "{third:?}");
    let runs = scratch.json(&["runs", "--db", &scratch.db(), "--json"]);
    let status: Vec<&str> =
        runs.as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["crashed", "finished", "finished"], "{runs:#}");

    // The killed run's stack was removed by the next run: nothing of it is left.
    let list = scratch.json(&["stack", "list", "--json"]);
    assert_eq!(list["instances"], serde_json::json!([]), "{list:#}");
    assert!(
        wait_until(Duration::from_secs(30), || scratch.servers_left().is_empty()),
        "servers left: {:#?}",
        scratch.servers_left()
    );
}

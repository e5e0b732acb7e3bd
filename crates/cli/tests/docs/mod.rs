//! The documentation's commands, run: every `loadlab ...` line of a ```sh block in README.md
//! and docs/*.md, against the stacks the docs name, so that an example cannot rot (as doctests
//! keep Rust's examples honest).
//!
//! What is run as written: the subcommand, every flag, the URL's path, the stack behind each
//! port, the file a command writes. What is changed, and only so that the whole set fits in CI:
//! - ports: the docs' 8080, 18731 and 18732 are the lab's nginx, 8081 the lab's Apache with
//!   mod_php, `PORT` the port the last `stack up NAME` printed (and `CA_FILE` the CA it named
//!   with `--tls on`); the test starts them on free ports and rewrites the URLs (a fixed port
//!   could be taken on the machine);
//! - time: durations (`-d`, `--step-duration`) become 1 s, `-n` at most 500, `--conns` and
//!   `--conns-per-step` at most 20, a sweep's rates its first two and its steps 1 s (its
//!   default is 10 s); `loadlab run --suite`
//!   of a built-in suite runs `--dry-run` (its full form takes minutes to hours);
//! - `stack up NAME --port P` is checked against the stack the test put on P, not started again.
//!
//! The files the docs show whole, in a fenced block whose info string names them
//! (`` ```nginx file=mine/tuned/nginx-http.conf ``), are written where they say, relative to
//! the directory the commands run in, before any command runs: a walk-through's suite, config
//! snippets and site are then used by its commands as a reader would use them.
//!
//! Every command must exit 0, and a run that sent requests must not have been answered with
//! anything but 2xx unless it asked for a missing page: the mistake this test was written for
//! was `http://127.0.0.1:8080/`, which the lab's nginx answers with 403.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use crate::support::{loadlab, output_within, skip};

const LIMIT: Duration = Duration::from_secs(180);

/// One command line of the docs: where it is, and its words.
#[derive(Debug, Clone)]
struct Example {
    file: String,
    line: usize,
    words: Vec<String>,
    /// `> FILE` at its end.
    stdout_to: Option<String>,
}

/// Every `loadlab` command of the ```sh blocks of `path`, continuations joined, comments cut.
fn examples(path: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(path).expect("read a doc");
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        if raw.trim_start().starts_with("```") {
            in_sh = !in_sh && raw.trim_start().trim_start_matches('`').trim() == "sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let line = raw.split(" #").next().unwrap_or_default().trim_end();
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        joined.push_str(line.trim_end_matches('\\').trim());
        joined.push(' ');
        if line.ends_with('\\') {
            pending = Some((start, joined));
            continue;
        }
        let joined = joined.trim().to_string();
        if !joined.starts_with("loadlab ") {
            continue;
        }
        let (command, stdout_to) = match joined.split_once(" > ") {
            Some((c, f)) => (c.to_string(), Some(f.trim().to_string())),
            None => (joined.clone(), None),
        };
        let words = command.split_whitespace().skip(1).map(str::to_string).collect();
        out.push(Example { file: name.clone(), line: start, words, stdout_to });
    }
    out
}

/// The files shown whole in `path`: each fenced block whose info string holds `file=PATH`,
/// with its text.
fn shown_files(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).expect("read a doc");
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        let fence = line.trim_start().starts_with("```");
        match current.take() {
            Some(file) if fence => out.push(file),
            Some((name, mut body)) => {
                body.push_str(line);
                body.push('\n');
                current = Some((name, body));
            }
            None if fence => {
                let name = line.split_whitespace().find_map(|w| w.strip_prefix("file="));
                current = name.map(|n| (n.to_string(), String::new()));
            }
            None => {}
        }
    }
    out
}

/// A synopsis, not a command: `[OPTIONS]`, `RATES URL`, `./my-suite.toml`.
fn is_synopsis(e: &Example) -> bool {
    e.words.iter().any(|w| w.starts_with('[') || w == "URL" || w == "RATES" || w.starts_with("./"))
}

/// The docs' ports and the lab stacks that serve them.
const PORTS: [(u16, &str); 4] =
    [(8080, "nginx"), (18731, "nginx"), (18732, "nginx"), (8081, "apache-prefork-modphp")];

struct Lab {
    dir: TempDir,
    /// Documented port to the port the stack got.
    ports: BTreeMap<String, u16>,
    /// The CA the last `stack up --tls on` named, for the docs' `CA_FILE`.
    cacert: Option<String>,
}

impl Lab {
    fn command(&self, words: &[String]) -> std::process::Command {
        let mut c = loadlab();
        c.args(words).env("LOADLAB_STATE_DIR", self.dir.path().join("state"));
        c.current_dir(self.dir.path().join("cwd"));
        c
    }

    fn up(&mut self, stack: &str, doc_port: &str) {
        let port = free_port();
        let args: Vec<String> =
            ["stack", "up", stack, "--port", &port.to_string()].map(String::from).to_vec();
        let out = output_within(self.command(&args), LIMIT);
        assert!(out.status.success(), "stack up {stack}: {out:?}");
        self.ports.insert(doc_port.to_string(), port);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let args: Vec<String> = ["stack", "down", "--all"].map(String::from).to_vec();
        let _ = output_within(self.command(&args), LIMIT);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The docs' command made to fit CI (see the module's comment).
fn fitted(e: &Example, lab: &Lab) -> Vec<String> {
    let mut w = e.words.clone();
    let flag_value = |w: &mut Vec<String>, flag: &str, f: &dyn Fn(&str) -> String| {
        if let Some(i) = w.iter().position(|x| x == flag) {
            if let Some(v) = w.get(i + 1).cloned() {
                w[i + 1] = f(&v);
            }
        }
    };
    for flag in ["-d", "--step-duration", "--duration"] {
        flag_value(&mut w, flag, &|_| "1s".into());
    }
    flag_value(&mut w, "-n", &|v| v.parse::<u64>().map_or(v.into(), |n| n.min(500).to_string()));
    // Sessions come at the documented connection rate, as low as 10 a second in a sweep's
    // first step: 20 of them is 2 s there.
    for flag in ["--conns", "--conns-per-step"] {
        flag_value(&mut w, flag, &|v| v.parse::<u64>().map_or(v.into(), |n| n.min(20).to_string()));
    }
    flag_value(&mut w, "--rates", &|v| {
        if let Some((range, step)) = v.split_once(':') {
            let (lo, _) = range.split_once("..").unwrap_or((range, range));
            let (lo, step): (f64, f64) = (lo.parse().unwrap(), step.parse().unwrap());
            format!("{lo},{}", lo + step)
        } else {
            v.split(',').take(2).collect::<Vec<_>>().join(",")
        }
    });
    // A sweep's default step is 10 s: 1 s here, as a written one would be.
    let has = |w: &Vec<String>, f: &str| w.iter().any(|x| x == f);
    if w.first().is_some_and(|c| c == "sweep")
        && !has(&w, "--step-duration")
        && !has(&w, "--conns-per-step")
    {
        w.extend(["--step-duration".to_string(), "1s".to_string()]);
    }
    if w.first().is_some_and(|c| c == "run") && !w.contains(&"--dry-run".to_string()) {
        w.push("--dry-run".into());
    }
    for word in &mut w {
        for (doc, real) in &lab.ports {
            *word = word.replace(&format!("127.0.0.1:{doc}/"), &format!("127.0.0.1:{real}/"));
        }
    }
    w
}

#[test]
fn every_documented_command_runs_against_the_stacks_it_names() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = vec![root.join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    let all: Vec<Example> = docs.iter().flat_map(|d| examples(d)).collect();
    let files: Vec<(String, String)> = docs.iter().flat_map(|d| shown_files(d)).collect();
    assert!(files.len() >= 4, "the docs' walk-through files were not found: {files:?}");
    assert!(all.len() >= 30, "the docs' commands were not found: {all:?}");

    let dir = tempfile::Builder::new().prefix("loadlab-docs-").tempdir().unwrap();
    for sub in ["state", "cwd"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    for (name, text) in &files {
        let path = dir.path().join("cwd").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut lab = Lab { dir, ports: BTreeMap::new(), cacert: None };
    let list = output_within(lab.command(&["stack".into(), "list".into(), "--json".into()]), LIMIT);
    let list: serde_json::Value = serde_json::from_slice(&list.stdout).expect("stack list --json");
    let missing: Vec<String> = list["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            ["nginx", "nginx-fpm", "apache-prefork-modphp"].contains(&s["name"].as_str().unwrap())
        })
        .flat_map(|s| {
            s["missing"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string())
        })
        .collect();
    if !missing.is_empty() {
        skip::missing("the docs' stacks", &missing.join(" ")).report();
        return;
    }
    for (port, stack) in PORTS {
        lab.up(stack, &port.to_string());
    }
    // `loadlab runs`, `report` and `compare` read a store of two runs, as the README's second
    // `make demo` leaves in out/.
    let tiny = lab.dir.path().join("cwd/tiny.toml");
    std::fs::write(
        &tiny,
        "name = \"tiny\"\nrepetitions = 1\nwarmup = \"0s\"\n[[stacks]]\nname = \"nginx\"\n\
         [[workloads]]\nname = \"hello.txt\"\n[[loads]]\nmodel = \"closed\"\n\
         concurrency = [2]\nduration = \"300ms\"\n",
    )
    .unwrap();
    for _ in 0..2 {
        let args: Vec<String> =
            ["run", "--suite", "./tiny.toml", "--out", "out"].map(String::from).to_vec();
        let out = output_within(lab.command(&args), LIMIT);
        assert!(out.status.success(), "the store for runs/report/compare: {out:?}");
    }

    let mut ran = 0;
    for e in &all {
        if is_synopsis(e) {
            continue;
        }
        let at = format!("{}:{}: loadlab {}", e.file, e.line, e.words.join(" "));
        let w = &e.words;
        // A stack the docs start on a fixed port: the test put that stack there already.
        if w.len() >= 5 && w[0] == "stack" && w[1] == "up" && w.contains(&"--port".to_string()) {
            let port = &w[w.iter().position(|x| x == "--port").unwrap() + 1];
            let named = PORTS.iter().find(|(p, _)| p.to_string() == *port).map(|(_, s)| *s);
            assert_eq!(
                named,
                Some(w[2].as_str()),
                "{at}: the docs use port {port} for another stack"
            );
            continue;
        }
        let mut words = fitted(e, &lab);
        if words.iter().any(|x| x.contains("127.0.0.1:PORT/")) {
            let port =
                lab.ports.get("PORT").unwrap_or_else(|| panic!("{at}: no stack up gave PORT"));
            for x in &mut words {
                *x = x.replace("127.0.0.1:PORT/", &format!("127.0.0.1:{port}/"));
            }
        }
        if words.iter().any(|x| x == "CA_FILE") {
            let ca = lab.cacert.clone().unwrap_or_else(|| panic!("{at}: no stack up named a CA"));
            for x in words.iter_mut().filter(|x| *x == "CA_FILE") {
                *x = ca.clone();
            }
        }
        let started = std::time::Instant::now();
        let out = output_within(lab.command(&words), LIMIT);
        eprintln!("{:6.1} s  {at}", started.elapsed().as_secs_f64());
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{at}\nran: {words:?}\n{stdout}\n{stderr}");
        if let Some(file) = &e.stdout_to {
            std::fs::write(lab.dir.path().join("cwd").join(file), &out.stdout).unwrap();
        }
        let asks_missing = words.iter().any(|x| x.ends_with("/missing"));
        // A count of them ("3 non-2xx"), not a column of that name.
        let counted = |s: &str| {
            s.match_indices(" non-2xx").any(|(i, _)| s[..i].ends_with(|c: char| c.is_ascii_digit()))
        };
        assert!(
            asks_missing
                || !(stdout.contains("NOT 2xx")
                    || stdout.contains("were not 2xx")
                    || counted(&stdout)),
            "{at}: answered with other than 2xx:\n{stdout}"
        );
        // `stack up` without a port prints the URL the later `PORT` examples load.
        if w.len() >= 3 && w[0] == "stack" && w[1] == "up" {
            let port = stdout
                .split_whitespace()
                .find_map(|x| {
                    let rest = x.strip_prefix("http://").or_else(|| x.strip_prefix("https://"))?;
                    rest.strip_prefix("127.0.0.1:")?.trim_end_matches('/').parse().ok()
                })
                .unwrap_or_else(|| panic!("{at}: no URL in {stdout}"));
            lab.ports.insert("PORT".into(), port);
            // "TLS: the instance's CA is PATH (loadlab bench --cacert it)"
            lab.cacert = stdout
                .split_once("the instance's CA is ")
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .map(str::to_string);
        }
        ran += 1;
    }
    assert!(ran >= 25, "only {ran} commands ran");
}

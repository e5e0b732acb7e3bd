//! Every flag's `--help` against the docs' tables: the same flags, the same choices, and the
//! texts made in one place saying what the program does.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::CommandFactory;

/// The subcommand at `path` of loadlab's command tree.
fn command(path: &[&str]) -> clap::Command {
    let mut c = crate::Cli::command();
    c.build();
    for name in path {
        c = c.find_subcommand(name).unwrap_or_else(|| panic!("no subcommand {name}")).clone();
    }
    c
}

/// The rows of the first table after the line `heading` of `doc` (under docs/).
fn table(doc: &str, heading: &str) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs").join(doc);
    let text = std::fs::read_to_string(&path).expect("read the doc");
    let lines = text.lines().skip_while(|l| l.trim() != heading).skip(1);
    let rows: Vec<String> = lines
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(str::to_string)
        .collect();
    assert!(!rows.is_empty(), "no table under {heading:?} in {doc}");
    rows
}

/// A flag as a table's first column writes it: its names, and its choices when it lists them
/// (`--format text\|json`).
#[derive(Debug)]
struct Documented {
    names: Vec<String>,
    choices: Option<BTreeSet<String>>,
}

fn documented(rows: &[String]) -> Vec<Documented> {
    let mut out = Vec::new();
    for row in rows {
        let first = row.trim_start_matches('|').split(" | ").next().unwrap_or_default();
        let mut current: Option<Documented> = None;
        for code in first.split('`').skip(1).step_by(2) {
            let mut words = code.split_whitespace();
            let Some(name) = words.next().filter(|w| w.starts_with('-')) else { continue };
            let choices = words
                .next()
                .filter(|w| w.contains("\\|"))
                .map(|w| w.split("\\|").map(str::to_string).collect::<BTreeSet<String>>());
            match &mut current {
                // `-c`, `--connections N`: one flag by its two names.
                Some(d)
                    if !name.starts_with("--") || d.names.iter().all(|n| !n.starts_with("--")) =>
                {
                    d.names.push(name.to_string());
                    d.choices = d.choices.take().or(choices);
                }
                _ => {
                    out.extend(current.take());
                    current = Some(Documented { names: vec![name.to_string()], choices });
                }
            }
        }
        out.extend(current);
    }
    out
}

/// Every name a visible flag answers to (`-c`, `--connections`, visible aliases).
fn names(arg: &clap::Arg) -> Vec<String> {
    let mut out: Vec<String> = arg.get_short().map(|s| format!("-{s}")).into_iter().collect();
    out.extend(arg.get_long().map(|l| format!("--{l}")));
    for alias in arg.get_visible_aliases().unwrap_or_default() {
        out.push(format!("--{alias}"));
    }
    out
}

fn flags(c: &clap::Command) -> Vec<&clap::Arg> {
    c.get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter(|a| !["help", "version"].contains(&a.get_id().as_str()))
        .collect()
}

/// The table's flags and the command's are the same, and a flag whose row lists its choices
/// lists clap's. `own` limits the command's flags that must be in the table (sweep's table
/// leaves bench's request flags to a sentence).
fn agree(doc: &str, heading: &str, path: &[&str], own: &dyn Fn(&clap::Arg) -> bool) {
    agree_with_at_least(10, doc, heading, path, own);
}

/// [`agree`] for a command with fewer flags: `least` of them must be read from the table.
fn agree_with_at_least(
    least: usize,
    doc: &str,
    heading: &str,
    path: &[&str],
    own: &dyn Fn(&clap::Arg) -> bool,
) {
    let c = command(path);
    let documented = documented(&table(doc, heading));
    assert!(documented.len() >= least, "{doc}: the table's flags were not read: {documented:?}");
    let every: BTreeSet<String> = flags(&c).iter().flat_map(|a| names(a)).collect();
    for d in &documented {
        for name in &d.names {
            assert!(every.contains(name), "{doc}: {name} is not a flag of {path:?}");
        }
        let arg = flags(&c).into_iter().find(|a| names(a).contains(&d.names[0])).unwrap();
        if let Some(choices) = &d.choices {
            let clap: BTreeSet<String> =
                arg.get_possible_values().iter().map(|v| v.get_name().to_string()).collect();
            let clap = if clap.is_empty() { choices.clone() } else { clap };
            assert_eq!(choices, &clap, "{doc}: the choices of {}", d.names[0]);
        }
    }
    let in_doc: BTreeSet<&String> = documented.iter().flat_map(|d| &d.names).collect();
    for arg in flags(&c).into_iter().filter(|a| own(a)) {
        let missing: Vec<String> = names(arg).into_iter().filter(|n| !in_doc.contains(n)).collect();
        assert!(missing.is_empty(), "{doc}: no row for {missing:?} of {path:?}");
    }
}

#[test]
fn bench_flags_and_their_help_match_docs_bench_md() {
    agree("bench.md", "## Flags", &["bench"], &|_| true);
}

#[test]
fn sweep_flags_and_their_help_match_docs_sweep_md() {
    // The request flags are bench's, named in a sentence under the table.
    let bench: BTreeSet<String> =
        flags(&command(&["bench"])).iter().flat_map(|a| names(a)).collect();
    let schedule = ["--arrival", "--max-connections", "--coalesce"];
    agree("sweep.md", "## Flags", &["sweep"], &|a| {
        names(a).iter().any(|n| schedule.contains(&n.as_str()) || !bench.contains(n))
    });
}

#[test]
fn stack_up_flags_match_docs_lab_md() {
    agree("lab.md", "## Knobs (`loadlab stack up NAME ...`)", &["stack", "up"], &|_| true);
}

#[test]
fn merge_and_agents_k8s_flags_match_their_docs() {
    agree_with_at_least(2, "merge.md", "## Flags", &["merge"], &|_| true);
    agree_with_at_least(7, "kubernetes.md", "## Flags", &["agents", "k8s"], &|_| true);
}

/// The help says what the program does: `stack up --help` does not call `--net` "bandwidth
/// only" while `wan` and `rate=...,delay=...,loss=...` work, `run --help` lists `wan`, and
/// `bench --help` and `sweep --help` do not call the URL "an http:// URL".
#[test]
fn shared_help_says_what_the_program_does() {
    let help = |path: &[&str], id: &str| {
        let c = command(path);
        let arg = c.get_arguments().find(|a| a.get_id() == id).expect(id).clone();
        let text = arg.get_long_help().or(arg.get_help());
        text.map(ToString::to_string).unwrap_or_default()
    };
    for path in [&["stack", "up"][..], &["run"]] {
        let net = help(path, "net");
        for name in loadlab_lab::net::profile::BUILT_IN.iter().chain(&["delay=", "loss=", "via="]) {
            assert!(net.contains(name), "{path:?} --net says nothing of {name}: {net}");
            assert!(!net.contains("refused"), "{path:?} --net: {net}");
        }
        // What the help lists runs: each profile it names parses.
        for name in loadlab_lab::net::profile::BUILT_IN {
            assert!(name.parse::<loadlab_lab::net::Profile>().is_ok(), "{name}");
        }
    }
    for path in ["bench", "sweep"] {
        let url = help(&[path], "url");
        assert!(url.contains("https://"), "{path} URL: {url}");
    }
}

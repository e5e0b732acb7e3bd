//! A suite's view workload with `view_hosts = [...]` end to end: its cells fetch the
//! page's stylesheet on a second test server, one request per completed view as the store
//! counts them; without the key that server is never asked and the stylesheet is listed as
//! skipped.

use loadlab_store::{metric, RunId, Store};

use super::Scratch;
use crate::support::{Behaviour, SitePath, TestServer};

/// A view suite of `page_url` in one repetition of 8 views at 20 a second, with `extra` in
/// its workload.
fn suite(page_url: &str, extra: &str) -> String {
    format!(
        "name = \"view-hosts\"\nrepetitions = 1\nwarmup = \"0s\"\n[[stacks]]\nurl = \"{page_url}\"\n\
         label = \"mine\"\n[[workloads]]\nname = \"page\"\npath = \"/\"\nview = true\n{extra}\n\
         [[loads]]\nmodel = \"open\"\nrates = [20]\nrequests = 8\n"
    )
}

/// A page naming a script of its own and a stylesheet on `other` (its whole URL); `other`
/// serves the stylesheet.
fn two_servers() -> (TestServer, TestServer) {
    let other = TestServer::start(Behaviour::Site(vec![SitePath::new("/s.css", &[], "b {}")]));
    let page = format!(
        r#"<html><head><link rel="stylesheet" href="{}"><script src="/a.js"></script>
        </head><body></body></html>"#,
        other.url("/s.css")
    );
    let page = TestServer::start(Behaviour::Site(vec![
        SitePath::new("/", &[], &page),
        SitePath::new("/a.js", &[], "var a;"),
    ]));
    (page, other)
}

/// The one cell's views and its metric `name` (NaN when absent).
fn stored(scratch: &Scratch, name: &str) -> (f64, f64) {
    let store = Store::open(scratch.db()).expect("the run's store");
    let cells = store.cells(RunId(1)).expect("cells");
    assert_eq!(cells.len(), 1, "{cells:?}");
    let m = |k: &str| cells[0].metrics.get(k).copied().unwrap_or(f64::NAN);
    (m(metric::VIEWS), m(name))
}

#[test]
fn a_suites_view_hosts_fetch_the_other_servers_stylesheet_once_per_view() {
    let (page, other) = two_servers();
    let scratch = Scratch::new();
    let allowed = format!("view_hosts = [\"{}\"]", other.addr());
    let file = scratch.write("views.toml", &suite(&page.url("/"), &allowed));
    let out = scratch.out().display().to_string();
    let stdout = scratch.ok(&["run", "--suite", &file, "--out", &out]);
    let sheet = other.url("/s.css");
    let (views, sheets) = stored(&scratch, &metric::url("GET", &sheet, "completed"));
    assert!(views > 0.0, "{stdout}");
    assert_eq!(sheets, views, "the other origin's stylesheet once a view: {stdout}");
    // Before the cells: read once at discovery for what it names, and verified once.
    let before = other.requests() - views as u64;
    assert_eq!(before, 2, "{:?}\n{stdout}", other.targets());
    assert!(!stdout.contains("skipped"), "{stdout}");
}

#[test]
fn without_view_hosts_a_suites_views_never_ask_the_other_server() {
    let (page, other) = two_servers();
    let scratch = Scratch::new();
    let file = scratch.write("views.toml", &suite(&page.url("/"), ""));
    let out = scratch.out().display().to_string();
    let output = scratch.run(&["run", "--suite", &file, "--out", &out]);
    crate::support::assert_success(&output, &["run"]);
    let said = String::from_utf8_lossy(&output.stderr).to_string()
        + &String::from_utf8_lossy(&output.stdout);
    let (views, script) = stored(&scratch, &metric::url("GET", "/a.js", "completed"));
    assert!(views > 0.0 && script == views, "{said}");
    assert_eq!(other.requests(), 0, "{said}");
    let sheet = other.url("/s.css");
    assert!(said.contains(&format!("skipped (not in --view-hosts): {sheet}")), "{said}");
}

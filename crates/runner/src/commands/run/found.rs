//! A suite's page views, found once per stack instance: a view workload's page and the
//! resources its HTML names are fetched at the instance's verify (or before its first cell of
//! that workload when it has no verify of its own), then fixed for every cell the instance
//! runs. Every cell of an instance then fetches the same list, so its cells measure the same
//! views; its discovery GETs (the page, its stylesheets) are not sent again before each cell,
//! and the list is said once, when found ([`Found::take_fresh`]).
//!
//! An instance is told apart by its id and the page's URL: a lab stack comes up on a port of
//! its own for each instance, so each instance finds its own page; an external target is one
//! server for the whole run, so its pages are found once.

use std::collections::BTreeMap;

use loadlab_engine::visits::{View, ViewPlan};
use loadlab_engine::{BenchConfig, EngineError};

/// The page views found so far in a run, by instance and page URL.
#[derive(Debug, Default)]
pub struct Found {
    views: BTreeMap<(String, String), View>,
    /// Found since [`Found::take_fresh`] last took them: (workload, what a view fetches).
    fresh: Vec<(String, ViewPlan)>,
}

impl Found {
    /// Makes `config` (a view workload's cell on `instance`) run views of its page at the
    /// load's rate (or, under a closed load, by its concurrency of viewers), on up to a browser's 6 connections per visitor (and origin: the page's
    /// host and `hosts`, the workload's `view_hosts`); the page is found now if this instance
    /// has not found it yet.
    pub fn apply(
        &mut self,
        instance: &str,
        (workload, hosts): (&str, &[String]),
        config: &mut BenchConfig,
    ) -> Result<(), EngineError> {
        let (rate, arrival) = (config.pacing.rate(), config.pacing.arrival());
        let key = (instance.to_owned(), config.target.url.clone());
        let view = match self.views.get(&key) {
            Some(view) => view.clone(),
            None => {
                let connections = crate::commands::bench::flags::BROWSER_CONNECTIONS;
                let view = View::discover(config, connections, false, hosts)?;
                self.fresh.push((workload.to_owned(), view.plan().clone()));
                self.views.insert(key, view.clone());
                view
            }
        };
        view.apply(config, rate, arrival);
        Ok(())
    }

    /// The views found since the last call, each once, for the progress to list.
    pub fn take_fresh(&mut self) -> Vec<(String, ViewPlan)> {
        std::mem::take(&mut self.fresh)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use loadlab_engine::visits::ViewPlan;
    use loadlab_suite::Cell;

    use crate::commands::run::executor::{CellDone, Events, Instance, RunContext};
    use crate::fake::{FakeEngine, FakeLab};

    /// A page naming a stylesheet and a script, the stylesheet an image: what discovery
    /// fetches is the page and the stylesheet.
    const PAGE: &str = "<html><head><link rel=\"stylesheet\" href=\"/s.css\">\
                        <script src=\"/a.js\"></script></head><body>hi</body></html>";
    const CSS: &str = "body { background: url(/i.png) }";

    /// A server that answers the page and its stylesheet, one request a connection, and counts
    /// what it was asked by path; it stops with the test (and after a minute in any case).
    struct Site {
        port: u16,
        asked: Arc<Mutex<BTreeMap<String, u32>>>,
        stop: Arc<AtomicBool>,
    }

    impl Site {
        fn start() -> Site {
            let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
            listener.set_nonblocking(true).expect("nonblocking");
            let port = listener.local_addr().expect("its address").port();
            let asked = Arc::new(Mutex::new(BTreeMap::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let (counts, stopped) = (asked.clone(), stop.clone());
            std::thread::spawn(move || {
                let until = Instant::now() + Duration::from_secs(60);
                while !stopped.load(Ordering::Relaxed) && Instant::now() < until {
                    match listener.accept() {
                        Ok((conn, _)) => answer(conn, &counts),
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            });
            Site { port, asked, stop }
        }

        fn asked(&self) -> BTreeMap<String, u32> {
            self.asked.lock().expect("the counts").clone()
        }
    }

    impl Drop for Site {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn answer(conn: std::net::TcpStream, asked: &Mutex<BTreeMap<String, u32>>) {
        let _ = conn.set_nonblocking(false);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let mut reader = BufReader::new(&conn);
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        // The rest of the head.
        let mut rest = String::new();
        while reader.read_line(&mut rest).is_ok_and(|n| n > 2) {
            rest.clear();
        }
        *asked.lock().expect("the counts").entry(path.clone()).or_insert(0) += 1;
        let (kind, body) = match path.as_str() {
            "/page.html" => ("text/html", PAGE),
            "/s.css" => ("text/css", CSS),
            _ => ("text/plain", "x"),
        };
        let _ = (&conn).write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
    }

    /// The pages the executor said it found, and the instances it said up.
    #[derive(Default)]
    struct Said(Vec<String>);

    impl Events for Said {
        fn stack_up(&mut self, _: &Cell, up: &Instance) -> std::io::Result<()> {
            self.0.push(format!("up {}", up.id));
            Ok(())
        }
        fn cell_done(&mut self, d: &CellDone<'_>) -> std::io::Result<()> {
            self.0.push(format!("cell {}", d.cell.ordinal));
            Ok(())
        }
        fn cell_interrupted(&mut self, _: &str) -> std::io::Result<()> {
            Ok(())
        }
        fn views_found(&mut self, workload: &str, plan: &ViewPlan) -> std::io::Result<()> {
            self.0.push(format!("{workload}: {}", crate::commands::bench::views::fetches(plan)));
            Ok(())
        }
    }

    /// Runs a suite of a view workload of the custom page under `load` (its `[[loads]]`
    /// table), `repetitions` times, against `site` with the fake engine: what the executor
    /// said, and the configurations the engine was given.
    fn run_suite(
        site: &Site,
        repetitions: u32,
        load: &str,
    ) -> (Said, Vec<loadlab_engine::BenchConfig>) {
        let text = format!(
            "name = \"v\"\nrepetitions = {repetitions}\nwarmup = \"0s\"\n[[stacks]]\n\
             name = \"nginx\"\n[[workloads]]\nname = \"page\"\npath = \"/page.html\"\n\
             view = true\n[[loads]]\n{load}\n"
        );
        let suite = loadlab_suite::parse(&text, "v.toml").expect("the suite parses");
        let plan = loadlab_suite::plan(&suite, false);
        let lab =
            FakeLab { url: Some(format!("http://127.0.0.1:{}/", site.port)), ..Default::default() };
        let mut engine = FakeEngine::new(5_000.0);
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut store = loadlab_store::Store::open(dir.path().join("t.db")).expect("a store");
        let info = loadlab_store::RunInfo {
            suite: "v".into(),
            started_at: std::time::SystemTime::now(),
            environment: Default::default(),
        };
        let run_id = store.begin_run(&info).expect("a run");
        let mut said = Said::default();
        let mut cx = RunContext { store: &mut store, run_id, client_cpus: None, threads: 1 };
        crate::run_plan(&plan, &lab, &mut engine, &mut said, &mut cx).expect("the plan runs");
        let measured = engine.measured.borrow().clone();
        (said, measured)
    }

    /// Two instances (two repetitions), each with two view cells (two rates) of a custom
    /// page: each instance finds the page once, at its verify, and its cells reuse it.
    #[test]
    fn a_view_workloads_page_is_found_once_per_instance_and_listed_once() {
        let site = Site::start();
        let load = "model = \"open\"\nrates = [5, 10]\nrequests = 10";
        let (said, measured) = run_suite(&site, 2, load);

        // The fake engine sends nothing: every request the site saw is discovery's.
        let asked = site.asked();
        assert_eq!(asked.get("/page.html"), Some(&2), "once per instance: {asked:?}");
        assert_eq!(asked.get("/s.css"), Some(&2), "once per instance: {asked:?}");
        let list = "page: /page.html and its 3 resources: /s.css /a.js /i.png";
        let expected = ["up nginx-0", list, "cell 0", "cell 1", "up nginx-1", list, "cell 2"];
        assert_eq!(said.0[..7], expected, "{:?}", said.0);
        assert_eq!(said.0.iter().filter(|l| l.starts_with("page:")).count(), 2, "{:?}", said.0);
        // Every cell ran the views of the list found.
        let cells: Vec<_> = measured.iter().filter(|c| c.visits.is_some()).collect();
        assert_eq!(cells.len(), 4);
        for c in cells {
            let view = c.visits.as_ref().and_then(|v| v.view.as_ref()).expect("a view");
            let paths: Vec<&str> = view.resources.iter().map(|r| r.path.as_str()).collect();
            assert_eq!(paths, ["/s.css", "/a.js", "/i.png"]);
        }
    }

    /// A view workload under a closed load: its cells run views by a closed population of
    /// the load's concurrency of viewers, as `bench --view -c` does.
    #[test]
    fn a_view_workload_under_a_closed_load_runs_its_concurrency_of_viewers() {
        let site = Site::start();
        let load = "model = \"closed\"\nconcurrency = [3]\nrequests = 12";
        let (_, measured) = run_suite(&site, 1, load);
        let cells: Vec<_> = measured.iter().filter(|c| c.visits.is_some()).collect();
        assert_eq!(cells.len(), 1, "{measured:?}");
        let c = cells[0];
        assert_eq!(
            (c.pacing, c.connections, c.stop),
            (loadlab_engine::Pacing::Closed, 3, loadlab_engine::Stop::Count(12))
        );
        let view = c.visits.as_ref().and_then(|v| v.view.as_ref()).expect("a view");
        assert_eq!(view.resources.len(), 3, "{view:?}");
    }
}

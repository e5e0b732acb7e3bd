//! A suite's visit workload (`visits = ...`) in process, fake engine and lab: each cell's
//! configuration runs the visit file's steps, at the open load's rate or by the closed load's
//! visitors, and the stack is verified without them.

use loadlab_engine::Pacing;

use crate::commands::run::executor::RunContext;
use crate::fake::{FakeEngine, FakeLab};
use crate::tests::Told;

const SUITE: &str = r#"name = "visits"
repetitions = 1
warmup = "0s"

[[stacks]]
name = "nginx"

[[workloads]]
name = "browse"
visits = "browse.toml"

[[loads]]
model = "open"
rates = [5]
requests = 10

[[loads]]
model = "closed"
concurrency = [3]
requests = 10
"#;

const BROWSE: &str = r#"name = "browse"

[[step]]
path = "/hello.txt"
status = 200

[[step]]
path = "/robots.txt"
status = 200
"#;

#[test]
fn a_visit_workloads_cells_run_its_steps_by_rate_or_by_visitors() {
    let dir = tempfile::tempdir().expect("a temp dir");
    std::fs::write(dir.path().join("browse.toml"), BROWSE).expect("the visit file");
    let file = dir.path().join("visits.toml");
    std::fs::write(&file, SUITE).expect("the suite file");
    let suite = loadlab_suite::read(&file).unwrap_or_else(|e| panic!("{e}"));
    let plan = loadlab_suite::plan(&suite, false);
    let mut store = loadlab_store::Store::open(dir.path().join("t.db")).expect("a store");
    let info = loadlab_store::RunInfo {
        suite: "visits".into(),
        started_at: std::time::SystemTime::now(),
        environment: Default::default(),
    };
    let run_id = store.begin_run(&info).expect("a run");
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    let mut cx = RunContext { store: &mut store, run_id, client_cpus: None, threads: 1 };
    crate::run_plan(&plan, &lab, &mut engine, &mut Told::default(), &mut cx)
        .expect("the plan runs");
    let measured = engine.measured.borrow();
    // The stack verified once, by one whole visit (one visitor, one visit), then two cells.
    assert_eq!(measured.len(), 3);
    let verify = &measured[0];
    assert_eq!((verify.connections, verify.stop), (1, loadlab_engine::Stop::Count(1)));
    assert!(verify.visits.as_ref().is_some_and(|p| p.render.is_some()), "a whole visit");
    let cells: Vec<_> = measured[1..].iter().filter(|c| c.visits.is_some()).collect();
    assert_eq!(cells.len(), 2, "two cells");
    for c in &cells {
        let steps = &c.visits.as_ref().expect("a visit plan").steps;
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert!(steps[1].contains("/robots.txt"), "{steps:?}");
    }
    match cells[0].pacing {
        Pacing::Sessions { rate, .. } | Pacing::Open { rate, .. } => assert_eq!(rate, 5.0),
        Pacing::Closed => panic!("the open load's visits arrive at its rate"),
    }
    assert!(matches!(cells[1].pacing, Pacing::Closed), "{:?}", cells[1].pacing);
    assert_eq!(cells[1].connections, 3, "three visitors");
}

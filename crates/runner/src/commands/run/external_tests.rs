//! The executor with external targets and custom workloads, in process: fake engine, fake lab,
//! a real store in a temporary file.

use loadlab_engine::{Pacing, Stop};

use loadlab_store::ConfigRecord;

use crate::commands::run::executor::{RunError, EXTERNAL_TIER};
use crate::fake::{FakeEngine, FakeLab};
use crate::tests::{run_on_fakes, Ran};

/// The user's server (sampled by pid) beside the lab's nginx: a built-in file on both, a
/// custom POST on the user's server only, a custom HEAD on both.
const MIXED: &str = r#"name = "mixed"
repetitions = 2

[[stacks]]
name = "nginx"

[[stacks]]
url = "https://127.0.0.1:8443/"
label = "mine"
insecure = true
pids = [4242]

[[workloads]]
name = "hello.txt"

[[workloads]]
name = "post"
path = "/form"
method = "POST"
body = "a=1"
stacks = ["mine"]

[[workloads]]
name = "head"
path = "/robots.txt"
method = "HEAD"

[[loads]]
model = "closed"
concurrency = [2]
duration = "1s"
"#;

fn plan(text: &str) -> loadlab_suite::Plan {
    let suite = loadlab_suite::parse(text, "mixed.toml").unwrap_or_else(|e| panic!("{e}"));
    loadlab_suite::plan(&suite, false)
}

/// The configurations the engine measured, as (path, one request or not).
fn measured(engine: &FakeEngine) -> Vec<(String, bool)> {
    engine
        .measured
        .borrow()
        .iter()
        .map(|c| (c.target.path.clone(), c.stop == Stop::Count(1) && c.connections == 1))
        .collect()
}

/// The identity of the external target the run stored.
fn identity(ran: &Ran) -> ConfigRecord {
    let configs = ran.store.configs(ran.run_id).expect("configs");
    configs.into_iter().find(|c| c.kind == ConfigRecord::IDENTITY).expect("the identity")
}

#[test]
fn an_external_target_is_verified_first_never_started_and_sampled_by_its_pids() {
    let plan = plan(MIXED);
    // Per repetition: nginx runs hello.txt and head, mine all three.
    assert_eq!(plan.cells.len(), 10);
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    let ran = run_on_fakes(&plan, &lab, &mut engine, 2);
    ran.outcome.as_ref().expect("the plan runs");

    // Only the lab's stack comes up and goes down; the pids are resolved for the record and
    // for each of mine's instances, and sampled for each of its cells.
    let log = lab.log.borrow().clone();
    let ups: Vec<&String> =
        log.iter().filter(|l| l.starts_with("up") || l.starts_with("down")).collect();
    assert_eq!(ups, ["up nginx-0", "down nginx-0", "up nginx-1", "down nginx-1"]);
    assert_eq!(log.iter().filter(|l| *l == "resolve pids 4242").count(), 3, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "sample 1 processes").count(), 6, "{log:?}");

    // Before any cell: one request of each of mine's workloads. Each instance of nginx checks
    // its custom workload (head); mine's second instance checks all three again.
    let m = measured(&engine);
    let verify = |path: &str| (path.to_string(), true);
    let cell = |path: &str| (path.to_string(), false);
    assert_eq!(m[..3], [verify("/hello.txt"), verify("/form"), verify("/robots.txt")]);
    assert_eq!(m[3..6], [verify("/robots.txt"), cell("/hello.txt"), cell("/robots.txt")]);
    assert_eq!(m[6..9], [cell("/hello.txt"), cell("/form"), cell("/robots.txt")]);
    assert_eq!(m[9], verify("/robots.txt"));
    assert_eq!(m[12..15], [verify("/hello.txt"), verify("/form"), verify("/robots.txt")]);
    assert_eq!(m.len(), 18);
    // The engine got the user's request and TLS options.
    let configs = engine.measured.borrow();
    let post = configs.iter().find(|c| c.target.path == "/form").unwrap();
    assert_eq!((post.request.method.as_str(), post.request.body.as_slice()), ("POST", &b"a=1"[..]));
    assert!(post.tls.insecure && post.target.tls);
    assert!(configs.iter().all(|c| c.pacing == Pacing::Closed));

    // Every cell is stored; mine's with the external tier's samples and its URL as its
    // settings; the identity of whoever answered is stored with the run.
    let cells = ran.cells();
    assert_eq!(cells.len(), 10);
    for c in cells.iter().filter(|c| c.stack == "mine") {
        assert_eq!(c.samples.len(), 1);
        assert_eq!(c.samples[0].tier, EXTERNAL_TIER);
        assert_eq!(c.knobs["url"], "https://127.0.0.1:8443");
    }
    assert!(cells.iter().filter(|c| c.stack == "nginx").all(|c| c.samples.is_empty()));
    let identity = identity(&ran);
    assert_eq!((identity.stack.as_str(), identity.tier.as_str()), ("mine", EXTERNAL_TIER));
    let id = identity.identity().expect("an identity");
    assert_eq!(id.url, "https://127.0.0.1:8443");
    assert_eq!(id.address, "127.0.0.1:9");
    assert_eq!(id.tls, "yes, any certificate accepted (insecure)");
    assert_eq!(id.server, "fake");
    assert_eq!(id.sampling, "pids 4242 (1 process now, with their descendants)");
    assert!(id.verified.iter().any(|d| d.starts_with("post: status 200,")), "{id:?}");
    assert!(ran.told.0.contains(&"up mine rep 0".to_string()), "{:?}", ran.told.0);
}

#[test]
fn a_wrong_answer_from_an_external_target_stops_the_run_before_any_stack_or_cell() {
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    engine.wrong_body_at = Some("/form");
    let text = MIXED.replace("body = \"a=1\"", "body = \"a=1\"\nexpect_contains = \"thanks\"");
    let ran = run_on_fakes(&plan(&text), &lab, &mut engine, 1);
    let err = ran.outcome.as_ref().expect_err("mine answers wrongly");
    assert_eq!(
        err.to_string(),
        "verify failed for post on mine (https://127.0.0.1:8443/form): the body (13 bytes, \
         status 200) lacks \"thanks\""
    );
    assert!(matches!(err, RunError::Verify { .. }));
    assert!(lab.log.borrow().iter().all(|l| !l.starts_with("up")), "{:?}", lab.log.borrow());
    assert_eq!(ran.cells().len(), 0);
    assert_eq!(measured(&engine).len(), 2, "hello.txt, then post: the first wrong one stops");
}

#[test]
fn a_custom_workload_that_a_lab_stack_answers_wrongly_takes_it_down_and_stops_the_run() {
    let lab = FakeLab::default();
    let mut engine = FakeEngine::new(5_000.0);
    engine.wrong_body_at = Some("/robots.txt");
    let text = MIXED.replace("method = \"HEAD\"", "expect_contains = \"Disallow\"");
    // Only the lab's stack, so that its verify is the first.
    let text = text.replace("stacks = [\"mine\"]", "stacks = [\"nginx\"]");
    let text = text.replace(
        "[[stacks]]\nurl = \"https://127.0.0.1:8443/\"\nlabel = \"mine\"\ninsecure = true\npids = [4242]\n",
        "",
    );
    let ran = run_on_fakes(&plan(&text), &lab, &mut engine, 1);
    let err = ran.outcome.as_ref().expect_err("nginx answers head wrongly");
    assert!(
        err.to_string()
            .starts_with("verify failed for head on nginx (http://127.0.0.1:9/robots.txt)"),
        "{err}"
    );
    assert_eq!(lab.log.borrow().as_slice(), ["up nginx-0", "down nginx-0"]);
    assert_eq!(ran.cells().len(), 0);
}

#[test]
fn named_processes_that_are_gone_stop_the_run() {
    let lab = FakeLab { gone: true, ..FakeLab::default() };
    let ran = run_on_fakes(&plan(MIXED), &lab, &mut FakeEngine::new(5_000.0), 1);
    let err = ran.outcome.as_ref().expect_err("the pid is gone");
    assert!(matches!(err, RunError::Lab(loadlab_lab::Error::Processes(_))), "{err}");
    assert_eq!(ran.cells().len(), 0);
}

#[test]
fn an_external_target_without_named_processes_is_not_sampled_and_says_so() {
    let lab = FakeLab::default();
    let text = MIXED.replace("pids = [4242]\n", "");
    let ran = run_on_fakes(&plan(&text), &lab, &mut FakeEngine::new(5_000.0), 1);
    ran.outcome.as_ref().expect("the plan runs");
    assert!(lab.log.borrow().iter().all(|l| !l.starts_with("resolve") && !l.starts_with("sample")));
    assert!(ran.cells().iter().all(|c| c.samples.is_empty()));
    let identity = identity(&ran);
    let id = identity.identity().expect("an identity");
    assert!(id.sampling.starts_with("not sampled: external target"), "{id:?}");
}

#[test]
fn a_custom_request_on_a_tls_http2_lab_stack_is_verified_as_its_cells_are_loaded() {
    let text = r#"name = "h2"
repetitions = 1
[[stacks]]
name = "nginx"
tls = true
http2 = true
[[workloads]]
name = "robots range"
path = "/robots.txt"
headers = ["Range: bytes=0-3"]
expect_status = 206
[[loads]]
model = "closed"
concurrency = [4]
streams = 8
duration = "1s"
"#;
    let mut engine = FakeEngine::new(5_000.0);
    let ran = run_on_fakes(&plan(text), &FakeLab::default(), &mut engine, 1);
    ran.outcome.as_ref().expect("the plan runs");
    let configs = engine.measured.borrow();
    assert_eq!(configs.len(), 2, "the verify request, then the cell");
    for c in configs.iter() {
        // The instance's own CA, over HTTP/2 with the load's streams, the header sent.
        assert_eq!(c.tls.cacert.as_deref(), Some(std::path::Path::new("/fake/nginx-0/tls/ca.pem")));
        assert!(c.target.tls);
        assert_eq!(c.protocol, loadlab_engine::Protocol::Http2 { streams: 8 });
        assert_eq!(c.request.headers, vec![("Range".to_string(), "bytes=0-3".to_string())]);
        assert_eq!(c.validation.status, vec![(206, 206)]);
    }
    assert_eq!((configs[0].stop, configs[0].connections), (Stop::Count(1), 1));
}

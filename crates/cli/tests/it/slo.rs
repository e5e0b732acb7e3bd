//! `--slo`: the gate a CI job fails on. Each outcome with its exit code (0 pass, 99 a
//! threshold failed, 2 a malformed SLO), and the verdict where each format puts it.

use super::{assert_exit, at};
use crate::support::{loadlab, output_within, run_json, Behaviour, TestServer};

#[test]
fn thresholds_that_hold_pass_with_every_figure_in_the_json() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let slo = "p99<5s,p50<=5s,mean<5s,errors<1%,rps>1";
    let (report, output) =
        run_json(&["bench", "-n", "200", "-c", "2", "--slo", slo, &server.url("/")]);
    assert_exit(&output, 0);
    assert_eq!(at(&report, "slo.passed"), true);
    assert_eq!(at(&report, "slo.slo"), slo);
    let terms = at(&report, "slo.terms").as_array().unwrap();
    assert_eq!(terms.len(), 5);
    for t in terms {
        assert_eq!(t["passed"], true, "{t}");
        assert!(t["observed"].as_f64().is_some(), "{t}");
    }
    // The error share was measured, and it was 0.
    assert_eq!(terms[3]["observed"].as_f64(), Some(0.0));
}

#[test]
fn answers_that_are_not_2xx_fail_the_error_threshold_with_exit_99() {
    let server = TestServer::start(Behaviour::StatusCycle(vec![200, 500]));
    let url = server.url("/");
    let (report, output) = run_json(&["bench", "-n", "100", "-c", "1", "--slo", "errors<1%", &url]);
    assert_exit(&output, 99);
    assert_eq!(at(&report, "slo.passed"), false);
    assert_eq!(at(&report, "slo.terms")[0]["observed"].as_f64(), Some(50.0));

    // The text output says it where the figures are.
    let mut command = loadlab();
    command.args(["bench", "-n", "100", "-c", "1", "-q", "--slo", "errors<1%,rps>0", &url]);
    let output = output_within(command, std::time::Duration::from_secs(60));
    assert_exit(&output, 99);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("SLO errors<1%,rps>0: FAIL (errors 50% >= 1%)"), "{stdout}");
}

#[test]
fn a_rate_the_server_cannot_give_fails_and_the_csv_says_so_on_stderr() {
    let server = TestServer::start(Behaviour::Slow {
        delay: std::time::Duration::from_millis(20),
        body: b"ok".to_vec(),
    });
    let mut command = loadlab();
    let args = ["bench", "-n", "10", "-c", "1", "--format", "csv", "--slo", "rps>1000", "-q"];
    command.args(args).arg(server.url("/"));
    let output = output_within(command, std::time::Duration::from_secs(60));
    assert_exit(&output, 99);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loadlab: SLO rps>1000: FAIL (rps "), "{stderr}");
    // stdout stays the CSV a script parses.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!stdout.contains("SLO"), "{stdout}");
}

#[test]
fn a_malformed_slo_is_refused_before_any_load() {
    let server = TestServer::start(Behaviour::ok("ok"));
    for (slo, says) in
        [("p99<50", "needs a unit"), ("errors<1", "% sign"), ("speed>1", "unknown figure")]
    {
        let mut command = loadlab();
        command.args(["bench", "-n", "5", "--slo", slo, &server.url("/")]);
        let output = output_within(command, std::time::Duration::from_secs(20));
        assert_exit(&output, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says) && stderr.lines().count() == 1, "{slo}: {stderr}");
    }
    assert_eq!(server.requests(), 0);
}

/// A sweep gates on capacity: its rps threshold judges the knee's achieved rate, the highest
/// rate at which the other thresholds held; latency thresholds alone place the knee.
#[test]
fn a_sweep_gates_on_the_capacity_its_thresholds_held_to() {
    let server = TestServer::start(Behaviour::ok("ok"));
    let url = server.url("/");
    let sweep = |slo: &str| {
        let args = ["sweep", "--rates", "50,100", "--step-duration", "500ms", "--slo", slo, &url];
        run_json(&args)
    };
    let (out, output) = sweep("p99<2s,rps>=40");
    assert_exit(&output, 0);
    let gate = &at(&out, "gates")[0];
    assert_eq!(gate["passed"], true, "{out:#}");
    assert!(gate["detail"].as_str().unwrap().contains("held p99<2s up to 100 req/s"), "{gate}");
    assert_eq!(at(&out, "steps")[0]["slo"]["passed"], true);

    let (out, output) = sweep("p99<2s,rps>=5000");
    assert_exit(&output, 99);
    assert_eq!(at(&out, "gates")[0]["passed"], false, "{out:#}");

    // Without an rps threshold the SLO places the knee and fails no gate.
    let (out, output) = sweep("p99<2s");
    assert_exit(&output, 0);
    assert_eq!(at(&out, "gates").as_array().map(Vec::len), Some(0));
}

//! External targets (`url = ...`) and custom workloads (`path = ...`) in suite files: what
//! they parse into, what the plan makes of them, and every mistake refused at its line and
//! column.

use loadlab_engine::RequestSpec;
use loadlab_lab::named::Processes;
use loadlab_suite::{parse, plan, Check, Location, SuiteError};

/// An external target beside the lab's nginx, a built-in workload and two custom ones.
const MIXED: &str = r#"name = "mixed"
repetitions = 2

[[stacks]]
url = "http://127.0.0.1:8080/"
label = "mine"
pids = [1]

[[stacks]]
name = "nginx"

[[workloads]]
name = "hello.txt"

[[workloads]]
name = "robots gzip"
path = "/robots.txt"
headers = ["Accept-Encoding: gzip", "X-Test: 1"]

[[workloads]]
name = "post"
path = "/echo?x=1"
method = "POST"
body = "a=1"
expect_status = "200,201"
stacks = ["mine"]

[[loads]]
model = "closed"
concurrency = [2]
duration = "1s"
"#;

fn error(text: &str, file: &str) -> (Location, String) {
    match parse(text, file) {
        Err(e @ SuiteError::Invalid { at: Some(at), .. }) => (at, e.to_string()),
        Err(other) => panic!("expected a located error, got {other}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

/// `text` fails with a message holding `needle`, at the first occurrence of `at`.
#[track_caller]
fn fails_on(text: &str, at: &str, needle: &str) {
    fails_in("bad.toml", text, at, needle);
}

/// As [`fails_on`], for the file `file` (whose directory the paths in it are relative to).
#[track_caller]
fn fails_in(file: &str, text: &str, at: &str, needle: &str) {
    let offset = text.find(at).unwrap_or_else(|| panic!("{at:?} is not in the text"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count() + 1;
    let (got, message) = error(text, file);
    assert!(message.starts_with(&format!("{file}:{line}:{column}: ")), "{message} (at {at:?})");
    assert_eq!((got.line, got.column), (line, column), "{message}");
    assert!(message.contains(needle), "{message:?} lacks {needle:?}");
}

#[test]
fn an_external_target_and_custom_workloads_parse_into_what_they_say() {
    let suite = parse(MIXED, "mixed.toml").unwrap_or_else(|e| panic!("{e}"));
    let mine = suite.stacks[0].external_target().expect("an external target");
    assert_eq!(suite.stacks[0].label, "mine");
    assert_eq!(mine.url, "http://127.0.0.1:8080", "the trailing / goes: paths bring theirs");
    assert_eq!(mine.url_of("/robots.txt"), "http://127.0.0.1:8080/robots.txt");
    assert_eq!(mine.processes, Some(Processes::Pids(vec![1])));
    assert!(!mine.tls.insecure && mine.tls.cacert.is_none());
    assert!(suite.stacks[1].lab_stack().is_some());

    let gzip = suite.workloads[1].request.as_ref().expect("a custom request");
    assert_eq!(gzip.path, "/robots.txt");
    assert_eq!(gzip.spec.method, "GET");
    assert_eq!(
        gzip.spec.headers,
        vec![("Accept-Encoding".into(), "gzip".into()), ("X-Test".into(), "1".into())]
    );
    let post = suite.workloads[2].request.as_ref().expect("a custom request");
    assert_eq!((post.spec.method.as_str(), post.spec.body.as_slice()), ("POST", &b"a=1"[..]));
}

#[test]
fn the_plan_runs_custom_workloads_on_both_kinds_of_stack_with_their_checks() {
    let suite = parse(MIXED, "mixed.toml").unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&suite, false);
    let first: Vec<(&str, &str, &str)> = p
        .cells
        .iter()
        .filter(|c| c.repetition == 0)
        .map(|c| (c.stack.label.as_str(), c.workload.name(), c.workload.path.as_str()))
        .collect();
    assert_eq!(
        first,
        [
            ("mine", "hello.txt", "/hello.txt"),
            ("mine", "robots gzip", "/robots.txt"),
            ("mine", "post", "/echo?x=1"),
            ("nginx", "hello.txt", "/hello.txt"),
            ("nginx", "robots gzip", "/robots.txt"),
        ]
    );
    assert_eq!(p.cells.len(), 10);
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    let cell = |stack: &str, w: &str| {
        p.cells.iter().find(|c| c.stack.label == stack && c.workload.name() == w).unwrap()
    };
    // The built-in file keeps the lab's digest even on a server of the user's.
    assert!(matches!(cell("mine", "hello.txt").workload.check, Check::Lab(_)));
    assert!(!cell("mine", "hello.txt").workload.spec.custom());
    // A custom request without expect_* wants any 2xx; with them, what they say.
    let gzip = &cell("nginx", "robots gzip").workload;
    assert!(gzip.spec.custom());
    assert_eq!(gzip.check.validation().status, vec![(200, 299)]);
    assert_eq!(gzip.check.validation().body_sha256, None);
    let post = &cell("mine", "post").workload;
    assert_eq!(post.check.validation().status, vec![(200, 200), (201, 201)]);

    // The engine gets the request: method, headers, body, and the load's Accept-Encoding over
    // a header of the same name.
    let mut config = loadlab_engine::BenchConfig::new(
        loadlab_engine::Target::parse("http://127.0.0.1:8080/echo?x=1").unwrap(),
    );
    cell("mine", "post").apply(&mut config);
    assert_eq!(
        (config.request.method.as_str(), config.request.body.as_slice()),
        ("POST", &b"a=1"[..])
    );
    let mut config = loadlab_engine::BenchConfig::new(
        loadlab_engine::Target::parse("http://127.0.0.1:8080/hello.txt").unwrap(),
    );
    cell("mine", "hello.txt").apply(&mut config);
    assert_eq!(config.request, RequestSpec::default());
}

#[test]
fn a_custom_workload_skips_a_stack_without_http_or_its_built_in_namesake_s_server() {
    let text = r#"name = "s"
[[stacks]]
name = "nginx"
[[stacks]]
name = "mariadb"
[[stacks]]
name = "nginx-fpm"
[[workloads]]
name = "head"
path = "/hello.txt"
method = "HEAD"
[[workloads]]
name = "hello.php"
path = "/hello.php"
headers = ["X-A: b"]
stacks = ["nginx-fpm"]
[[loads]]
model = "closed"
concurrency = [1]
requests = 10
"#;
    let err = parse(text, "s.toml").unwrap_err().to_string();
    assert!(err.contains("none of the suite's workloads runs on mariadb"), "{err}");
    let text = text.replace("[[stacks]]\nname = \"mariadb\"\n", "");
    let p = plan(&parse(&text, "s.toml").unwrap_or_else(|e| panic!("{e}")), false);
    let cells: Vec<(&str, &str)> = p
        .cells
        .iter()
        .filter(|c| c.repetition == 0)
        .map(|c| (c.stack.label.as_str(), c.workload.name()))
        .collect();
    assert_eq!(cells, [("nginx", "head"), ("nginx-fpm", "head"), ("nginx-fpm", "hello.php")]);
    // Named like a built-in PHP page, it runs only where PHP does.
    let bad = text.replace("stacks = [\"nginx-fpm\"]", "stacks = [\"nginx\"]");
    fails_on(&bad, "\"nginx\"]", "hello.php cannot run on nginx: nginx runs no PHP");
}

#[test]
fn https_targets_take_cacert_or_insecure_relative_to_the_suite_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = MIXED.replace("http://127.0.0.1:8080/", "https://127.0.0.1:8443/app/");
    let insecure = text.replace("pids = [1]", "insecure = true");
    let suite = parse(&insecure, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let mine = suite.stacks[0].external_target().unwrap();
    assert!(mine.tls.insecure && mine.tls.resume);
    assert_eq!(mine.url_of("/x"), "https://127.0.0.1:8443/app/x");
    assert_eq!(mine.processes, None);

    let file = dir.path().join("s.toml").display().to_string();
    let with_ca = text.replace("pids = [1]", "cacert = \"ca.pem\"");
    let (_, message) = error(&with_ca, &file);
    let ca = dir.path().join("ca.pem");
    assert!(message.contains(&format!("cacert: {}: ", ca.display())), "{message}");
    std::fs::write(&ca, "not a certificate\n").unwrap();
    fails_in(&file, &with_ca, "\"ca.pem\"", "no certificate in it");
    let both = text.replace("pids = [1]", "cacert = \"ca.pem\"\ninsecure = true");
    fails_in(&file, &both, "\"ca.pem\"", "give cacert or insecure = true, not both");
    let plain = MIXED.replace("pids = [1]", "insecure = true");
    fails_on(&plain, "true", "insecure applies to an https:// url");
}

#[test]
fn external_targets_refuse_what_does_not_apply_to_them() {
    fails_on(&MIXED.replace("pids = [1]", "gzip = true"), "true", "gzip is a knob of the lab's");
    fails_on(&MIXED.replace("pids = [1]", "workers = 4"), "4\n", "workers is a knob of the lab's");
    fails_on(
        &MIXED.replace("pids = [1]", "net = \"wan\""),
        "\"wan\"",
        "net is a knob of the lab's",
    );
    fails_on(&MIXED.replace("label = \"mine\"\n", ""), "\"http://", "needs a label");
    fails_on(&MIXED.replace("label = \"mine\"", "label = \"my nginx\""), "\"my nginx\"", "label:");
    fails_on(
        &MIXED.replace("url = \"http://127.0.0.1:8080/\"", "url = \"127.0.0.1:8080\""),
        "\"127.0.0.1:8080\"",
        "url: invalid URL",
    );
    fails_on(&MIXED.replace("8080/\"", "8080/?a=1\""), "\"http://", "a query cannot be combined");
    fails_on(
        &MIXED.replace("label = \"mine\"", "label = \"mine\"\nname = \"nginx\""),
        "\"http://",
        "give name (a built-in stack) or url (a server of yours), not both",
    );
    fails_on(
        &MIXED.replace("url = \"http://127.0.0.1:8080/\"\n", ""),
        "[[stacks]]",
        "a stack needs name = ",
    );
    fails_on(&MIXED.replace("[1]", "[]"), "[]", "pids: give at least one");
    fails_on(&MIXED.replace("[1]", "[1, 0]"), "0]", "a process id is a positive number");
    fails_on(
        &MIXED.replace("pids = [1]", "pids = [1]\nunit = \"nginx.service\""),
        "\"nginx.service\"",
        "unit: name the processes to sample once",
    );
    fails_on(&MIXED.replace("pids = [1]", "unit = \"a b\""), "\"a b\"", "unit: a systemd unit");
    // The external keys on a lab stack.
    let text = MIXED.replace("name = \"nginx\"\n", "name = \"nginx\"\npidfile = \"x.pid\"\n");
    fails_on(&text, "\"x.pid\"", "pidfile applies to an external target");
    let text = MIXED.replace("pids = [1]", "label = \"nginx\"");
    assert!(parse(&text, "t.toml").is_err());
}

#[test]
fn custom_workloads_are_checked_where_they_are_written() {
    fails_on(
        &MIXED.replace("name = \"robots gzip\"", "name = \"hello.txt\""),
        "\"hello.txt\"\npath",
        "\"hello.txt\" is the built-in workload at /hello.txt",
    );
    // A built-in name with its own path is a custom request to that file.
    let same = MIXED.replace("name = \"robots gzip\"", "name = \"robots.txt\"");
    let suite = parse(&same, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    assert!(suite.workloads[1].request.is_some());
    fails_on(
        &MIXED.replace("path = \"/robots.txt\"", "path = \"robots.txt\""),
        "\"robots.txt\"",
        "path: starts with /",
    );
    fails_on(&MIXED.replace("/echo?x=1", "/a b"), "\"/a b\"", "path: starts with /");
    fails_on(
        &MIXED.replace("\"X-Test: 1\"", "\"X-Test\""),
        "\"X-Test\"",
        "headers: invalid header",
    );
    fails_on(
        &MIXED.replace("\"X-Test: 1\"", "\"Content-Length: 9\""),
        "\"Content-Length: 9\"",
        "Content-Length is set from the body",
    );
    fails_on(&MIXED.replace("\"POST\"", "\"PO ST\""), "\"PO ST\"", "method: invalid method");
    fails_on(
        &MIXED.replace("body = \"a=1\"", "body = \"a=1\"\nbody_file = \"b.bin\""),
        "\"b.bin\"",
        "give body or body_file, not both",
    );
    fails_on(
        &MIXED.replace("body = \"a=1\"", "body_file = \"missing.bin\""),
        "\"missing.bin\"",
        "body_file: cannot read missing.bin",
    );
    fails_on(
        &MIXED.replace("name = \"hello.txt\"\n", "name = \"hello.txt\"\nmethod = \"HEAD\"\n"),
        "\"HEAD\"",
        "method is part of a custom request, which needs its path (path = \"/hello.txt\"",
    );
    fails_on(
        &MIXED.replace("name = \"hello.txt\"", "name = \"index\""),
        "\"index\"",
        "or give a path",
    );
    fails_on(
        &MIXED.replace("name = \"post\"", "name = \"robots gzip\""),
        "\"robots gzip\"\npath = \"/echo",
        "appears twice",
    );
}

#[test]
fn a_body_file_is_read_relative_to_the_suite_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("body.json"), b"{\"a\": 1}").unwrap();
    let text = MIXED.replace("body = \"a=1\"", "body_file = \"body.json\"");
    let file = dir.path().join("s.toml");
    std::fs::write(&file, &text).unwrap();
    let suite = loadlab_suite::read(&file).unwrap_or_else(|e| panic!("{e}"));
    let post = suite.workloads[2].request.as_ref().unwrap();
    assert_eq!(post.spec.body, b"{\"a\": 1}");
}

#[test]
fn the_documented_external_example_parses_into_the_cells_it_counts() {
    let doc = include_str!("../../../docs/suites.md");
    let start = doc.find("```toml\nname = \"mine-vs-lab\"").expect("the external example") + 8;
    let end = start + doc[start..].find("```").unwrap();
    let suite = parse(&doc[start..end], "docs/suites.md").unwrap_or_else(|e| panic!("{e}"));
    let mine = suite.stacks[0].external_target().expect("an external target");
    assert_eq!(mine.processes, Some(Processes::Pidfile("/run/nginx.pid".into())));
    // As the text under the example counts them: 10 cells a repetition, 50 in all.
    let p = plan(&suite, false);
    assert_eq!(p.cells.iter().filter(|c| c.repetition == 0).count(), 10);
    assert_eq!(p.cells.len(), 50);
}

#[test]
fn an_external_target_costs_a_verify_not_a_stack_start_in_the_estimate() {
    use loadlab_suite::estimate::{CELL_OVERHEAD, EXTERNAL_VERIFY, STACK_UP};
    let p = plan(&parse(MIXED, "mixed.toml").unwrap_or_else(|e| panic!("{e}")), false);
    let e = p.estimate();
    // 10 cells of 1 s; nginx comes up twice, mine is verified twice.
    assert_eq!((e.cells, e.stack_ups), (10, 4));
    // The lab starts two stack instances, not 4: the external target is no instance.
    assert_eq!((e.lab_ups, e.external_targets), (2, 1));
    assert_eq!(e.places(), "2 stack instances and 1 external target");
    let expected = std::time::Duration::from_secs(10)
        + CELL_OVERHEAD * 10
        + STACK_UP * 2
        + EXTERNAL_VERIFY * 2;
    assert_eq!(e.total, expected);
}

/// A URL list's `method` and `headers` are what its lines leave out: checked as a single
/// request's are, each at its key, before anything runs.
#[test]
fn a_url_lists_method_and_headers_are_checked_as_a_requests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("urls.txt"), "/a\nweight=3 /b\n").unwrap();
    let file = dir.path().join("s.toml").display().to_string();
    let list = MIXED.replace("path = \"/robots.txt\"", "urls = \"urls.txt\"");
    let suite = parse(&list, &file).unwrap_or_else(|e| panic!("{e}"));
    let shop = suite.workloads[1].request.as_ref().unwrap();
    assert_eq!(shop.spec.headers.len(), 2);
    assert!(shop.urls.is_some());
    let text = list.replace("\"X-Test: 1\"", "\"Content-Length: 9\"");
    fails_in(&file, &text, "\"Content-Length: 9\"", "Content-Length is set from the body");
    let text = list.replace("name = \"robots gzip\"", "name = \"robots gzip\"\nmethod = \"GE T\"");
    fails_in(&file, &text, "\"GE T\"", "method: invalid method \"GE T\"");
}

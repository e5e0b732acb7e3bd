//! A workload's `visits = ...`: a built-in visit or a visit file relative to the
//! suite file, checked when the suite is; refused with the keys it does not go with, an
//! unknown built-in name, or a visit file with a wrong step, each at the value to fix.

use loadlab_suite::{parse, plan, SuiteError};

const SUITE: &str = r#"name = "visits"

[[stacks]]
name = "wordpress-nginx-fpm"

[[workloads]]
name = "searches"
visits = "wordpress:search"

[[loads]]
model = "open"
rates = [2]
duration = "4s"
"#;

/// The message and `line:column` of the error `text` (read as `file`) gives.
fn error(text: &str, file: &str) -> (String, String) {
    match parse(text, file) {
        Err(e @ SuiteError::Invalid { at: Some(at), .. }) => {
            (e.to_string(), format!("{}:{}", at.line, at.column))
        }
        Err(other) => panic!("expected a located error, got {other}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

/// The `line:column` of the first `needle` in `text`.
/// A workload's visits as one name of weight 1 (one visit alone) or `name:weight`s.
fn named(visits: &Option<Vec<(String, u32)>>) -> Option<String> {
    let v = visits.as_ref()?;
    Some(match v.as_slice() {
        [(one, 1)] => one.clone(),
        many => many.iter().map(|(n, w)| format!("{n}:{w}")).collect::<Vec<_>>().join(","),
    })
}

fn position(text: &str, needle: &str) -> String {
    let offset = text.find(needle).unwrap_or_else(|| panic!("{needle:?} is not in the text"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count() + 1;
    format!("{line}:{column}")
}

#[test]
fn a_built_in_visit_runs_on_the_stack_with_its_base_request() {
    let suite = parse(SUITE, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let w = &suite.workloads[0];
    assert_eq!(named(&w.visits).as_deref(), Some("wordpress:search"));
    assert_eq!(w.request.as_ref().map(|r| r.path.as_str()), Some("/"));
    let p = plan(&suite, false);
    assert_eq!(p.cells.len(), p.repetitions as usize, "a cell a repetition");
    assert!(p
        .cells
        .iter()
        .all(|c| named(&c.workload.spec.visits).as_deref() == Some("wordpress:search")));
    let plain = SUITE.replace("visits = \"wordpress:search\"", "path = \"/\"");
    let p = plan(&parse(&plain, "s.toml").unwrap(), false);
    assert_eq!(p.cells[0].workload.spec.visits, None);
}

#[test]
fn keys_that_do_not_go_with_visits_and_unknown_names_are_refused_where_written() {
    for (extra, at, needle) in [
        ("view = true", "true", "view does not go with visits"),
        ("urls = \"u.txt\"", "\"u.txt\"", "urls does not go with visits"),
        ("body = \"a=1\"", "\"a=1\"", "body does not go with visits"),
    ] {
        let text = SUITE.replace(
            "visits = \"wordpress:search\"",
            &format!("visits = \"wordpress:search\"\n{extra}"),
        );
        let (message, got) = error(&text, "s.toml");
        assert_eq!(got, position(&text, at), "{message}");
        assert!(message.contains(needle), "{message}");
        assert!(message.starts_with(&format!("s.toml:{got}: ")), "{message}");
    }
    let text = SUITE.replace("wordpress:search", "wordpress:shop");
    let (message, got) = error(&text, "s.toml");
    assert_eq!(got, position(&text, "\"wordpress:shop\""));
    assert!(
        message.contains("no built-in visit \"wordpress:shop\"; they are: wordpress:front"),
        "{message}"
    );
    let text = SUITE.replace("name = \"searches\"", "name = \"wordpress\"");
    let (message, _) = error(&text, "s.toml");
    assert!(message.contains("is a built-in workload"), "{message}");
}

#[test]
fn a_visit_file_is_read_relative_to_the_suite_file_and_a_wrong_step_refused() {
    let dir = tempfile::tempdir().unwrap();
    let visit = "name = \"browse\"\n\n[[step]]\npath = \"/\"\n\n[[step]]\npath = \"/?p={id}\"\n";
    std::fs::write(dir.path().join("browse.toml"), visit).unwrap();
    let text = SUITE.replace("wordpress:search", "browse.toml");
    let file = dir.path().join("s.toml");
    std::fs::write(&file, &text).unwrap();
    // A step that uses a value nothing captured: the visit file's own error, at the key.
    let err = loadlab_suite::read(&file).map(|_| ()).unwrap_err().to_string();
    let at = format!("{}:{}: visits: ", file.display(), position(&text, "\"browse.toml\""));
    assert!(err.starts_with(&at), "{err}");
    assert!(err.contains("browse.toml"), "the visit file named: {err}");

    std::fs::write(dir.path().join("browse.toml"), visit.replace("={id}", "=1")).unwrap();
    let suite = loadlab_suite::read(&file).unwrap_or_else(|e| panic!("{e}"));
    let want = dir.path().join("browse.toml").display().to_string();
    assert_eq!(named(&suite.workloads[0].visits), Some(want));

    let missing = SUITE.replace("wordpress:search", "nowhere.toml");
    std::fs::write(&file, &missing).unwrap();
    let err = loadlab_suite::read(&file).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("visits: ") && err.contains("nowhere.toml"), "{err}");
}

/// `given = {...}`: values a visit's steps use, carried to each cell; a name no step uses, a
/// name a step captures, or `given` without `visits` is refused at the key.
#[test]
fn given_values_reach_the_cells_and_a_name_no_step_uses_is_refused() {
    let login = SUITE.replace(
        "visits = \"wordpress:search\"",
        "visits = \"wordpress:login\"\ngiven = { user = \"member-{visitor}\" }",
    );
    let suite = parse(&login, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&suite, false);
    let given = vec![("user".to_string(), "member-{visitor}".to_string())];
    assert!(p.cells.iter().all(|c| c.workload.spec.given == given));
    let (e, at) = error(&login.replace("{ user =", "{ colour ="), "s.toml");
    assert!(e.contains("given for {colour}, which no step uses"), "{e}");
    assert_eq!(at, position(&login, "\"wordpress:login\""));
    let searching = SUITE.replace(
        "visits = \"wordpress:search\"",
        "visits = \"wordpress:search\"\ngiven = { visitor = \"7\" }",
    );
    let (e, _) = error(&searching, "s.toml");
    assert!(e.contains("given visitor: {visitor} is the visitor's number"), "{e}");
    let plain =
        SUITE.replace("visits = \"wordpress:search\"", "path = \"/\"\ngiven = { a = \"b\" }");
    let (e, at) = error(&plain, "s.toml");
    assert!(e.contains("given goes with visits"), "{e}");
    assert_eq!(at, position(&plain, "{ a = "));
}

#[test]
fn a_weighted_mix_of_visits_resolves_each_and_keeps_its_weight() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.toml"), "[[step]]\npath = \"/a\"\n").unwrap();
    std::fs::write(dir.path().join("b.toml"), "[[step]]\npath = \"/b\"\n").unwrap();
    let file = dir.path().join("s.toml");
    let abs = |n: &str| dir.path().join(n).display().to_string();
    for (written, want) in [
        (r#"["a.toml:3", "b.toml"]"#, format!("{}:3,{}:1", abs("a.toml"), abs("b.toml"))),
        (r#""a.toml:3,wordpress:search""#, format!("{}:3,wordpress:search:1", abs("a.toml"))),
        (r#"["a.toml"]"#, abs("a.toml")),
    ] {
        let text = SUITE.replace("\"wordpress:search\"", written);
        std::fs::write(&file, &text).unwrap();
        let suite = loadlab_suite::read(&file).unwrap_or_else(|e| panic!("{written}: {e}"));
        assert_eq!(named(&suite.workloads[0].visits), Some(want), "{written}");
    }
    // A weight of 0, or a file of the mix that is not there: refused at the key.
    for (written, said) in [(r#"["a.toml:0"]"#, "from 1"), (r#"["a.toml:2", "c.toml"]"#, "c.toml")]
    {
        let text = SUITE.replace("\"wordpress:search\"", written);
        std::fs::write(&file, &text).unwrap();
        let err = loadlab_suite::read(&file).map(|_| ()).unwrap_err().to_string();
        let at = format!("{}:{}: visits: ", file.display(), position(&text, written));
        assert!(err.starts_with(&at), "{err}");
        assert!(err.contains(said), "{err}");
    }
}

/// A visit file whose path holds a comma and a colon: the list form takes each element as one
/// file (its last `:N` a weight); the string form a file named whole. An empty name in the
/// list is refused at the key.
#[test]
fn a_visit_file_path_with_a_comma_and_a_colon_is_named_in_a_list() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("a,b:c");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("x,y.toml"), "[[step]]\npath = \"/x\"\n").unwrap();
    std::fs::write(dir.path().join("b.toml"), "[[step]]\npath = \"/b\"\n").unwrap();
    let file = dir.path().join("s.toml");
    let abs = |n: &str| dir.path().join(n).display().to_string();
    let odd = abs("a,b:c/x,y.toml");
    for (written, want) in [
        (r#"["a,b:c/x,y.toml:2", "b.toml"]"#, format!("{odd}:2,{}:1", abs("b.toml"))),
        (r#"["a,b:c/x,y.toml"]"#, odd.clone()),
        (r#""a,b:c/x,y.toml""#, odd.clone()),
    ] {
        let text = SUITE.replace("\"wordpress:search\"", written);
        std::fs::write(&file, &text).unwrap();
        let suite = loadlab_suite::read(&file).unwrap_or_else(|e| panic!("{written}: {e}"));
        assert_eq!(named(&suite.workloads[0].visits), Some(want), "{written}");
    }
    for written in [r#"["b.toml", ""]"#, r#"[]"#, r#"["b.toml", ":2"]"#] {
        let text = SUITE.replace("\"wordpress:search\"", written);
        std::fs::write(&file, &text).unwrap();
        let err = loadlab_suite::read(&file).map(|_| ()).unwrap_err().to_string();
        let at = format!("{}:{}: visits: ", file.display(), position(&text, written));
        assert!(err.starts_with(&at) && err.contains("empty visit file name"), "{err}");
    }
}

/// `view_hosts = [...]`: a view workload's other hosts reach each of its cells, as `bench
/// --view-hosts` takes them; without `view = true` it is refused at the key.
#[test]
fn view_hosts_reach_a_view_workloads_cells_and_need_a_view() {
    let view = SUITE.replace(
        "visits = \"wordpress:search\"",
        "path = \"/\"\nview = true\nview_hosts = [\"cdn.example\", \"127.0.0.1:8443\"]",
    );
    let suite = parse(&view, "s.toml").unwrap_or_else(|e| panic!("{e}"));
    let p = plan(&suite, false);
    assert!(!p.cells.is_empty());
    for c in &p.cells {
        assert_eq!(c.workload.spec.view_hosts, ["cdn.example", "127.0.0.1:8443"]);
    }
    let plain = view.replace("view = true\n", "");
    let (e, at) = error(&plain, "s.toml");
    assert!(e.contains("searches: view_hosts goes with view = true"), "{e}");
    assert_eq!(at, position(&plain, "[\"cdn.example\""));
}

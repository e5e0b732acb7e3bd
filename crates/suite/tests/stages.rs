//! Loads that change over time in a suite file: `stages` (any model) and a ramp in `rates`,
//! read as `bench --stages` and `bench --rate A..B` read them, refused where they make no
//! sense with the file, line and column, and planned into cells that pace the engine.

use std::time::Duration;

use loadlab_engine::{BenchConfig, Level, Pacing, Stop, Target};
use loadlab_suite::{parse, plan, Points, SuiteError};

const STAGED: &str = r#"name = "staged"
repetitions = 2
warmup = "2s"

[[stacks]]
name = "nginx"

[[workloads]]
name = "hello.txt"

[[loads]]
model = "open"
rates = [200, 400]
duration = "10s"

[[loads]]
model = "open"
stages = "10s:0..1000,20s:1000,10s:1000..0"

[quick]
factor = 0.1
min_duration = "2s"
"#;

/// The message and position of the error `text` gives.
#[track_caller]
fn fails_on(text: &str, at: &str, needle: &str) {
    let offset = text.find(at).unwrap_or_else(|| panic!("{at:?} is not in the text"));
    let line = text[..offset].matches('\n').count() + 1;
    match parse(text, "staged.toml") {
        Err(e @ SuiteError::Invalid { at: Some(got), .. }) => {
            let message = e.to_string();
            assert_eq!(got.line, line, "{message} (expected at {at:?})");
            assert!(message.starts_with("staged.toml:"), "{message}");
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
        Err(other) => panic!("expected a located error, got {other}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

#[test]
fn stages_make_one_point_at_their_mean_and_set_the_duration() {
    let suite = parse(STAGED, "staged.toml").unwrap_or_else(|e| panic!("{e}"));
    let (fixed, staged) = (&suite.loads[0], &suite.loads[1]);
    assert_eq!(fixed.shape, None);
    assert_eq!(fixed.points, Points::Open { rates: vec![200.0, 400.0] }, "numbers as before");
    let Some(Level::Stages(shape)) = &staged.shape else { panic!("{:?}", staged.shape) };
    // 5,000 + 20,000 + 5,000 arrivals over 40 s.
    assert_eq!(shape.total(), 30_000.0);
    assert_eq!(staged.points, Points::Open { rates: vec![750.0] });
    assert_eq!(staged.stop, Stop::Duration(Duration::from_secs(40)));
}

/// The key reads k6's `DURATION:TARGET` as k6 does, as `bench --stages` does: a ramp from the
/// previous stage's end (the first from 0), a hold only where the level was already reached.
#[test]
fn stages_in_k6_spelling_ramp_from_the_previous_target() {
    let k6 = STAGED.replace("10s:0..1000,20s:1000,10s:1000..0", "10s:1000,20s:1000,10s:0");
    let suite = parse(&k6, "staged.toml").unwrap_or_else(|e| panic!("{e}"));
    let Some(Level::Stages(shape)) = &suite.loads[1].shape else { panic!("{k6}") };
    assert_eq!(shape.to_string(), "10s:0..1000,20s:1000,10s:1000..0");
    assert_eq!(shape.total(), 30_000.0);
}

#[test]
fn a_staged_cell_paces_the_engine_by_its_shape_without_warm_up() {
    let suite = parse(STAGED, "staged.toml").unwrap();
    let p = plan(&suite, false);
    // Two fixed rates and one shape, on one stack, twice.
    assert_eq!(p.cells.len(), 6);
    let staged = p.cells.iter().find(|c| c.load.shape.is_some()).expect("a staged cell");
    assert_eq!(staged.load.warmup, Duration::ZERO, "a shape starts where it says");
    assert_eq!(staged.load.shape_label().as_deref(), Some("10s:0..1000,20s:1000,10s:1000..0"));
    let fixed = p.cells.iter().find(|c| c.load.shape.is_none()).unwrap();
    assert_eq!(fixed.load.warmup, Duration::from_secs(2));
    assert_eq!(fixed.load.shape_label(), None);

    let mut config = BenchConfig::new(Target::parse("http://127.0.0.1:8080/hello.txt").unwrap());
    staged.apply(&mut config);
    let shape = config.shape.as_ref().expect("the engine gets the shape");
    assert_eq!(shape.total(), 30_000.0);
    assert_eq!(config.stop, Stop::Duration(Duration::from_secs(40)));
    assert!(config.keeps_intervals(), "every second's histogram is kept");
    assert!(!config.hdr_log, "no interval log was asked for");
    assert!(matches!(config.pacing, Pacing::Open { rate, .. } if rate == 750.0));
    config.check().unwrap_or_else(|e| panic!("{e}"));
    // The estimate counts the shape's length.
    let one = loadlab_suite::Plan { cells: vec![staged.clone()], ..p.clone() };
    assert_eq!(one.estimate().load, Duration::from_secs(40));
}

#[test]
fn quick_shortens_every_stage_alike_and_keeps_the_levels() {
    let suite = parse(STAGED, "staged.toml").unwrap();
    let p = plan(&suite, true);
    let staged = p.cells.iter().find(|c| c.load.shape.is_some()).unwrap();
    // 40 s x 0.1 = 4 s, above min_duration: each stage a tenth of itself.
    assert_eq!(staged.load.shape_label().as_deref(), Some("1s:0..1000,2s:1000,1s:1000..0"));
    assert_eq!(staged.load.stop, Stop::Duration(Duration::from_secs(4)));
    let shape = staged.load.shape.as_ref().unwrap();
    assert_eq!(shape.peak(), 1000.0);
}

#[test]
fn a_ramp_in_rates_runs_over_the_duration() {
    let text = STAGED.replace("rates = [200, 400]", "rates = [\"100..500\"]");
    let suite = parse(&text, "staged.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.loads[0].shape, Some(Level::Ramp(100.0, 500.0)));
    assert_eq!(suite.loads[0].points, Points::Open { rates: vec![300.0] });
    let p = plan(&suite, false);
    let ramp = p.cells.iter().find(|c| c.load.load_index == 0).unwrap();
    assert_eq!(ramp.load.shape_label().as_deref(), Some("10s:100..500"));
    assert_eq!(ramp.load.shape.as_ref().unwrap().total(), 3_000.0);
    // Under --quick the ramp is laid over the shortened duration: same ends, 2 s.
    let quick = plan(&suite, true);
    let ramp = quick.cells.iter().find(|c| c.load.load_index == 0).unwrap();
    assert_eq!(ramp.load.shape_label().as_deref(), Some("2s:100..500"));
    // A string that is a plain rate is one.
    let text = STAGED.replace("rates = [200, 400]", "rates = [200, \"2k\"]");
    let suite = parse(&text, "staged.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.loads[0].points, Points::Open { rates: vec![200.0, 2000.0] });
}

#[test]
fn closed_and_sessions_loads_take_stages_too() {
    let text = STAGED
        .replace("model = \"open\"\nstages", "model = \"closed\"\nstages")
        .replace("10s:0..1000,20s:1000,10s:1000..0", "5s:1..20,5s:20");
    let suite = parse(&text, "staged.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.loads[1].points, Points::Closed { concurrency: vec![20] }, "the peak");
    let p = plan(&suite, false);
    let staged = p.cells.iter().find(|c| c.load.shape.is_some()).unwrap();
    let mut config = BenchConfig::new(Target::parse("http://127.0.0.1:8080/").unwrap());
    config.threads = 2;
    staged.apply(&mut config);
    assert_eq!((config.connections, config.pacing), (20, Pacing::Closed));
    config.check().unwrap_or_else(|e| panic!("{e}"));

    let text = STAGED.replace("model = \"open\"\nstages", "model = \"sessions\"\nstages");
    let suite = parse(&text, "staged.toml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(suite.loads[1].points, Points::Sessions { rates: vec![750.0], calls: 1 });
}

#[test]
fn shapes_are_refused_where_they_make_no_sense_naming_the_key() {
    let stages = "stages = \"10s:0..1000,20s:1000,10s:1000..0\"";
    let with = |extra: &str| STAGED.replace(stages, &format!("{stages}\n{extra}"));
    fails_on(&with("duration = \"5s\""), "duration = \"5s\"", "duration does not apply");
    fails_on(&with("requests = 100"), "requests = 100", "requests does not apply");
    fails_on(&with("rates = [5]"), "rates = [5]", "give one of rates, sweep and stages");
    let bad = |value: &str| STAGED.replace("10s:0..1000,20s:1000,10s:1000..0", value);
    fails_on(&bad("10x:5"), "stages = ", "stages: \"10x:5\"");
    fails_on(&bad("0..100"), "stages = ", "has no duration");
    fails_on(&bad("10s:0"), "stages = ", "nothing to send");
    let rates = |value: &str| STAGED.replace("rates = [200, 400]", &format!("rates = {value}"));
    fails_on(&rates("[\"100..500\", 200]"), "\"100..500\"", "a ramp is a load of its own");
    fails_on(&rates("[\"5s:100\"]"), "\"5s:100\"", "write them as stages");
    fails_on(&rates("[\"fast\"]"), "\"fast\"", "rates: ");
    fails_on(&rates("[0]"), "[0]", "a rate must be a positive number");
    let ramp_by_count = rates("[\"100..500\"]").replace("duration = \"10s\"", "requests = 100");
    fails_on(&ramp_by_count, "requests = 100", "a ramp runs over a duration");
    let closed_both =
        STAGED.replace("model = \"open\"\nstages", "model = \"closed\"\nconcurrency = [2]\nstages");
    fails_on(&closed_both, "stages = ", "give concurrency or stages, not both");
}

//! The built-in suites: one per classic experiment, and `classic`, the default short tour of
//! all five. Each is a TOML file under `suites/`, embedded so the binary needs nothing beside it.

use std::path::Path;

use crate::error::SuiteError;
use crate::parse;
use crate::suite::Suite;

/// The suite `loadlab run` runs when none is named.
pub const DEFAULT: &str = "classic";

/// Name and text of every built-in suite; the tour first, then the seeds in order, then
/// today's questions.
pub const BUILTIN: &[(&str, &str)] = &[
    ("classic", include_str!("../suites/classic.toml")),
    ("php-modphp-vs-fastcgi", include_str!("../suites/php-modphp-vs-fastcgi.toml")),
    ("static-dynamic-rate-sweep", include_str!("../suites/static-dynamic-rate-sweep.toml")),
    ("modphp-vs-fpm-keepalive", include_str!("../suites/modphp-vs-fpm-keepalive.toml")),
    ("robots-autobench", include_str!("../suites/robots-autobench.toml")),
    ("wordpress-cache-layers", include_str!("../suites/wordpress-cache-layers.toml")),
    ("modern", include_str!("../suites/modern.toml")),
    ("ramp", include_str!("../suites/ramp.toml")),
    ("wordpress-visits", include_str!("../suites/wordpress-visits.toml")),
];

/// The names of the built-in suites.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(name, _)| *name)
}

/// The built-in suite `name`.
pub fn builtin(name: &str) -> Result<Suite, SuiteError> {
    let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name) else {
        return Err(unknown(name));
    };
    parse::parse(text, &format!("built-in:{name}"))
}

/// What `--suite` names: a path when it holds a `/` or ends in `.toml`, else a built-in suite.
/// A path is never guessed from a bare name, so a stray file called `classic` in the current
/// directory cannot replace the built-in suite.
pub fn load(name_or_path: &str) -> Result<Suite, SuiteError> {
    if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
        parse::read(Path::new(name_or_path))
    } else {
        builtin(name_or_path)
    }
}

fn unknown(name: &str) -> SuiteError {
    SuiteError::UnknownSuite {
        name: name.to_string(),
        known: names().collect::<Vec<_>>().join(", "),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use loadlab_engine::Stop;

    use super::*;
    use crate::plan::{plan, Plan, Point};
    use crate::suite::Points;

    fn planned(name: &str, quick: bool) -> Plan {
        plan(&builtin(name).unwrap_or_else(|e| panic!("{e}")), quick)
    }

    #[test]
    fn every_builtin_suite_parses_and_plans() {
        for name in names() {
            let suite = builtin(name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(suite.name, name, "the file's name is the suite's key");
            assert!(suite.description.len() > 200, "{name}: say what it reproduces and how");
            for quick in [false, true] {
                let p = plan(&suite, quick);
                assert!(!p.cells.is_empty(), "{name}");
                assert_eq!(p.instances().count(), suite.stacks.len() * p.repetitions as usize);
            }
        }
        assert_eq!(names().next(), Some(DEFAULT));
    }

    #[test]
    fn comparisons_keep_four_repetitions_even_when_quick() {
        for name in names() {
            for quick in [false, true] {
                let p = planned(name, quick);
                // 3 against 3 cannot reach significance; see runner::power.
                assert!(p.repetitions >= 4, "{name} quick={quick}: {}", p.repetitions);
            }
        }
    }

    /// The cost of each stack instance and cell beyond its load is counted (see `estimate`),
    /// so a budget met here leaves the rest to the servers' speed, which only matters for
    /// counted closed loops.
    #[test]
    fn classic_fits_in_five_minutes_on_two_cores() {
        let p = planned("classic", false);
        let e = p.estimate();
        assert!(e.total < Duration::from_secs(5 * 60), "{e:?}");
        // Only WordPress, whose latency at -c 25 is too long for a short window, is counted;
        // the estimate takes its slowest layer at 8 req/s, under half of what it measured.
        for c in &p.cells {
            let counted = matches!(c.load.stop, Stop::Count(_));
            assert_eq!(counted, c.workload.name() == "wordpress", "{}", c.workload.name());
        }
        let quick = planned("classic", true).estimate();
        assert!(quick.total < e.total, "{quick:?}");
    }

    #[test]
    fn every_quick_suite_takes_a_few_minutes() {
        for name in names() {
            let e = planned(name, true).estimate();
            assert!(e.total < Duration::from_secs(5 * 60), "{name}: {e:?}");
        }
    }

    #[test]
    fn classic_visits_every_seed() {
        let p = planned("classic", false);
        let workloads: BTreeSet<&str> = p.cells.iter().map(|c| c.workload.name()).collect();
        // 000, 001, 002, 003 and 004 in turn.
        for w in ["phpinfo.php", "20k.bin", "country.php", "hello.php", "complex.php"] {
            assert!(workloads.contains(w), "{w}");
        }
        for w in ["hello.txt", "robots.txt", "wordpress"] {
            assert!(workloads.contains(w), "{w}");
        }
    }

    #[test]
    fn seed_000_closed_loop_at_1_10_100_with_10000_requests() {
        let suite = builtin("php-modphp-vs-fastcgi").unwrap();
        let stacks: Vec<&str> =
            suite.stacks.iter().map(|s| s.lab_stack().unwrap().stack.name).collect();
        assert_eq!(stacks, ["apache-prefork-modphp", "nginx-spawn-fcgi"]);
        assert_eq!(suite.workloads[0].name, "phpinfo.php");
        let load = &suite.loads[0];
        assert_eq!(load.points, Points::Closed { concurrency: vec![1, 10, 100] });
        assert_eq!(load.stop, Stop::Count(10_000));
        assert!(!load.connection.keepalive, "ab without -k");
    }

    #[test]
    fn seed_001_rates_are_the_slides_rows() {
        let suite = builtin("static-dynamic-rate-sweep").unwrap();
        let rates = |w: &str| -> Vec<f64> {
            let l = suite.loads.iter().find(|l| l.applies_to(w)).unwrap();
            assert_eq!(l.stop, Stop::Count(50_000));
            assert_eq!(l.connection.timeout, Duration::from_secs(5));
            match &l.points {
                Points::Sessions { rates, calls: 1 } => rates.clone(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(rates("20k.bin"), [100.0, 250.0, 400.0, 450.0, 500.0, 550.0, 580.0]);
        assert_eq!(rates("100k.bin"), [50.0, 75.0, 100.0, 125.0]);
        assert_eq!(rates("country.php"), [100.0, 200.0, 300.0, 350.0]);
        assert!(planned("static-dynamic-rate-sweep", false).skipped.is_empty());
    }

    #[test]
    fn seed_002_five_workloads_keepalive_on_and_off_five_times() {
        let suite = builtin("modphp-vs-fpm-keepalive").unwrap();
        assert_eq!(suite.repetitions, 5);
        let names: Vec<&str> = suite.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["hello.php", "hello.txt", "100k.bin", "1m.bin", "complex.php"]);
        let keepalive: BTreeSet<bool> =
            suite.loads.iter().map(|l| l.connection.keepalive).collect();
        assert_eq!(keepalive.len(), 2);
        assert!(planned("modphp-vs-fpm-keepalive", false).skipped.is_empty());
    }

    #[test]
    fn seed_003_autobench_sessions() {
        let suite = builtin("robots-autobench").unwrap();
        let load = &suite.loads[0];
        let Points::Sessions { rates, calls: 10 } = &load.points else { panic!() };
        let expected: Vec<f64> = (1..=20).map(|i| f64::from(i * 10)).collect();
        assert_eq!(rates, &expected);
        assert_eq!(load.stop, Stop::Count(5_000));
        assert_eq!(load.connection.timeout, Duration::from_secs(5));
        let knobs = suite.stacks.iter().map(|s| s.knobs().unwrap());
        assert!(knobs.into_iter().all(|k| k.gzip.is_on() && k.keepalive.is_on()));
    }

    #[test]
    fn seed_004_three_cache_layers_at_c25_n5000() {
        let suite = builtin("wordpress-cache-layers").unwrap();
        let layers: Vec<(&str, bool)> = suite
            .stacks
            .iter()
            .map(|s| s.lab_stack().unwrap())
            .map(|l| (l.stack.name, l.knobs.opcache_on()))
            .collect();
        assert_eq!(
            layers,
            [
                ("wordpress-nginx-fpm", false),
                ("wordpress-nginx-fpm", true),
                ("wordpress-varnish-nginx-fpm", true)
            ]
        );
        let p = planned("wordpress-cache-layers", false);
        assert!(p.cells.iter().all(|c| c.load.point == Point::Closed { concurrency: 25 }
            && c.load.stop == Stop::Count(5_000)));
    }

    #[test]
    fn wordpress_visits_compares_three_stacks_on_views_visits_and_the_page_alone() {
        let suite = builtin("wordpress-visits").unwrap();
        let stacks: Vec<&str> =
            suite.stacks.iter().map(|s| s.lab_stack().unwrap().stack.name).collect();
        assert_eq!(
            stacks,
            ["wordpress-nginx-fpm", "wordpress-nginx-fpm", "wordpress-varnish-nginx-fpm"]
        );
        let kinds: Vec<(&str, bool, Option<&str>)> = suite
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.view, w.visits.as_ref().map(|v| v[0].0.as_str())))
            .collect();
        assert_eq!(
            kinds,
            [
                ("wordpress", false, None),
                ("front page views", true, None),
                ("read a post", false, Some("wordpress:post")),
                ("search", false, Some("wordpress:search"))
            ]
        );
        // Views and the page alone at a rate (views arrive on a schedule); visits by a closed
        // population (visits/s is then the stack's answer, not the rate offered), on every
        // stack.
        let p = planned("wordpress-visits", true);
        assert!(p.skipped.is_empty(), "{:?}", p.skipped);
        let (visits, others): (Vec<_>, Vec<_>) =
            p.cells.iter().partition(|c| c.workload.spec.visits.is_some());
        assert!(others.iter().all(|c| matches!(c.load.point, Point::Open { .. })));
        assert_eq!(others.iter().filter(|c| c.workload.spec.view).count() * 2, others.len());
        assert!(visits.iter().all(|c| matches!(c.load.point, Point::Closed { .. })));
        assert_eq!(visits.len() * 2, others.len(), "2 visit workloads at 1 point, 2 at 2");
    }

    #[test]
    fn names_and_paths_are_told_apart() {
        assert!(matches!(load("no-such-suite"), Err(SuiteError::UnknownSuite { .. })));
        assert!(matches!(load("missing.toml"), Err(SuiteError::Read { .. })));
        assert!(matches!(load("./classic"), Err(SuiteError::Read { .. })));
        assert_eq!(load("classic").unwrap().origin, "built-in:classic");
    }
}

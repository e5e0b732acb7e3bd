//! The user's own configuration and files on a lab stack: a directory of snippets with
//! well-known names ([`Config`]), each merged into the generated configs at one documented
//! include point ([`Point`]), and a document root of the user's served beside the lab's
//! workload files ([`docroot`]).
//!
//! Both are checked before anything starts ([`problem`]: a file name that is no include point,
//! a point the stack has no tier for, a docroot file that would replace one of the lab's),
//! copied into the instance's run directory ([`write`]) so that what ran is what is captured
//! with the run ([`capture`]) whatever happens to the originals, and tested by each server's
//! own check of its configuration before it starts ([`check`]).

pub mod check;
pub mod docroot;

use std::fs;
use std::path::{Path, PathBuf};

use crate::capture::{capture_file, Captured};
use crate::catalog::{KnobProblem, Stack};
use crate::error::{Error, IoContext, Result};
pub use crate::includes::{Config, Point};
use crate::knobs::Knobs;
use crate::plan::Plan;
use crate::state::make_dir_all;
use crate::tier::Tier;

/// A docroot of the user's (`--docroot DIR`, a suite's `docroot`): the directory, absolute.
pub fn read_docroot(dir: &Path) -> Result<PathBuf, String> {
    let abs = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    if !abs.is_dir() {
        return Err(format!("{} is not a directory", abs.display()));
    }
    Ok(abs)
}

/// The whole check of a stack's knobs: the settings ([`Stack::setting_problem`]), then the
/// user's own files ([`problem`]). Here rather than in the catalog because it lists the
/// user's docroot, and the catalog is data that reads nothing.
impl Stack {
    /// The first knob that does not apply to this stack, if any, so that a typo'd experiment
    /// fails before it runs. The CLI names it as a flag, a suite file at the key's position.
    /// The user's docroot is listed to find a file that would replace one of the lab's.
    pub fn knob_problem(&self, knobs: &Knobs) -> Option<KnobProblem> {
        self.setting_problem(knobs).or_else(|| problem(self, knobs))
    }

    /// [`Stack::knob_problem`] as the CLI names it (`--db: nginx has no database tier`).
    pub fn check_knobs(&self, knobs: &Knobs) -> Result<()> {
        match self.knob_problem(knobs) {
            Some(p) => Err(Error::BadKnob(format!("--{}: {}", p.key.replace('_', "-"), p.reason))),
            None => Ok(()),
        }
    }
}

/// Why the user's configuration or docroot does not fit `stack` with these knobs, if it does
/// not: an include point none of its tiers has, a docroot on a stack that serves no HTTP, or a
/// docroot file that would replace one of the lab's (this reads the docroot's listing).
pub fn problem(stack: &Stack, knobs: &Knobs) -> Option<KnobProblem> {
    let problem = |key, reason: String| Some(KnobProblem { key, reason });
    let tiers = stack.tiers(knobs);
    if let Some(config) = &knobs.config {
        for point in &config.files {
            if !tiers.iter().any(|t| point.applies(*t)) {
                let names: Vec<&str> = tiers.iter().map(Tier::name).collect();
                return problem(
                    "config",
                    format!(
                        "{point} needs {}, and {} has none (its tiers: {})",
                        point.needs(),
                        stack.name,
                        names.join(", ")
                    ),
                );
            }
        }
    }
    if let Some(root) = &knobs.docroot {
        if stack.http_tiers.is_empty() {
            return problem("docroot", format!("{} serves no HTTP", stack.name));
        }
        if let Some(reason) = docroot::clash(root, stack, knobs) {
            return problem("docroot", reason);
        }
    }
    None
}

/// Where the user's file for `point` is in the run directory, when there is one.
pub fn path(plan: &Plan, point: Point) -> Option<PathBuf> {
    let config = plan.knobs.config.as_ref()?;
    config.has(point).then(|| copy_of(&plan.run, point))
}

/// Where the run directory keeps its copy of the user's file for `point`.
fn copy_of(run: &Path, point: Point) -> PathBuf {
    own_dir(run).join(point.file_name())
}

/// The lines that include the user's file for `point` into a generated config, or nothing
/// when there is none: `render` gets the path of the copy the server reads and of the
/// original (for a comment that tells a reader of the config where it came from).
pub fn include(plan: &Plan, point: Point, render: impl Fn(&str, &str) -> String) -> String {
    match (path(plan, point), &plan.knobs.config) {
        (Some(copy), Some(config)) => render(
            &copy.display().to_string(),
            &config.dir.join(point.file_name()).display().to_string(),
        ),
        _ => String::new(),
    }
}

/// The run directory's copy of the user's files.
fn own_dir(run: &Path) -> PathBuf {
    run.join("own")
}

/// Copies the user's files into the run directory: the snippets into `own/`, the docroot
/// into the document root beside the lab's files (which must be written already).
pub(crate) fn write(plan: &Plan) -> Result<()> {
    if let Some(config) = &plan.knobs.config {
        make_dir_all(&own_dir(&plan.run))?;
        for point in &config.files {
            let from = config.dir.join(point.file_name());
            let bytes = fs::read(&from).context(|| format!("reading {}", from.display()))?;
            crate::workloads::write(&copy_of(&plan.run, *point), &bytes)?;
        }
    }
    if let Some(root) = &plan.knobs.docroot {
        make_dir_all(&own_dir(&plan.run))?;
        docroot::copy(root, &plan.docroot(), &manifest(&plan.run))?;
    }
    Ok(())
}

/// The list of the docroot's files as copied (see [`docroot::copy`]).
fn manifest(run: &Path) -> PathBuf {
    own_dir(run).join("docroot.manifest")
}

/// The user's files as the instance runs them: each snippet, and the docroot's manifest.
pub fn capture(plan: &Plan) -> Vec<Captured> {
    let mut out = Vec::new();
    if let Some(config) = &plan.knobs.config {
        for point in &config.files {
            let tier = plan.tiers().into_iter().find(|t| point.applies(*t));
            let what = format!("{point} (yours, from {})", config.dir.display());
            let path = copy_of(&plan.run, *point);
            out.push(capture_file(tier.map_or("own", |t| t.name()), &what, &path));
        }
    }
    if let Some(root) = &plan.knobs.docroot {
        let what = format!("docroot (yours, from {})", root.display());
        out.push(capture_file("own", &what, &manifest(&plan.run)));
    }
    out
}

/// The workers Apache may run, when the user's own Apache files set it: the last
/// `MaxRequestWorkers` (or its old name `MaxClients`) in them, as Apache reads the config
/// top to bottom and keeps the last value. `None`: the lab's own setting holds.
pub fn apache_max_workers(plan: &Plan) -> Option<u32> {
    let mut last = None;
    for point in [Point::Apache, Point::ApacheVhost] {
        let Some(path) = path(plan, point) else { continue };
        let Ok(text) = fs::read_to_string(&path) else { continue };
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let directive = words.next().unwrap_or_default();
            if ["maxrequestworkers", "maxclients"]
                .contains(&directive.to_ascii_lowercase().as_str())
            {
                last = words.next().and_then(|n| n.parse().ok()).or(last);
            }
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::stack;

    fn dir_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            fs::write(dir.path().join(f), "# mine\n").unwrap();
        }
        dir
    }

    #[test]
    fn a_directory_holds_the_include_points_by_name() {
        let dir = dir_with(&["php.ini", "nginx-server.conf", ".nginx-server.conf.swp"]);
        let config = Config::read(dir.path()).unwrap();
        assert_eq!(config.files, vec![Point::NginxServer, Point::PhpIni]);
        assert!(config.dir.is_absolute());
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(json["files"], serde_json::json!(["nginx-server.conf", "php.ini"]));
    }

    #[test]
    fn an_unknown_name_or_an_empty_directory_is_refused_naming_it() {
        let dir = dir_with(&["nginx-http.conf", "nginx.conf"]);
        let err = Config::read(dir.path()).unwrap_err();
        assert!(err.contains("\"nginx.conf\" is not an include point"), "{err}");
        assert!(err.contains("nginx-http.conf, nginx-server.conf, apache.conf"), "{err}");
        let empty = dir_with(&[]);
        assert!(Config::read(empty.path()).unwrap_err().contains("holds none of"));
        assert!(Config::read(Path::new("/no/such/dir")).is_err());
        let sub = dir_with(&[]);
        fs::create_dir(sub.path().join("php.ini")).unwrap();
        assert!(Config::read(sub.path()).unwrap_err().contains("php.ini is not a file"));
    }

    #[test]
    fn a_point_without_its_tier_is_refused() {
        let dir = dir_with(&["apache.conf"]);
        let knobs = Knobs { config: Some(Config::read(dir.path()).unwrap()), ..Knobs::default() };
        let p = problem(stack("nginx-fpm").unwrap(), &knobs).unwrap();
        assert_eq!(p.key, "config");
        assert_eq!(
            p.reason,
            "apache.conf needs an Apache tier, and nginx-fpm has none (its tiers: nginx, php-fpm)"
        );
        assert_eq!(problem(stack("nginx-proxy-apache").unwrap(), &knobs), None);
        let ini = dir_with(&["php.ini", "varnish.vcl"]);
        let knobs = Knobs { config: Some(Config::read(ini.path()).unwrap()), ..Knobs::default() };
        assert_eq!(problem(stack("varnish-nginx-fpm").unwrap(), &knobs), None);
        let p = problem(stack("apache-prefork-modphp").unwrap(), &knobs).unwrap();
        assert!(p.reason.starts_with("varnish.vcl needs a Varnish tier"), "{}", p.reason);
        let p = problem(stack("nginx").unwrap(), &knobs).unwrap();
        assert!(p.reason.starts_with("php.ini needs a PHP tier"), "{}", p.reason);
    }

    #[test]
    fn the_last_max_request_workers_of_the_users_apache_files_counts() {
        let run = tempfile::tempdir().unwrap();
        fs::create_dir(run.path().join("own")).unwrap();
        fs::write(run.path().join("own/apache.conf"), "MaxRequestWorkers 40\n").unwrap();
        fs::write(
            run.path().join("own/apache-vhost.conf"),
            "# MaxRequestWorkers 1\n  maxrequestworkers   30\nServerLimit 2\n",
        )
        .unwrap();
        let config =
            Config { dir: "/home/you/conf".into(), files: vec![Point::Apache, Point::ApacheVhost] };
        let mut plan = crate::servers::snapshots::plan(
            stack("apache-event-fpm").unwrap(),
            Knobs::default(),
            false,
        );
        plan.run = run.path().to_path_buf();
        assert_eq!(apache_max_workers(&plan), None, "no config: the lab's setting");
        plan.knobs.config = Some(config);
        assert_eq!(apache_max_workers(&plan), Some(30));
    }
}

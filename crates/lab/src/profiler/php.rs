//! PHP's own stacks over a cell (the WordPress functions, the files it `require`s), sampled
//! by php-excimer from inside every PHP process of a stack, beside perf's native stacks.
//!
//! A stack brought up with the `excimer` knob reads [`PREPEND`] before every request
//! (`auto_prepend_file` in the lab's php.ini). While a profiled cell runs, a switch file in
//! the instance's profile directory exists; the prepend then starts a profiler for the
//! request, and a shutdown function appends its folded stacks to one file there. The lab
//! reads that file at the cell's end: PHP objects do not outlive a request, so the stacks
//! cannot be kept per process and must leave each request as it ends.
//!
//! What it costs: between profiled cells one stat(2) per request; while profiling, a POSIX
//! timer per request, a signal and a walk of PHP's stack per sample, and an appending write
//! for each request that had a sample. php-excimer 1.0 starts a request's first period at
//! its start, so the first [`PERIOD_US`] of each request's CPU is never sampled, and a page
//! that needs less CPU than that (phpinfo) shows few PHP stacks: perf's native stacks still
//! count it whole.

use std::path::{Path, PathBuf};

use super::TierProfile;

/// Between two samples of a PHP request's CPU time, µs. Ten times perf's rate: a request of
/// WordPress takes tens of milliseconds, and each gives its own handful of samples.
pub const PERIOD_US: u64 = 1_000;

/// The tier PHP's own stacks are stored as, beside the PHP processes' native ones.
pub const TIER: &str = "php (excimer)";

/// The script PHP runs before each request, in an instance's profile directory.
pub const PREPEND: &str = "excimer.php";

/// The stacks' root frame: PHP's folded stacks begin at the script, and a profile's first
/// frame names the process (see [`super::share`]).
const ROOT: &str = "php";

/// The directory, in an instance's run directory, of [`PREPEND`] and of what it writes.
pub const DIR: &str = "profile";

/// The directory the PHP tiers of an instance write their stacks to.
pub fn dir(run: &Path) -> PathBuf {
    run.join(DIR)
}

fn switch(dir: &Path) -> PathBuf {
    dir.join("on")
}

fn stacks(dir: &Path) -> PathBuf {
    dir.join("stacks.folded")
}

/// The prepend script's variables for the config template.
pub fn template_vars(run: &Path) -> Vec<(&'static str, String)> {
    let dir = dir(run);
    vec![
        ("switch", switch(&dir).display().to_string()),
        ("stacks", stacks(&dir).display().to_string()),
        ("period", format!("{:.6}", PERIOD_US as f64 / 1e6)),
    ]
}

/// Lets the PHP workers, which run as the pool's user when the lab is root, create and
/// append to files in `dir`, and no one else's files be replaced there (sticky, as /tmp).
pub fn open_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1733))
}

/// PHP's stacks being recorded over one cell.
pub struct PhpStacks {
    dir: PathBuf,
}

impl PhpStacks {
    /// Turns the stack's prepend on: the requests that start from now are profiled. Stacks
    /// that a request of an earlier cell appended after that cell's end are dropped first.
    pub fn start(dir: &Path) -> PhpStacks {
        let _ = std::fs::remove_file(stacks(dir));
        let _ = std::fs::write(switch(dir), b"");
        PhpStacks { dir: dir.to_path_buf() }
    }

    /// Turns the prepend off and gives the cell's stacks. The file is moved away before it
    /// is read, so that a request still running appends to a new one, which the next start
    /// drops. `None`: no request had a sample.
    pub fn finish(self) -> Option<TierProfile> {
        let _ = std::fs::remove_file(switch(&self.dir));
        let taken = self.dir.join("stacks.cell");
        std::fs::rename(stacks(&self.dir), &taken).ok()?;
        let text = std::fs::read_to_string(&taken).unwrap_or_default();
        let _ = std::fs::remove_file(&taken);
        let folded = merge(&text);
        let samples = super::samples_in(&folded);
        (samples > 0).then(|| TierProfile {
            tier: TIER.to_string(),
            folded,
            samples,
            // Excimer counts what it took; a sample it could not take is not told.
            lost: 0,
            interval_us: PERIOD_US,
        })
    }
}

/// Folded stacks appended by many requests, as one profile: each distinct stack once with
/// its samples summed, under the root frame [`ROOT`], in the order of the stacks' text.
pub fn merge(appended: &str) -> String {
    let mut counts: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    for line in appended.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else { continue };
        let Ok(n) = n.trim().parse::<u64>() else { continue };
        // php-excimer 1.0 writes some stacks with an empty frame at the root.
        let frames: Vec<&str> = stack.split(';').filter(|f| !f.is_empty()).collect();
        if !frames.is_empty() {
            *counts.entry(frames.join(";")).or_default() += n;
        }
    }
    counts.iter().map(|(stack, n)| format!("{ROOT};{stack} {n}\n")).collect()
}

/// Whether a frame of perf's stacks of a PHP process is PHP's compiler: the lexer and parser
/// (`lex_scan`, `zendparse`), the AST it builds, and the compiler's entry points, as PHP's
/// binaries export them (Debian's have no debug symbols: the compiler's static functions come
/// out unnamed, so this counts what can be named, the same way with and without OPcache).
/// `zend_ast_evaluate` runs constant expressions at run time and is not the compiler.
pub fn compiles(frame: &str) -> bool {
    const EXACT: &[&str] = &[
        "compile_file",
        "compile_filename",
        "compile_string",
        "zendparse",
        "lex_scan",
        "pass_two",
        "init_op_array",
    ];
    EXACT.contains(&frame)
        || (["zend_compile", "zend_lex", "zend_ast_"].iter().any(|p| frame.starts_with(p))
            && !frame.starts_with("zend_ast_evaluate"))
}

/// Whether a frame of php-excimer's stacks is a script's own top-level code (excimer names
/// it by the file's path) rather than a function. PHP compiles a file that is `require`d
/// before its first line runs, and excimer takes the sample that fell in the compiler at the
/// next point the interpreter checks, the included file's start: so without OPcache the time
/// spent compiling WordPress's files is counted in these frames.
pub fn in_file_code(frame: &str) -> bool {
    frame.ends_with(".php") && frame.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_stacks_are_summed_under_one_root() {
        let appended = "/www/index.php;/www/wp-settings.php 3\n\
                        /www/index.php;wp;WP::main 2\n\
                        ;/www/index.php;/www/wp-settings.php 4\n\
                        \n\
                        garbage\n";
        let folded = merge(appended);
        assert_eq!(
            folded,
            "php;/www/index.php;/www/wp-settings.php 7\nphp;/www/index.php;wp;WP::main 2\n"
        );
        let settings = super::super::share(&folded, |f| f == "/www/wp-settings.php");
        assert_eq!((settings.samples, settings.self_samples), (9, 7));
    }

    #[test]
    fn the_compiler_and_file_code_are_told_from_the_rest() {
        for yes in ["zendparse", "lex_scan", "compile_file", "zend_ast_create_list_1"] {
            assert!(compiles(yes), "{yes}");
        }
        for no in ["execute_ex", "zend_ast_evaluate_ex", "[php-fpm8.2]", "_emalloc"] {
            assert!(!compiles(no), "{no}");
        }
        assert!(in_file_code("/usr/share/wordpress/wp-includes/rewrite.php"));
        assert!(!in_file_code("wpdb::_do_query"));
        assert!(!in_file_code("{closure:/usr/share/wordpress/wp-includes/a.php(3)}"));
    }

    /// The switch exists only between start and finish; what a request appends after the
    /// finish belongs to no cell and is dropped at the next start.
    #[test]
    fn the_switch_spans_the_cell_and_late_stacks_are_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let append = |s: &str| {
            use std::io::Write;
            let mut f =
                std::fs::OpenOptions::new().create(true).append(true).open(stacks(dir)).unwrap();
            f.write_all(s.as_bytes()).unwrap();
        };
        append("late;from_before 9\n");
        let php = PhpStacks::start(dir);
        assert!(switch(dir).exists());
        append("/a.php;f 2\n");
        append("/a.php;f 1\n");
        let tier = php.finish().expect("stacks");
        assert!(!switch(dir).exists());
        assert_eq!((tier.tier.as_str(), tier.samples, tier.interval_us), (TIER, 3, PERIOD_US));
        assert_eq!(tier.folded, "php;/a.php;f 3\n");
        append("/a.php;late 5\n");
        let none = PhpStacks::start(dir);
        assert_eq!(none.finish(), None, "no request of this cell had a sample");
    }
}

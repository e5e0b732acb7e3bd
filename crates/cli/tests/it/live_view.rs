//! The live view on a real terminal: `bench` run in a tmux pane (a pseudo-terminal, as a
//! person's) against a local server shows the current rate and p99 while it runs; `q` stops
//! it (and so does SIGTERM), the report of what was measured is printed as Ctrl-C's would be,
//! and the terminal is given back (the main screen, cooked mode with echo).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::skip::{find_program, missing};
use crate::support::{wait_until, Behaviour, TestServer};

/// How long the view may take to show a second's figures: loadlab starts in milliseconds and
/// a second closes after one; the slack is for a loaded machine.
const SHOWN_LIMIT: Duration = Duration::from_secs(60);
/// From `q` to the report.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// A tmux server of the test's own (its socket in the test's directory), killed at the end.
struct Tmux {
    program: PathBuf,
    socket: PathBuf,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.program)
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's screen as text.
    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "view"])
    }

    /// Whether the pane shows the alternate screen.
    fn alternate(&self) -> bool {
        self.run(&["display-message", "-p", "-t", "view", "#{alternate_on}"]).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// A bench running in a tmux pane against a server of the test's own; dropped in this order.
struct Pane {
    tmux: Tmux,
    _server: TestServer,
    _dir: tempfile::TempDir,
}

impl Pane {
    /// The pane with its view showing a closed second, and that screen; `None` without tmux
    /// (reported as a skip).
    fn started() -> Option<(Pane, String)> {
        let Some(program) = tmux_program() else {
            missing("tmux", "tmux").report();
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let server = TestServer::start(Behaviour::ok("hello"));
        let tmux = Tmux { program, socket: dir.path().join("tmux.sock") };
        let seen = started(&tmux, dir.path(), &server);
        Some((Pane { tmux, _server: server, _dir: dir }, seen))
    }
}

/// The number after `before` on `screen` (thousands separators dropped), if shown.
fn figure(screen: &str, before: &str) -> Option<f64> {
    let rest = &screen[screen.find(before)? + before.len()..];
    let number: String =
        rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',').collect();
    number.replace(',', "").parse().ok()
}

fn tmux_program() -> Option<PathBuf> {
    find_program("tmux", &["/usr/bin/tmux"])
}

/// Starts the pane's bench against `server` and waits for the view's first closed second: its
/// screen then.
fn started(tmux: &Tmux, dir: &Path, server: &TestServer) -> String {
    let script = pane_script(dir, &server.url("/"));
    tmux.run(&["new-session", "-d", "-s", "view", "-x", "120", "-y", "40", &script]);
    let mut seen = String::new();
    let shown = wait_until(SHOWN_LIMIT, || {
        seen = tmux.screen();
        figure(&seen, "now ").is_some_and(|r| r > 0.0) && figure(&seen, "p99 ").is_some()
    });
    assert!(shown, "the view showed no rate and p99 within {SHOWN_LIMIT:?}:\n{seen}");
    assert!(tmux.alternate(), "the view is not on the alternate screen");
    seen
}

/// Waits for the pane's script to end, then checks what a stopped run leaves: the report of
/// what was measured, as Ctrl-C leaves it, exit 0, and the terminal given back (the main
/// screen, line editing and echo on).
fn ended_with_the_report_and_the_terminal_back(tmux: &Tmux) {
    let mut seen = String::new();
    let ended = wait_until(STOP_LIMIT, || {
        seen = tmux.screen();
        seen.contains("terminal:")
    });
    assert!(ended, "the run did not end within {STOP_LIMIT:?}:\n{seen}");
    for said in ["Throughput", "(interrupted)", "exit=0"] {
        assert!(seen.contains(said), "{said:?} not printed after the stop:\n{seen}");
    }
    let completed = figure(&seen, "Requests     ").expect("a count of requests");
    assert!(completed > 0.0, "{seen}");
    assert!(!tmux.alternate(), "still on the alternate screen:\n{seen}");
    let modes = seen.lines().find(|l| l.starts_with("terminal:")).unwrap_or_default();
    assert_eq!(modes.trim(), "terminal: icanon echo", "{seen}");
}

#[test]
fn the_view_shows_the_rate_and_p99_and_q_stops_with_the_figures_and_the_terminal_back() {
    let Some((pane, seen)) = Pane::started() else { return };
    let tmux = &pane.tmux;
    assert!(seen.contains("req/s"), "{seen}");
    tmux.run(&["send-keys", "-t", "view", "q"]);
    ended_with_the_report_and_the_terminal_back(tmux);
}

#[test]
fn sigterm_during_the_view_stops_the_run_and_gives_the_terminal_back() {
    let Some((pane, _)) = Pane::started() else { return };
    let tmux = &pane.tmux;
    let pid = loadlab_in(tmux);
    // SAFETY: kill(2) with a pid read just now from the pane's shell, which has not reaped it.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    ended_with_the_report_and_the_terminal_back(tmux);
}

/// The pane's loadlab: its shell runs it in the foreground, its one child.
fn loadlab_in(tmux: &Tmux) -> i32 {
    let shell = tmux.run(&["display-message", "-p", "-t", "view", "#{pane_pid}"]);
    let children = format!("/proc/{}/task/{}/children", shell.trim(), shell.trim());
    let text = std::fs::read_to_string(&children).expect("the pane shell's children");
    text.split_whitespace().next().expect("loadlab running").parse().unwrap()
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()).is_none_or(|s| s == "Z")
}

#[test]
fn a_terminal_that_hangs_up_stops_the_run_and_the_command_ends() {
    let Some((pane, _)) = Pane::started() else { return };
    let tmux = &pane.tmux;
    let pid = loadlab_in(tmux);
    // The terminal goes away under the view: its reads are end-of-file from now on.
    tmux.run(&["kill-server"]);
    let gone = wait_until(STOP_LIMIT, || ended(pid));
    if !gone {
        // SAFETY: kill(2) of the test's own child's child, so that it does not outlive the test.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(gone, "loadlab {pid} still running {STOP_LIMIT:?} after its terminal hung up");
}

/// What the pane runs: the bench, far longer than the test, then its exit code and the
/// terminal's modes, and then it waits to be read.
fn pane_script(dir: &Path, url: &str) -> String {
    let script = dir.join("pane.sh");
    let body = format!(
        "'{}' bench -c 2 -d 600s '{url}'\n\
         echo exit=$?\n\
         echo terminal: $(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo)\n\
         exec sleep 600\n",
        env!("CARGO_BIN_EXE_loadlab")
    );
    std::fs::write(&script, body).expect("write the pane's script");
    format!("sh '{}'", script.display())
}

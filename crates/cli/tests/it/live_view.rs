//! The live view on a real terminal (a tmux pane, [`crate::support::tmux`]): `bench` against a
//! local server shows the current rate and p99 while it runs; `q` stops it (and so does
//! SIGTERM), the report of what was measured is printed as Ctrl-C's would be, and the
//! terminal is given back (the main screen, cooked mode with echo). A `sweep` shows its steps
//! against the offered rate and its knee once a step broke, and `q` leaves its table printed.
//! A terminal that cannot be put in raw mode gets no view: today's lines instead. What else
//! writes to the process's stderr while the view is up stays off its screen (in its panel)
//! and is printed once it has closed.

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::Duration;

use crate::support::tmux::{figure, Tmux};
use crate::support::{sys, wait_until, Behaviour, TestServer};

/// How long the view may take to show a second's figures: loadlab starts in milliseconds and
/// a second closes after one; the slack is for a loaded machine.
const SHOWN_LIMIT: Duration = Duration::from_secs(60);
/// From `q` to the report.
const STOP_LIMIT: Duration = Duration::from_secs(30);

/// A command running in a tmux pane against a server of the test's own; dropped in this order.
struct Pane {
    tmux: Tmux,
    _server: TestServer,
    _dir: tempfile::TempDir,
}

impl Pane {
    /// `loadlab ARGS URL` in a pane against a server behaving as `behaviour`; `None` without
    /// tmux (reported as a skip).
    fn start(behaviour: Behaviour, args: &str) -> Option<Pane> {
        let dir = tempfile::tempdir().expect("temp dir");
        let server = TestServer::start(behaviour);
        let command = format!("'{}' {args} '{}'", env!("CARGO_BIN_EXE_loadlab"), server.url("/"));
        let tmux = Tmux::start(dir.path(), &command, 50)?;
        Some(Pane { tmux, _server: server, _dir: dir })
    }

    /// A bench far longer than the test, its view showing a closed second, and that screen.
    fn bench() -> Option<(Pane, String)> {
        let pane = Pane::start(Behaviour::ok("hello"), "bench -c 2 -d 600s")?;
        let seen = pane.tmux.shows("rate and p99", SHOWN_LIMIT, |s| {
            figure(s, "now ").is_some_and(|r| r > 0.0) && figure(s, "p99 ").is_some()
        });
        assert!(pane.tmux.alternate(), "the view is not on the alternate screen");
        Some((pane, seen))
    }
}

/// What a stopped bench leaves: the report of what was measured, as Ctrl-C leaves it, exit 0,
/// and the terminal given back.
fn ended_with_the_report_and_the_terminal_back(tmux: &Tmux) {
    let seen = tmux.ended(STOP_LIMIT, 0);
    for said in ["Throughput", "(interrupted)"] {
        assert!(seen.contains(said), "{said:?} not printed after the stop:\n{seen}");
    }
    let completed = figure(&seen, "Requests     ").expect("a count of requests");
    assert!(completed > 0.0, "{seen}");
}

#[test]
fn the_view_shows_the_rate_and_p99_and_q_stops_with_the_figures_and_the_terminal_back() {
    let Some((pane, seen)) = Pane::bench() else { return };
    let tmux = &pane.tmux;
    assert!(seen.contains("req/s"), "{seen}");
    tmux.run(&["send-keys", "-t", "view", "q"]);
    ended_with_the_report_and_the_terminal_back(tmux);
}

#[test]
fn sigterm_during_the_view_stops_the_run_and_gives_the_terminal_back() {
    let Some((pane, _)) = Pane::bench() else { return };
    let tmux = &pane.tmux;
    let pid = loadlab_in(tmux);
    // SAFETY: kill(2) with a pid read just now from the pane's shell, which has not reaped it.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    ended_with_the_report_and_the_terminal_back(tmux);
}

#[test]
fn what_is_written_to_its_stderr_mid_run_stays_off_the_screen_and_is_printed_after_the_view() {
    let Some((pane, _)) = Pane::bench() else { return };
    let tmux = &pane.tmux;
    // Another writer of loadlab's descriptor 2, as a child that inherited it writes (an ssh
    // session, a server): opened through /proc, it is whatever loadlab's stderr is now.
    let pid = loadlab_in(tmux);
    let mut stderr = std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/{pid}/fd/2"))
        .expect("loadlab's stderr");
    stderr.write_all(b"a note from elsewhere\n").unwrap();
    drop(stderr);
    // The screen is still the view's: its title on the first row, the note inside the panel
    // of held lines (between its borders), not where the cursor was.
    let seen = tmux.shows("the note in its panel", SHOWN_LIMIT, |s| {
        s.lines().any(|l| l.starts_with("│a note from elsewhere ") && l.ends_with('│'))
    });
    assert!(seen.starts_with("loadlab bench "), "{seen}");
    assert_eq!(seen.matches("a note from elsewhere").count(), 1, "{seen}");
    tmux.run(&["send-keys", "-t", "view", "q"]);
    ended_with_the_report_and_the_terminal_back(tmux);
    // Printed on the main screen after the view, before the report, as without the view.
    let all = tmux.run(&["capture-pane", "-p", "-S", "-", "-t", "view"]);
    let note = all.find("a note from elsewhere").unwrap_or_else(|| panic!("no note:\n{all}"));
    assert!(note < all.find("Throughput").expect("the report"), "{all}");
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
    let Some((pane, _)) = Pane::bench() else { return };
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

#[test]
fn a_sweep_shows_its_steps_and_its_knee_once_found_and_q_leaves_its_table() {
    // A server that serves 100 responses a second: 40 and 80 req/s pass, 120 breaks, and the
    // sweep would go on for minutes after.
    let capacity = Behaviour::Capacity { per_second: 100.0, body: b"served".to_vec() };
    let args = "sweep --rates 40..8000:40 --step-duration 1s --max-connections 20";
    let Some(pane) = Pane::start(capacity, args) else { return };
    let tmux = &pane.tmux;
    let seen = tmux.shows("knee", SHOWN_LIMIT, |s| s.contains("knee so far"));
    assert!(seen.contains("steps: achieved against offered"), "{seen}");
    assert!(seen.contains("knee of http://127.0.0.1:"), "{seen}");
    assert!(seen.contains("req/s offered") && seen.contains("broke"), "{seen}");
    assert!(tmux.alternate(), "the view is not on the alternate screen");
    tmux.run(&["send-keys", "-t", "view", "q"]);
    // The table of the steps that ran, and the knee the sweep found, as without the view.
    let seen = tmux.ended(STOP_LIMIT, 0);
    for said in ["offered", "knee of http://127.0.0.1:", "broke"] {
        assert!(seen.contains(said), "{said:?} not printed after the stop:\n{seen}");
    }
}

#[test]
fn a_terminal_that_refuses_raw_mode_gets_no_view_and_the_lines_of_today() {
    // stdout and stderr on a terminal, but no terminal to put in raw mode: stdin is not one,
    // and in a session of its own loadlab has no /dev/tty either.
    let server = TestServer::start(Behaviour::ok("hello"));
    let (mut controller, terminal) = sys::pty().expect("a pseudo-terminal");
    let mut cmd = sys::without_terminal(crate::support::loadlab());
    cmd.args(["bench", "-c", "2", "-n", "2000", &server.url("/")]);
    cmd.stdin(Stdio::null()).stdout(terminal.try_clone().unwrap()).stderr(terminal);
    let mut child = cmd.spawn().expect("start loadlab");
    // The terminal's ends held by the command are closed with it: only loadlab's remain.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let (mut out, mut buf) = (Vec::new(), [0u8; 4096]);
        // Linux answers EIO once the last holder of the terminal end has closed it.
        while let Ok(n @ 1..) = controller.read(&mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&out).into_owned()
    });
    let exited = wait_until(STOP_LIMIT, || child.try_wait().unwrap().is_some());
    if !exited {
        let _ = child.kill();
    }
    assert!(exited, "loadlab did not end within {STOP_LIMIT:?}");
    assert!(child.wait().unwrap().success());
    let seen = reader.join().unwrap();
    assert!(seen.contains("loadlab: note: no live view ("), "{seen}");
    for said in ["Throughput", "Requests     2,000 completed, 0 failed", "completed 2,000"] {
        assert!(seen.contains(said), "{said:?} not printed:\n{seen}");
    }
    // The progress line as on any terminal, the report after it; never the alternate screen,
    // nor a hidden cursor.
    assert!(!seen.contains("\x1b[?1049h") && !seen.contains("\x1b[?25l"), "{seen:?}");
}

//! A command on a real terminal: a tmux server of the test's own (its socket in the test's
//! directory) running one command in a pane (a pseudo-terminal, as a person's), whose screen
//! the test reads (capture-pane) and types into (send-keys). After the command the pane's
//! script prints its exit code and the terminal's modes, so that a test can see the terminal
//! given back (the main screen, line editing and echo on).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::skip::{find_program, missing};
use super::wait_until;

/// The tmux server, killed when dropped.
pub struct Tmux {
    program: PathBuf,
    socket: PathBuf,
}

impl Tmux {
    /// `command` (a shell line) in a pane of `rows` rows, the pane's script and socket in
    /// `dir`; `None` without tmux (reported as a skip, a failure in CI).
    pub fn start(dir: &Path, command: &str, rows: u16) -> Option<Tmux> {
        let Some(program) = find_program("tmux", &["/usr/bin/tmux"]) else {
            missing("tmux", "tmux").report();
            return None;
        };
        let tmux = Tmux { program, socket: dir.join("tmux.sock") };
        let script = dir.join("pane.sh");
        let body = format!(
            "{command}\n\
             echo exit=$?\n\
             echo terminal: $(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo)\n\
             exec sleep 600\n"
        );
        std::fs::write(&script, body).expect("write the pane's script");
        let script = format!("sh '{}'", script.display());
        tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "view",
            "-x",
            "120",
            "-y",
            &rows.to_string(),
            &script,
        ]);
        Some(tmux)
    }

    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.program)
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's screen as text.
    pub fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "view"])
    }

    /// Whether the pane shows the alternate screen.
    pub fn alternate(&self) -> bool {
        self.run(&["display-message", "-p", "-t", "view", "#{alternate_on}"]).trim() == "1"
    }

    /// Waits up to `limit` for the screen to satisfy `shown`: the screen then, or a panic
    /// naming `what` with the last screen.
    pub fn shows(&self, what: &str, limit: Duration, shown: impl Fn(&str) -> bool) -> String {
        let mut seen = String::new();
        let ok = wait_until(limit, || {
            seen = self.screen();
            shown(&seen)
        });
        assert!(ok, "the view showed no {what} within {limit:?}:\n{seen}");
        seen
    }

    /// Waits up to `limit` for the command to end: the screen then, with the exit code
    /// `exit` and the terminal given back (the main screen, line editing and echo on).
    pub fn ended(&self, limit: Duration, exit: i32) -> String {
        let seen = self.shows("end of the command", limit, |s| s.contains("terminal:"));
        assert!(seen.contains(&format!("exit={exit}")), "not exit={exit}:\n{seen}");
        assert!(!self.alternate(), "still on the alternate screen:\n{seen}");
        let modes = seen.lines().find(|l| l.starts_with("terminal:")).unwrap_or_default();
        assert_eq!(modes.trim(), "terminal: icanon echo", "{seen}");
        seen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// The number after `before` on `screen` (thousands separators dropped), if shown.
pub fn figure(screen: &str, before: &str) -> Option<f64> {
    let rest = &screen[screen.find(before)? + before.len()..];
    let number: String =
        rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',').collect();
    number.replace(',', "").parse().ok()
}

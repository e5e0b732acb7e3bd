//! `loadlab run`'s live view on a real terminal (a tmux pane, [`crate::support::tmux`]) with a
//! real lab stack (nginx): the screen shows the cell being measured (n of N, its stack,
//! workload and load), the time left by the plan, the stack's tiers, and the verdict rows as
//! the cells end; `q` stops the run, which prints what it stored and its verdict, and the
//! terminal is given back.

use std::time::Duration;

use super::{nginx_hello, require, Scratch};
use crate::support::tmux::Tmux;

/// From the start to the second cell with the first one's verdict: the stack comes up in a
/// second or two, each cell takes 3 s; the slack is for a loaded machine.
const SHOWN_LIMIT: Duration = Duration::from_secs(90);

#[test]
fn the_run_view_shows_the_cell_the_tiers_and_the_verdict_so_far_and_q_stops_it() {
    let scratch = Scratch::new();
    if let Err(skip) = require(&scratch, &["nginx"]) {
        skip.report();
        return;
    }
    // Six cells, three loads by two repetitions, each long enough to be seen.
    let suite = scratch.write("view.toml", &nginx_hello("[1, 2, 4]", "3s", 2));
    let command = format!(
        "LOADLAB_STATE_DIR='{}' '{}' run --suite '{suite}' --out '{}'",
        scratch.state().display(),
        env!("CARGO_BIN_EXE_loadlab"),
        scratch.out().display()
    );
    let Some(tmux) = Tmux::start(scratch.dir.path(), &command, 60) else { return };
    // A screen drawn whole (a capture may catch one being redrawn): the cell in progress, the
    // time left, its stack's tier, the first cell's row in the verdict and its progress line.
    let whole = [
        "left by the plan",
        "/6] nginx",
        "tier ",
        "verdict so far",
        "hello.txt · closed, 1 conn",
        "[  1/6] nginx",
    ];
    tmux.shows("verdict so far", SHOWN_LIMIT, |s| whole.iter().all(|w| s.contains(w)));
    assert!(tmux.alternate(), "the view is not on the alternate screen");
    tmux.run(&["send-keys", "-t", "view", "q"]);
    // Interrupted: what was stored, and the verdict over it, printed as without the view.
    let seen = tmux.ended(Duration::from_secs(60), 130);
    for said in ["interrupted:", "cells finished and stored", "hello.txt · "] {
        assert!(seen.contains(said), "{said:?} not printed after the stop:\n{seen}");
    }
}

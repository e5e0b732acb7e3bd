//! The report opened in headless Chromium: no console error, no request for anything, and
//! every chart present in the DOM with drawn elements. A screenshot is taken too; set
//! `LOADLAB_REPORT_SCREENSHOT=docs/report.png` (relative to the workspace) to keep it.

use std::path::Path;
use std::time::Duration;

use tempfile::TempDir;

use crate::support::{chromium, report_from_store, report_of, synthetic};

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn the_report_opens_in_chromium_without_errors_and_draws_every_chart() {
    let Some(browser) = chromium::find_or_skip() else { return };
    let dir = TempDir::new().unwrap();
    let html = report_from_store(&dir.path().join("loadlab.db"));
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    let charts_written = html.matches("data-chart").count();
    assert!(charts_written >= 8, "only {charts_written} charts in the report");

    let dom = chromium::run(
        &browser,
        &dir.path().join("profile-dom"),
        &page,
        &["--dump-dom".into()],
        LIMIT,
    );
    assert!(dom.success, "chromium failed:\n{}", dom.stderr);
    assert_clean_console(&dom.stderr);
    let figures: Vec<&str> =
        dom.stdout.split("<figure class=\"chart\" data-chart").skip(1).collect();
    assert_eq!(figures.len(), charts_written, "every chart reaches the DOM");
    for (i, f) in figures.iter().enumerate() {
        let f = &f[..f.find("</figure>").expect("a closed figure")];
        assert!(f.contains("<svg "), "chart {i} has no svg");
        let drawn = f.matches("<polyline").count() + f.matches("<circle").count();
        assert!(drawn >= 2, "chart {i} draws nothing:\n{f}");
        assert!(f.contains("<text"), "chart {i} has no axis labels");
    }

    let shot = dir.path().join("report.png");
    let run = chromium::run(
        &browser,
        &dir.path().join("profile-shot"),
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,4000".into(),
            "--hide-scrollbars".into(),
        ],
        LIMIT,
    );
    assert!(run.success, "chromium failed:\n{}", run.stderr);
    assert_clean_console(&run.stderr);
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 50_000,
        "a blank screenshot? {} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("LOADLAB_REPORT_SCREENSHOT") {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        std::fs::write(workspace.join(keep), &png).unwrap();
    }
}

/// A script the report itself never has, added to a copy of it: after layout it writes into the
/// DOM (which `--dump-dom` prints) every element whose box reaches past the right edge of the
/// page's column (`main`'s content box).
const OVERFLOW_PROBE: &str = r#"<script>
(() => {
  const main = document.querySelector("main");
  const w = main.getBoundingClientRect().right - parseFloat(getComputedStyle(main).paddingRight);
  const out = [];
  for (const e of document.querySelectorAll("main *")) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1) {
      out.push(`${e.tagName.toLowerCase()}.${e.className} by ${Math.round(r.right - w)} px`);
    }
  }
  document.body.setAttribute("data-overflow", out.slice(0, 12).join("; "));
})();
</script>"#;

/// At 1400 px, a laptop's window, nothing sticks out beyond the page's column: no table or
/// chart wider than the text above it, even with stacks named by their knobs (one stack run
/// with two sets of knobs is told apart by them, `nginx {gzip=on, ...}`).
#[test]
fn nothing_sticks_out_beyond_the_page_at_1400_px() {
    let Some(browser) = chromium::find_or_skip() else { return };
    let dir = TempDir::new().unwrap();
    let mut cells = synthetic::cells();
    for c in cells.iter_mut().filter(|c| c.stack == "nginx" && c.repetition == 0) {
        c.knobs.insert("gzip".into(), "on".into());
        c.knobs.insert("keepalive_timeout".into(), "15s".into());
    }
    let html = report_of(&dir.path().join("loadlab.db"), cells);
    let page = dir.path().join("report.html");
    std::fs::write(&page, html.replacen("</body>", &format!("{OVERFLOW_PROBE}</body>"), 1))
        .unwrap();
    let dom = chromium::run(
        &browser,
        &dir.path().join("profile"),
        &page,
        &["--dump-dom".into(), "--window-size=1400,1000".into(), "--hide-scrollbars".into()],
        LIMIT,
    );
    assert!(dom.success, "chromium failed:\n{}", dom.stderr);
    let (_, after) = dom.stdout.split_once("data-overflow=\"").expect("the probe ran");
    let overflow = &after[..after.find('"').unwrap_or(0)];
    assert!(overflow.is_empty(), "beyond the page at 1400 px: {overflow}");
}

/// No console message from the page, no uncaught error, and no attempt to load anything.
fn assert_clean_console(stderr: &str) {
    for line in stderr.lines() {
        let bad = ["CONSOLE", "Uncaught", "net::ERR", "Failed to load resource", "Refused to"];
        assert!(!bad.iter().any(|b| line.contains(b)), "browser complained: {line}\n{stderr}");
    }
}

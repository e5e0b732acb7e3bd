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

    screenshot(&browser, dir.path(), &page, "1280,4000", "LOADLAB_REPORT_SCREENSHOT");
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
    let html = report_of(&dir.path().join("loadlab.db"), cells, &Default::default());
    dom_at_1400_px(&browser, dir.path(), &html);
}

/// The DOM of `html` laid out at 1400 px by Chromium, after asserting that nothing in it
/// sticks out beyond the page's column ([`OVERFLOW_PROBE`]).
fn dom_at_1400_px(browser: &Path, dir: &Path, html: &str) -> chromium::Run {
    let page = dir.join("probed.html");
    std::fs::write(&page, html.replacen("</body>", &format!("{OVERFLOW_PROBE}</body>"), 1))
        .unwrap();
    let dom = chromium::run(
        browser,
        &dir.join("profile-dom"),
        &page,
        &["--dump-dom".into(), "--window-size=1400,1000".into(), "--hide-scrollbars".into()],
        LIMIT,
    );
    assert!(dom.success, "chromium failed:\n{}", dom.stderr);
    let (_, after) = dom.stdout.split_once("data-overflow=\"").expect("the probe ran");
    let overflow = &after[..after.find('"').unwrap_or(0)];
    assert!(overflow.is_empty(), "beyond the page at 1400 px: {overflow}");
    dom
}

/// The report of a run whose WordPress cells were profiled, opened offline: every flame graph
/// reaches the DOM with its frames drawn, a tier with too few samples is said, nothing is
/// requested or logged, nothing sticks out of the page at 1400 px, and a screenshot is taken
/// (`LOADLAB_PROFILES_SCREENSHOT=docs/profiles.png` keeps it).
#[test]
fn the_report_with_flame_graphs_opens_offline_in_chromium() {
    let Some(browser) = chromium::find_or_skip() else { return };
    let dir = TempDir::new().unwrap();
    let (cells, profiles) = synthetic::profiled_wordpress();
    let html = report_of(&dir.path().join("loadlab.db"), cells, &profiles);
    let graphs = html.matches("<figure class=\"flame\">").count();
    // Five tiers (mariadb's few samples said, not drawn) and two differentials.
    assert_eq!(graphs, 7, "flame graphs in the report");
    let dom = dom_at_1400_px(&browser, dir.path(), &html);
    assert_clean_console(&dom.stderr);
    let figures: Vec<&str> = dom.stdout.split("<figure class=\"flame\">").skip(1).collect();
    assert_eq!(figures.len(), graphs, "every flame graph reaches the DOM");
    let drawn: Vec<usize> = figures
        .iter()
        .map(|f| f[..f.find("</figure>").expect("a closed figure")].matches("<rect").count())
        .collect();
    assert_eq!(drawn.iter().filter(|&&n| n > 100).count(), 6, "frames per graph: {drawn:?}");
    assert!(dom.stdout.contains("too few for a flame graph"), "mariadb's tier");

    // The screenshot of the profiles section: the page without the probe, and without the
    // sections before it, so that it comes first.
    let (head, rest) = html.split_once("<section id=\"verdict\">").unwrap();
    let profiles_on = &rest[rest.find("<section id=\"profiles\">").unwrap()..];
    let page = dir.path().join("report.html");
    std::fs::write(&page, format!("{head}{profiles_on}")).unwrap();
    screenshot(&browser, dir.path(), &page, "1280,2400", "LOADLAB_PROFILES_SCREENSHOT");
}

/// A screenshot of `page` in a window of `size` (`W,H`), not blank, the page silent; kept
/// where the environment variable `keep` says (relative to the workspace), when set.
fn screenshot(browser: &Path, dir: &Path, page: &Path, size: &str, keep: &str) {
    let shot = dir.join("shot.png");
    let run = chromium::run(
        browser,
        &dir.join("profile-shot"),
        page,
        &[
            format!("--screenshot={}", shot.display()),
            format!("--window-size={size}"),
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
    if let Some(keep) = std::env::var_os(keep) {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        std::fs::write(workspace.join(keep), &png).unwrap();
    }
}

/// No console message from the page, no uncaught error, and no attempt to load anything.
fn assert_clean_console(stderr: &str) {
    for line in stderr.lines() {
        let bad = ["CONSOLE", "Uncaught", "net::ERR", "Failed to load resource", "Refused to"];
        assert!(!bad.iter().any(|b| line.contains(b)), "browser complained: {line}\n{stderr}");
    }
}

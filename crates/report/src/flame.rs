//! Flame graphs as SVG that can sit inline in the report: drawn by inferno (the Rust port of
//! FlameGraph's `flamegraph.pl` and `difffolded.pl`), then cut down to what a page can hold
//! many times over.
//!
//! inferno writes a standalone SVG document meant to be opened on its own: an XML
//! declaration, a DOCTYPE naming the W3C's DTD by URL, comments with links, a `<style>` whose
//! rules (`text { ... }`, `#frames`) would apply to the whole page once inline, a script
//! driving its zoom and search (with `onload`), and fixed ids (`frames`, `background`,
//! `title`) that several graphs on one page would repeat. All of that is removed: what is
//! left are the frames, each a `<g>` with its `<title>` (the browser's own tooltip: function,
//! samples, share) and its rectangle and label, styled by the report's CSS. Nothing in it
//! runs or fetches.

use std::io;

use inferno::flamegraph::color::{BackgroundColor, Color};
use inferno::flamegraph::{self, Options};

/// The graph's width in SVG units; the page scales it to its column (`viewBox`).
const WIDTH: usize = 1200;

/// Frames narrower than this share of the samples (percent: 6 of the 1,200 units, about the
/// narrowest one can point at) are left out, and so is the empty label of a frame too narrow
/// for text: a real tier's graph keeps 100 to 200 frames, 20 to 40 KB, where inferno's
/// default (0.01%) kept 400 to 500 too thin to see (80 KB), and the size of a graph is
/// bounded by its width, not by how many distinct stacks a tier ran. `loadlab profile` and
/// `--folded` keep every stack.
const MIN_WIDTH: f64 = 0.5;

/// The flame graph of `folded` (`root;caller;callee COUNT` lines), or, from two-column lines
/// (`stack BEFORE AFTER`, inferno's differential output), the differential graph of the
/// second against the first: red where the second spends more, blue where less.
pub(crate) fn svg(folded: &str) -> io::Result<String> {
    let mut options = Options::default();
    options.image_width = Some(WIDTH);
    options.min_width = MIN_WIDTH;
    // The same function gets the same colour in every graph of the page.
    options.hash = true;
    options.deterministic = true;
    options.bgcolors = Some(BackgroundColor::Flat(WHITE));
    options.title = String::new();
    // The script's body is left out here; its variables and element are cut below.
    options.no_javascript = true;
    let mut out = Vec::with_capacity(64 * 1024);
    flamegraph::from_lines(&mut options, folded.lines(), &mut out)?;
    let svg = String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(inline(&svg))
}

/// The differential input of `other` against `base` (both folded), each scaled to the same
/// total first: the graph then shows where a share of the CPU moved, not that one stack ran
/// more requests in the same seconds.
pub(crate) fn differential(base: &str, other: &str) -> io::Result<String> {
    let options = inferno::differential::Options { normalize: true, strip_hex: false };
    let mut out = Vec::with_capacity(base.len() + other.len());
    inferno::differential::from_readers(options, base.as_bytes(), other.as_bytes(), &mut out)?;
    String::from_utf8(out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

const WHITE: Color = Color { r: 255, g: 255, b: 255 };

/// inferno's standalone document cut down to an element a page can hold (see the module's
/// head): from `<svg` on, without comments, definitions, style, script, `onload`, namespace
/// declarations, the script's controls, ids, or empty labels.
fn inline(svg: &str) -> String {
    let mut s = svg[svg.find("<svg").unwrap_or(0)..].to_string();
    for (open, close) in [
        ("<!--", "-->"),
        ("<defs", "</defs>"),
        ("<style", "</style>"),
        ("<script", "</script>"),
        // Where each frame starts and how wide it is in samples: the script's, not the page's.
        (" fg:x=\"", "\""),
        (" fg:w=\"", "\""),
    ] {
        s = cut(&s, open, close);
    }
    // The script's controls and the empty title: text elements only the script fills or uses.
    for id in ["title", "subtitle", "details", "unzoom", "search", "matched"] {
        s = cut(&s, &format!("<text id=\"{id}\""), "</text>");
    }
    for attr in [
        " onload=\"init(evt)\"",
        " xmlns=\"http://www.w3.org/2000/svg\"",
        " xmlns:xlink=\"http://www.w3.org/1999/xlink\"",
        " xmlns:fg=\"http://github.com/jonhoo/inferno\"",
        " id=\"frames\"",
    ] {
        s = s.replace(attr, "");
    }
    drop_empty_labels(&s.replace("fill=\"url(#background)\"", "fill=\"#fff\""))
}

/// `s` without the labels inferno leaves empty (`<text x=".." y=".."></text>`), those of
/// frames too narrow for three characters.
fn drop_empty_labels(s: &str) -> String {
    const EMPTY: &str = "></text>";
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(end) = rest.find(EMPTY) {
        let start = rest[..end].rfind("<text").unwrap_or(end);
        out.push_str(&rest[..start]);
        rest = &rest[end + EMPTY.len()..];
    }
    out.push_str(rest);
    out
}

/// `s` without every span from `open` to the next `close`, both included.
fn cut(s: &str, open: &str, close: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(open) {
        out.push_str(&rest[..at]);
        let after = at + open.len();
        match rest[after..].find(close) {
            Some(end) => rest = &rest[after + end + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDED: &str = "php-fpm;main;execute_ex;zend_compile_file 60\n\
                          php-fpm;main;execute_ex;strlen 30\n\
                          php-fpm;main;[libphp8.2.so] 10\n";

    #[test]
    fn a_graph_is_an_inline_svg_that_runs_and_fetches_nothing() {
        let svg = svg(FOLDED).unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
        for needle in [
            "<script", "onload", "http:", "url(", "<style", "<!--", " id=\"", "<?xml", "fg:",
            "></text>",
        ] {
            assert!(!svg.contains(needle), "found {needle:?} in {svg}");
        }
        // What is left of each rectangle is attributes, name="value", nothing between them.
        for rect in svg.split("<rect ").skip(1) {
            let attrs = &rect[..rect.find("/>").unwrap()];
            for a in attrs.split_whitespace() {
                let (name, value) = a.split_once('=').unwrap_or_else(|| panic!("{attrs}"));
                assert!(name.chars().all(|c| c.is_ascii_alphabetic() || c == '-'), "{attrs}");
                assert!(value.starts_with('"') && value.ends_with('"'), "{attrs}");
                assert_eq!(value.matches('"').count(), 2, "{attrs}");
            }
        }
        // Each frame says what it is on hover, with its share.
        assert!(svg.contains("<title>zend_compile_file (60 samples, 60.00%)</title>"), "{svg}");
        assert!(svg.contains("<title>[libphp8.2.so] (10 samples, 10.00%)</title>"), "{svg}");
    }

    #[test]
    fn a_differential_graph_marks_what_grew() {
        let base = "php;a 90\nphp;b 10\n";
        let other = "php;a 45\nphp;b 55\n";
        let diff = differential(base, other).unwrap();
        assert!(diff.contains("php;b 10 55"), "{diff}");
        let svg = svg(&diff).unwrap();
        // b grew from 10% to 55% of the samples: +45 points.
        assert!(svg.contains("<title>b (55 samples, 55.00%; +45.00%)</title>"), "{svg}");
    }
}

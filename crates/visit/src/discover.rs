//! A page's resources, found as a browser finds them: in the HTML, stylesheets (`<link
//! rel=stylesheet>`), icons and preloads, scripts (`<script src>`), images (`<img src>`), and
//! in CSS, whether a fetched stylesheet or a `<style>` element, `url(...)` and `@import`
//! (fonts, backgrounds). Run once before any load (at verify), never on the hot path, so a
//! real HTML parser (`tl`) reads the page rather than a pattern.
//!
//! Only the target's own host and port are kept unless an allow-list names another host (any
//! port of it) or host and port: a load test must not load a CDN or a tracker that nobody
//! asked to load. What is left out is listed too ([`Links::skipped`]), so the output can say
//! what a view did not fetch. `data:` URLs carry their content and are never fetched. Each
//! resource is listed once, in the order found.

use url::Url;

/// Which hosts' resources are fetched: the page's own, and these (`HOST` or `HOST:PORT`, an
/// IPv6 address in brackets).
#[derive(Debug, Clone, Default)]
pub struct Allow {
    pub hosts: Vec<String>,
}

impl Allow {
    /// Whether `u` is on the page's own origin.
    pub fn same_origin(page: &Url, u: &Url) -> bool {
        u.host_str() == page.host_str()
            && u.port_or_known_default() == page.port_or_known_default()
            && u.scheme() == page.scheme()
    }

    fn admits(&self, page: &Url, u: &Url) -> bool {
        let (Some(host), Some(port)) = (u.host_str(), u.port_or_known_default()) else {
            return false;
        };
        Allow::same_origin(page, u)
            || self.hosts.iter().any(|a| match split_port(a) {
                (h, None) => h.eq_ignore_ascii_case(host),
                (h, Some(p)) => h.eq_ignore_ascii_case(host) && p == port,
            })
    }
}

/// `HOST[:PORT]` as a host (an IPv6 address keeps its brackets, as `Url::host_str` gives it)
/// and its port, if it names one that is a number.
pub fn split_port(entry: &str) -> (&str, Option<u16>) {
    let cut = match entry.rfind(':') {
        Some(i) if !entry.starts_with('[') || entry[..i].ends_with(']') => i,
        _ => return (entry, None),
    };
    match entry[cut + 1..].parse() {
        Ok(port) if entry[..cut].matches(':').count() == 0 || entry.starts_with('[') => {
            (&entry[..cut], Some(port))
        }
        _ => (entry, None),
    }
}

/// A page's or a stylesheet's links: those to fetch, and the `http(s)` ones left out (another
/// host's, not allowed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Links {
    pub kept: Vec<Url>,
    pub skipped: Vec<Url>,
}

/// The resources an HTML page names, resolved against the page's URL (or its `<base href>`).
pub fn page_resources(html: &str, page: &Url, allow: &Allow) -> Links {
    let Ok(dom) = tl::parse(html, tl::ParserOptions::default()) else {
        return Links::default();
    };
    let parser = dom.parser();
    let attr = |tag: &tl::HTMLTag, name: &str| -> Option<String> {
        tag.attributes().get(name).flatten().map(|b| b.as_utf8_str().trim().to_string())
    };
    let tags = || dom.nodes().iter().filter_map(|n| n.as_tag());
    let base = tags()
        .find(|t| t.name().as_utf8_str().eq_ignore_ascii_case("base"))
        .and_then(|t| attr(t, "href"))
        .and_then(|h| page.join(&h).ok())
        .unwrap_or_else(|| page.clone());
    let mut found = Found::new(page, allow);
    for tag in tags() {
        let name = tag.name().as_utf8_str().to_ascii_lowercase();
        let link = match name.as_str() {
            "link" => {
                let rel = attr(tag, "rel").unwrap_or_default().to_ascii_lowercase();
                let fetched = rel
                    .split_ascii_whitespace()
                    .any(|r| matches!(r, "stylesheet" | "icon" | "preload" | "modulepreload"));
                fetched.then(|| attr(tag, "href")).flatten()
            }
            "script" | "img" => attr(tag, "src"),
            "style" => {
                let css = tag.inner_text(parser);
                css_urls(&css).into_iter().for_each(|u| found.add(&base, &u));
                None
            }
            _ => None,
        };
        if let Some(link) = link {
            found.add(&base, &link);
        }
    }
    found.links
}

/// The resources a stylesheet names (`url(...)`, `@import "..."`), resolved against its URL.
pub fn css_resources(css: &str, sheet: &Url, page: &Url, allow: &Allow) -> Links {
    let mut found = Found::new(page, allow);
    for u in css_urls(css) {
        found.add(sheet, &u);
    }
    found.links
}

/// The distinct URLs, admitted or left out, in the order found.
struct Found<'a> {
    page: &'a Url,
    allow: &'a Allow,
    links: Links,
}

impl<'a> Found<'a> {
    fn new(page: &'a Url, allow: &'a Allow) -> Found<'a> {
        Found { page, allow, links: Links::default() }
    }

    fn add(&mut self, base: &Url, link: &str) {
        if link.is_empty() || link.starts_with('#') || link.starts_with("data:") {
            return;
        }
        let Ok(mut u) = base.join(link) else { return };
        u.set_fragment(None);
        if !matches!(u.scheme(), "http" | "https") || u == *self.page {
            return;
        }
        let list = if self.allow.admits(self.page, &u) {
            &mut self.links.kept
        } else {
            &mut self.links.skipped
        };
        if !list.contains(&u) {
            list.push(u);
        }
    }
}

/// The links of a piece of CSS: `url(x)`, `url('x')`, `url("x")` and `@import "x"`.
fn css_urls(css: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = css.to_ascii_lowercase();
    let mut at = 0;
    while let Some(i) = lower[at..].find("url(") {
        let start = at + i + 4;
        let Some(len) = css[start..].find(')') else { break };
        out.push(unquote(&css[start..start + len]));
        at = start + len;
    }
    at = 0;
    while let Some(i) = lower[at..].find("@import") {
        let rest = css[at + i + 7..].trim_start();
        if let Some(q @ ('"' | '\'')) = rest.chars().next() {
            if let Some(end) = rest[1..].find(q) {
                out.push(rest[1..=end].to_string());
            }
        }
        at += i + 7;
    }
    out
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches(|c| c == '"' || c == '\'').trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html><html><head>
<link rel="stylesheet" href="/css/site.css?v=2">
<link rel="alternate" href="/feed">
<link rel="icon" href="favicon.ico">
<link rel="stylesheet" href="https://cdn.example.com/x.css">
<script src="/js/app.js"></script><script>var x = "<img src=/not-a-tag.png>";</script>
<style>body { background: url('/img/bg.png') } .x { background: url(data:image/png;base64,AA) }</style>
</head><body><img src="/img/logo.png"><img src="/img/logo.png#again"><a href="/next">next</a>
<img src="//cdn.example.com/y.png"></body></html>"#;

    fn names(urls: &[Url]) -> Vec<String> {
        urls.iter()
            .map(|u| u.as_str().trim_start_matches("http://127.0.0.1:8080").to_string())
            .collect()
    }

    #[test]
    fn a_pages_resources_on_its_host_in_order() {
        let page = Url::parse("http://127.0.0.1:8080/blog/").unwrap();
        let found = page_resources(PAGE, &page, &Allow::default());
        let skipped = ["https://cdn.example.com/x.css", "http://cdn.example.com/y.png"];
        assert_eq!(names(&found.skipped), skipped);
        assert_eq!(
            names(&found.kept),
            [
                "/css/site.css?v=2",
                "/blog/favicon.ico",
                "/js/app.js",
                "/img/bg.png",
                "/img/logo.png"
            ]
        );
        let allow = Allow { hosts: vec!["cdn.example.com".into()] };
        let found = page_resources(PAGE, &page, &allow);
        assert_eq!(found.kept.len(), 7, "{found:?}");
        assert!(found.skipped.is_empty(), "{found:?}");
        // A port named admits that port only.
        let allow = Allow { hosts: vec!["cdn.example.com:8443".into()] };
        assert_eq!(page_resources(PAGE, &page, &allow).kept.len(), 5);
        let allow = Allow { hosts: vec!["cdn.example.com:443".into()] };
        assert_eq!(page_resources(PAGE, &page, &allow).kept.len(), 6);
    }

    #[test]
    fn an_allowed_entry_splits_into_host_and_port() {
        assert_eq!(split_port("cdn.example.com"), ("cdn.example.com", None));
        assert_eq!(split_port("127.0.0.1:8081"), ("127.0.0.1", Some(8081)));
        assert_eq!(split_port("[::1]:8081"), ("[::1]", Some(8081)));
        assert_eq!(split_port("[::1]"), ("[::1]", None));
        assert_eq!(split_port("::1"), ("::1", None));
        assert_eq!(split_port("host:http"), ("host:http", None));
    }

    #[test]
    fn a_stylesheets_fonts_and_imports_resolve_against_it() {
        let page = Url::parse("http://127.0.0.1:8080/").unwrap();
        let sheet = Url::parse("http://127.0.0.1:8080/css/site.css").unwrap();
        let css = r#"@import "print.css"; @font-face { src: url("../fonts/a.woff2") format("woff2"), URL(../fonts/a.woff); }"#;
        let found = css_resources(css, &sheet, &page, &Allow::default());
        assert_eq!(names(&found.kept), ["/fonts/a.woff2", "/fonts/a.woff", "/css/print.css"]);
    }
}

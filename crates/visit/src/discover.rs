//! A page's resources, found as a browser finds them: in the HTML, stylesheets (`<link
//! rel=stylesheet>`), icons and preloads, scripts (`<script src>`), images (`<img src>`), and
//! in CSS, whether a fetched stylesheet or a `<style>` element, `url(...)` and `@import`
//! (fonts, backgrounds). Run once before any load (at verify), never on the hot path, so a
//! real HTML parser (`tl`) reads the page rather than a pattern.
//!
//! Only the target's own host and port are kept unless an allow-list names another host: a
//! load test must not load a CDN or a tracker that nobody asked to load. `data:` URLs carry
//! their content and are never fetched. Each resource is listed once, in the order found.

use url::Url;

/// Which hosts' resources are fetched: the page's own, and these.
#[derive(Debug, Clone, Default)]
pub struct Allow {
    pub hosts: Vec<String>,
}

impl Allow {
    fn admits(&self, page: &Url, u: &Url) -> bool {
        if !matches!(u.scheme(), "http" | "https") {
            return false;
        }
        let same = u.host_str() == page.host_str()
            && u.port_or_known_default() == page.port_or_known_default()
            && u.scheme() == page.scheme();
        same || u.host_str().is_some_and(|h| self.hosts.iter().any(|a| a.eq_ignore_ascii_case(h)))
    }
}

/// The resources an HTML page names, resolved against the page's URL (or its `<base href>`).
pub fn page_resources(html: &str, page: &Url, allow: &Allow) -> Vec<Url> {
    let Ok(dom) = tl::parse(html, tl::ParserOptions::default()) else { return Vec::new() };
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
    found.urls
}

/// The resources a stylesheet names (`url(...)`, `@import "..."`), resolved against its URL.
pub fn css_resources(css: &str, sheet: &Url, page: &Url, allow: &Allow) -> Vec<Url> {
    let mut found = Found::new(page, allow);
    for u in css_urls(css) {
        found.add(sheet, &u);
    }
    found.urls
}

/// The distinct admitted URLs, in the order found.
struct Found<'a> {
    page: &'a Url,
    allow: &'a Allow,
    urls: Vec<Url>,
}

impl<'a> Found<'a> {
    fn new(page: &'a Url, allow: &'a Allow) -> Found<'a> {
        Found { page, allow, urls: Vec::new() }
    }

    fn add(&mut self, base: &Url, link: &str) {
        if link.is_empty() || link.starts_with('#') || link.starts_with("data:") {
            return;
        }
        let Ok(mut u) = base.join(link) else { return };
        u.set_fragment(None);
        if self.allow.admits(self.page, &u) && !self.urls.contains(&u) && u != *self.page {
            self.urls.push(u);
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
        assert_eq!(
            names(&found),
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
        assert_eq!(found.len(), 7, "{found:?}");
    }

    #[test]
    fn a_stylesheets_fonts_and_imports_resolve_against_it() {
        let page = Url::parse("http://127.0.0.1:8080/").unwrap();
        let sheet = Url::parse("http://127.0.0.1:8080/css/site.css").unwrap();
        let css = r#"@import "print.css"; @font-face { src: url("../fonts/a.woff2") format("woff2"), URL(../fonts/a.woff); }"#;
        let found = css_resources(css, &sheet, &page, &Allow::default());
        assert_eq!(names(&found), ["/fonts/a.woff2", "/fonts/a.woff", "/css/print.css"]);
    }
}

//! The lab's built-in visits: visit files for its WordPress stacks, named
//! `wordpress:front`, `wordpress:post`, `wordpress:search` and `wordpress:login`, and the
//! values an instance gives them (`{user}` and `{password}`: each visitor's own WordPress
//! user, `loadlab-{visitor}`). Data only: `loadlab-visit` reads the files and the engine runs
//! them, filling the values in per visitor (never into the file's text, whose requests are
//! the run's figures and stored with it).

use crate::error::{Error, Result};
use crate::servers::wordpress::Visitors;
use crate::state::Record;

/// A visit file that comes with loadlab.
#[derive(Debug)]
pub struct Builtin {
    /// How a user names it: `bench URL --visits wordpress:login`.
    pub name: &'static str,
    /// The visit file, in the format `loadlab-visit` reads.
    pub text: &'static str,
    /// The `{name}`s the lab fills in from the instance rather than a step's capture.
    pub given: &'static [&'static str],
}

/// The names a login visit is given: the visitor's own user of the instance.
pub const USER_NAMES: &[&str] = &["user", "password"];

/// Every built-in visit, in the order `visits` lists them.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "wordpress:front",
        text: include_str!("../visits/wordpress-front.toml"),
        given: &[],
    },
    Builtin {
        name: "wordpress:post",
        text: include_str!("../visits/wordpress-post.toml"),
        given: &[],
    },
    Builtin {
        name: "wordpress:search",
        text: include_str!("../visits/wordpress-search.toml"),
        given: &[],
    },
    Builtin {
        name: "wordpress:login",
        text: include_str!("../visits/wordpress-login.toml"),
        given: USER_NAMES,
    },
];

/// The built-in visit of this name, if there is one.
pub fn builtin(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

impl Builtin {
    /// The visit's own title (its file's `name = "..."`), for listings.
    pub fn title(&self) -> &'static str {
        self.text
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or(self.name)
    }

    /// The values this visit is given by the instance `record` (the one its URL reaches), in
    /// the order of [`Builtin::given`]: for a login, visitor `{visitor}`'s user and password
    /// (the engine fills the number in for each visitor).
    pub fn values(&self, record: &Record) -> Result<Vec<(String, String)>> {
        if self.given.is_empty() {
            return Ok(Vec::new());
        }
        let stack = crate::catalog::stack(&record.stack)?;
        if !stack.wordpress {
            return Err(Error::NoVisit(format!(
                "{} logs in to WordPress, and {} ({}) has none: use a wordpress-* stack",
                self.name, record.id, record.stack
            )));
        }
        let visitors = Visitors::read(&record.run_dir)?;
        Ok(vec![
            ("user".to_string(), visitors.user()),
            ("password".to_string(), visitors.password()),
        ])
    }
}

/// The built-in visits as `stack show` lists them for an instance at `url`: each name, its
/// title, and the command that runs it.
pub fn describe(url: &str) -> String {
    let mut out = String::new();
    for b in BUILTINS {
        out.push_str(&format!("{:<18} {}\n", b.name, b.title()));
    }
    out.push_str(&format!("run one with: loadlab bench {url} --visits NAME (-c N or --rate R)"));
    out
}

/// What a built-in visit needs to run against the lab's instance at `url`.
#[derive(Debug)]
pub struct Resolved {
    pub visit: &'static Builtin,
    /// The values the instance gives it, by name (a value may hold `{visitor}`).
    pub given: Vec<(String, String)>,
    /// How many visitors at once the instance has values for (its users); `None`: no limit.
    pub visitors: Option<usize>,
}

/// A `--visits` argument that names a built-in visit, made ready for the instance of
/// `records` (the lab's) at `url`: the values the instance gives it. `Ok(None)`: not a
/// built-in name, or a file of that name exists (the user's own, read as such).
pub fn resolve(records: &[Record], spec: &str, url: &str) -> Result<Option<Resolved>> {
    let Some(visit) = builtin(spec).filter(|_| !std::path::Path::new(spec).exists()) else {
        return Ok(None);
    };
    if visit.given.is_empty() {
        return Ok(Some(Resolved { visit, given: Vec::new(), visitors: None }));
    }
    let given = visit.values(instance_for(records, url, visit)?)?;
    let visitors = Some(crate::servers::wordpress::VISITORS);
    Ok(Some(Resolved { visit, given, visitors }))
}

/// The running instance of `records` that a load to `url` reaches: the same scheme, host and
/// port as its URL (any path). `None` when the URL is not one of the lab's.
pub fn instance_at<'a>(records: &'a [Record], url: &str) -> Option<&'a Record> {
    let origin = |u: &str| {
        let (scheme, rest) = u.split_once("://")?;
        let authority = rest.split(['/', '?', '#']).next()?;
        Some((scheme.to_ascii_lowercase(), authority.to_ascii_lowercase()))
    };
    let wanted = origin(url)?;
    records.iter().find(|r| origin(&r.url).as_ref() == Some(&wanted))
}

/// The instance a built-in visit to `url` is given its values by: one of this lab's, found by
/// its URL, or an error saying how to run one.
pub fn instance_for<'a>(records: &'a [Record], url: &str, visit: &Builtin) -> Result<&'a Record> {
    instance_at(records, url).ok_or_else(|| {
        Error::NoVisit(format!(
            "{} needs a stack of this lab at {url} for {}: none runs there \
             (`loadlab stack up wordpress-nginx-fpm`, then its URL)",
            visit.name,
            visit.given.iter().map(|g| format!("{{{g}}}")).collect::<Vec<_>>().join(" and "),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_builtin_is_a_visit_whose_names_are_captured_or_given() {
        let mut seen = HashSet::new();
        for b in BUILTINS {
            assert!(seen.insert(b.name), "{} twice", b.name);
            let visit = loadlab_visit::visit_file::parse(b.text, b.name, b.given)
                .unwrap_or_else(|e| panic!("{}: {e}", b.name));
            assert_eq!(visit.name, b.title(), "{}", b.name);
            // Without what the lab gives, a visit that needs it is refused when read.
            if !b.given.is_empty() {
                let e = loadlab_visit::visit_file::parse(b.text, b.name, &[]).unwrap_err();
                assert!(e.to_string().contains("is used before any step captures it"), "{e}");
            }
        }
        assert_eq!(builtin("wordpress:login").unwrap().title(), "log in and open the dashboard");
        assert!(builtin("wordpress:nope").is_none());
        let listed = describe("http://127.0.0.1:8080/");
        assert!(listed.contains("wordpress:search   search\n"), "{listed}");
        assert!(listed.ends_with("bench http://127.0.0.1:8080/ --visits NAME (-c N or --rate R)"));
    }

    #[test]
    fn the_login_carries_the_nonce_it_captures() {
        let login = builtin("wordpress:login").unwrap();
        let visit = loadlab_visit::visit_file::parse(login.text, login.name, login.given).unwrap();
        let calls: Vec<_> = visit.calls().collect();
        assert_eq!(calls.len(), 4);
        assert_eq!(calls[2].captures[0].name, "nonce");
        assert!(calls[3].path.names().any(|n| n == "nonce"));
        // The dashboard writes its links' `&` as `&#038;` (esc_url), the admin bar as `&amp;`.
        let take = |body: &str| {
            let r = loadlab_visit::Response { status: 200, headers: &[], body: body.as_bytes() };
            calls[2].captures[0].take(&r)
        };
        let page = "<a href='http://h/wp-login.php?action=logout&#038;_wpnonce=f10f157ab1'>";
        assert_eq!(take(page).as_deref(), Some("f10f157ab1"));
        assert_eq!(take("action=logout&amp;_wpnonce=0a1b").as_deref(), Some("0a1b"));
        assert_eq!(take("<title>Log In</title>"), None);
    }

    #[test]
    fn an_instance_is_found_by_its_origin() {
        let record = |id: &str, url: &str| {
            let stack = "wordpress-nginx-fpm".into();
            Record::unstarted(id.into(), stack, url.into(), "/nonexistent".into())
        };
        let records =
            [record("a", "http://127.0.0.1:8080/"), record("b", "https://127.0.0.1:8443/")];
        let found = |url| instance_at(&records, url).map(|r| r.id.as_str());
        assert_eq!(found("http://127.0.0.1:8080/wp-login.php"), Some("a"));
        assert_eq!(found("HTTP://127.0.0.1:8080"), Some("a"));
        assert_eq!(found("http://127.0.0.1:8443/"), None);
        assert_eq!(found("https://127.0.0.1:8443/?s=x"), Some("b"));
        let login = builtin("wordpress:login").unwrap();
        let e = instance_for(&records, "http://127.0.0.1:9/", login).unwrap_err().to_string();
        assert!(e.contains("{user} and {password}"), "{e}");
        let mut other = record("c", "http://127.0.0.1:1/");
        other.stack = "nginx".into();
        assert!(login.values(&other).unwrap_err().to_string().contains("use a wordpress-* stack"));
        assert!(builtin("wordpress:front").unwrap().values(&other).unwrap().is_empty());
    }
}

//! The workloads: files generated deterministically into an instance's document root, and
//! what a correct answer to each looks like (a SHA-256 for static files, markers that only
//! executed PHP can produce for dynamic pages).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use loadlab_engine::Validation;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::catalog::Stack;
use crate::error::{IoContext, Result};
use crate::knobs::Knobs;
use crate::state::make_dir_all;

/// What a workload's answer must hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// Exactly these bytes, by SHA-256 (hex) and length.
    Sha256 { sha256: String, length: usize },
    /// Every one of these strings, and never `<?php` (PHP source served as text).
    Markers(Vec<String>),
}

impl Expect {
    /// The engine's check of an answer: status 200 and these bytes, or the first marker. Every
    /// verify judges its answer by it ([`Validation::verify`]), as the load judges each
    /// response, so both accept the same answers; the engine looks for one substring per
    /// response, and a verify for every marker (and no `<?php`) besides.
    pub fn validation(&self) -> Validation {
        let mut v = Validation { status: vec![(200, 200)], ..Validation::default() };
        match self {
            // The lab writes its digests as 64 hex digits, so this always parses.
            Expect::Sha256 { sha256, .. } => v.body_sha256 = Validation::parse_sha256(sha256).ok(),
            Expect::Markers(markers) => {
                v.markers = markers.iter().map(|m| m.as_bytes().to_vec()).collect();
                v.body_contains = v.markers.first().cloned();
            }
        }
        v
    }
}

/// A URL path of an instance and how to check its answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Workload {
    /// `hello.txt`, `country.php`, `wordpress` (the front page), ...
    pub name: &'static str,
    /// The path to request, starting with `/`.
    pub path: &'static str,
    pub expect: Expect,
    /// Whether PHP produces it (and so the PHP tier's identity and OPcache are checked).
    pub php: bool,
}

pub const HELLO: &[u8] = b"hello, world!";
const ROBOTS: &[u8] = b"User-agent: *\nDisallow:\n";
/// Sizes of the binary files: 20 KiB, 100 KiB and 1 MiB.
const BINARIES: [(&str, usize); 3] =
    [("20k.bin", 20 << 10), ("100k.bin", 100 << 10), ("1m.bin", 1 << 20)];

const HELLO_PHP: &str = include_str!("../templates/hello.php");
const PHPINFO_PHP: &str = include_str!("../templates/phpinfo.php");
const COUNTRY_PHP: &str = include_str!("../templates/country.php");
const COMPLEX_PHP: &str = include_str!("../templates/complex.php");
const COMPLEX_TPL: &str = include_str!("../templates/complex.tpl");
const STATUS_PHP: &str = include_str!("../templates/status.php");
const DB_PHP: &str = include_str!("../templates/db.php");

/// What only a WordPress front page rendered from this site's database holds (see
/// [`crate::servers::wordpress`]).
pub const FRONT_PAGE_MARKERS: &[&str] =
    &["<meta name=\"generator\" content=\"WordPress", "loadlab post 5", "twentytwentyone"];

/// The path of loadlab's PHP probe (see templates/status.php); not a workload.
pub const STATUS_PATH: &str = "/_loadlab/status.php";

/// The workloads that apply to `stack` with these knobs, in the order verify checks them.
pub fn for_stack(stack: &Stack, knobs: &Knobs) -> Vec<Workload> {
    if stack.http_tiers.is_empty() {
        return Vec::new();
    }
    let mut list: Vec<Workload> = static_files()
        .into_iter()
        .map(|(name, bytes)| Workload {
            name,
            path: static_path(name),
            expect: Expect::Sha256 { sha256: sha256_hex(&bytes), length: bytes.len() },
            php: false,
        })
        .collect();
    if stack.has_php() {
        list.push(php(
            "hello.php",
            "/hello.php",
            Expect::Sha256 { sha256: sha256_hex(HELLO), length: HELLO.len() },
        ));
        list.push(php("phpinfo.php", "/phpinfo.php", markers(&["phpinfo()", "PHP Version"])));
    }
    if stack.has_php() && stack.has_db(knobs) {
        list.push(php("country.php", "/country.php", markers(&["loadlab:country rows=240 "])));
        list.push(php("complex.php", "/complex.php", markers(&["loadlab:complex rows=20 menu="])));
    }
    if stack.wordpress {
        list.push(php("wordpress", "/", markers(FRONT_PAGE_MARKERS)));
    }
    list
}

fn php(name: &'static str, path: &'static str, expect: Expect) -> Workload {
    Workload { name, path, expect, php: true }
}

fn markers(list: &[&str]) -> Expect {
    Expect::Markers(list.iter().map(|s| s.to_string()).collect())
}

fn static_path(name: &'static str) -> &'static str {
    match name {
        "hello.txt" => "/hello.txt",
        "robots.txt" => "/robots.txt",
        "20k.bin" => "/20k.bin",
        "100k.bin" => "/100k.bin",
        _ => "/1m.bin",
    }
}

/// The static files: name and bytes.
pub fn static_files() -> Vec<(&'static str, Vec<u8>)> {
    let mut files = vec![("hello.txt", HELLO.to_vec()), ("robots.txt", ROBOTS.to_vec())];
    for (name, size) in BINARIES {
        files.push((name, deterministic_bytes(size)));
    }
    files
}

/// `len` bytes from xorshift64* seeded by the length: the same on every machine and every
/// run, and not compressible, so gzip cannot shrink the transfer behind the tester's back.
pub fn deterministic_bytes(len: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64 ^ len as u64;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        out.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the document root of an instance: static files always; the PHP pages and the
/// probe when the stack runs PHP; the database pages, their file cache and template, and
/// the database address (`db_port`) when it has a database. Everything is readable by
/// others, since workers may run as another user (see `StateDir::run_root`).
pub fn write_docroot(docroot: &Path, stack: &Stack, db_port: Option<u16>) -> Result<()> {
    make_dir_all(docroot)?;
    for (path, bytes) in docroot_files(stack, db_port) {
        let path = docroot.join(path);
        make_dir_all(path.parent().expect("inside the document root"))?;
        write(&path, &bytes)?;
    }
    Ok(())
}

/// The files [`write_docroot`] writes, by path relative to the document root.
pub fn docroot_files(stack: &Stack, db_port: Option<u16>) -> Vec<(&'static str, Vec<u8>)> {
    let mut files = static_files();
    if !stack.has_php() {
        return files;
    }
    files.push(("hello.php", HELLO_PHP.into()));
    files.push(("phpinfo.php", PHPINFO_PHP.into()));
    files.push(("_loadlab/status.php", STATUS_PHP.into()));
    if let Some(port) = db_port {
        let db = crate::template::render(DB_PHP, &[("port", port.to_string())]);
        files.push(("_loadlab/db.php", db.into_bytes()));
        files.push(("country.php", COUNTRY_PHP.into()));
        files.push(("complex.php", COMPLEX_PHP.into()));
        files.push(("cache/menu.json", menu_json().into_bytes()));
        files.push(("templates/complex.tpl", COMPLEX_TPL.into()));
    }
    files
}

/// The paths the lab writes into an instance's document root with these knobs, which a
/// docroot of the user's, served beside them, must leave alone.
pub fn lab_paths(stack: &Stack, knobs: &Knobs) -> Vec<&'static str> {
    let db_port = stack.has_db(knobs).then_some(0);
    docroot_files(stack, db_port).into_iter().map(|(path, _)| path).collect()
}

/// Writes a file readable by everyone.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    fs::write(path, bytes).context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o644))
        .context(|| format!("setting the mode of {}", path.display()))
}

/// complex.php's file cache: a site menu of 80 entries, as a CMS would cache it (about 4 KB).
fn menu_json() -> String {
    let items: Vec<String> = (1..=80)
        .map(|i| format!(r#"{{"title":"Section {i:02}","href":"/section/{i:02}/"}}"#))
        .collect();
    format!("{{\"items\":[{}]}}\n", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::stack;
    use crate::knobs::OnOff;

    #[test]
    fn static_files_are_deterministic() {
        let files = static_files();
        assert_eq!(files[0], ("hello.txt", b"hello, world!".to_vec()));
        let sizes: Vec<usize> = files.iter().map(|(_, b)| b.len()).collect();
        assert_eq!(sizes, vec![13, 24, 20480, 102400, 1048576]);
        assert_eq!(deterministic_bytes(1000), deterministic_bytes(1000));
        // Pinned, so that a change of generator (and of every stored result's meaning) is
        // a visible decision.
        assert_eq!(sha256_hex(&deterministic_bytes(20480)), sha256_hex(&files[2].1),);
        assert_eq!(
            sha256_hex(HELLO),
            "68e656b251e67e8358bef8483ab0d51c6619f3e7a1a9f0e75838d41ff368f728"
        );
    }

    #[test]
    fn workloads_follow_the_stack() {
        let names = |s: &str, knobs: &Knobs| -> Vec<&str> {
            for_stack(stack(s).unwrap(), knobs).iter().map(|w| w.name).collect()
        };
        let d = Knobs::default();
        assert_eq!(names("nginx", &d).len(), 5);
        assert_eq!(names("nginx-fpm", &d).len(), 7);
        let db = Knobs { db: Some(OnOff::On), ..Knobs::default() };
        assert!(names("nginx-fpm", &db).contains(&"country.php"));
        assert!(names("wordpress-nginx-fpm", &d).contains(&"wordpress"));
        assert!(names("mariadb", &d).is_empty());
    }

    #[test]
    fn the_menu_cache_is_about_4k() {
        let len = menu_json().len();
        assert!((3000..5000).contains(&len), "{len}");
    }
}

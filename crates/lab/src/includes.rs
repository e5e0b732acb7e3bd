//! The user's own configuration as data: the include points a file of theirs may fill
//! ([`Point`], by its name), and a directory of such files ([`Config`]). What is done with
//! them (checked, copied, included, captured) is [`crate::own`]'s.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tier::Tier;

/// Where a file of the user's goes in the generated configuration, by its name in the
/// directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Point {
    /// nginx's `http {}` block, after the lab's directives and before its `server {}`.
    #[serde(rename = "nginx-http.conf")]
    NginxHttp,
    /// Inside the lab's `server {}`, after its root, index, TLS and status location and
    /// before its own locations: nginx tries regex locations in the order written, so a
    /// regex location of the user's is tried before the lab's `\.php$`.
    #[serde(rename = "nginx-server.conf")]
    NginxServer,
    /// Apache's server level, after the lab's modules, MPM and keep-alive settings: Apache
    /// keeps the last value of a directive given twice, so the user's win.
    #[serde(rename = "apache.conf")]
    Apache,
    /// After the site's DocumentRoot, `<Directory>`, PHP handler, gzip and TLS: where a
    /// `<VirtualHost>`'s body would go (the lab's Apache serves its one site from the main
    /// server, which every request reaches).
    #[serde(rename = "apache-vhost.conf")]
    ApacheVhost,
    /// The end of the lab's php-fpm pool `[loadlab]`: php-fpm keeps the last value.
    #[serde(rename = "php-fpm-pool.conf")]
    PhpFpmPool,
    /// Read by every PHP tier after Debian's php.ini, its conf.d and the lab's own ini
    /// (`PHP_INI_SCAN_DIR` lists the user's directory last), so its values win.
    #[serde(rename = "php.ini")]
    PhpIni,
    /// Included at the end of the lab's VCL (see [`crate::servers::varnish`] for why it is
    /// included rather than replacing it).
    #[serde(rename = "varnish.vcl")]
    VarnishVcl,
}

impl Point {
    pub const ALL: [Point; 7] = [
        Point::NginxHttp,
        Point::NginxServer,
        Point::Apache,
        Point::ApacheVhost,
        Point::PhpFpmPool,
        Point::PhpIni,
        Point::VarnishVcl,
    ];

    /// The file's name in the user's directory, and in the run directory's `own/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Point::NginxHttp => "nginx-http.conf",
            Point::NginxServer => "nginx-server.conf",
            Point::Apache => "apache.conf",
            Point::ApacheVhost => "apache-vhost.conf",
            Point::PhpFpmPool => "php-fpm-pool.conf",
            Point::PhpIni => "php.ini",
            Point::VarnishVcl => "varnish.vcl",
        }
    }

    pub fn from_file_name(name: &str) -> Option<Point> {
        Point::ALL.into_iter().find(|p| p.file_name() == name)
    }

    /// Whether the file goes into `tier`'s configuration.
    pub fn applies(self, tier: Tier) -> bool {
        match self {
            Point::NginxHttp | Point::NginxServer => matches!(tier, Tier::Nginx { .. }),
            Point::Apache | Point::ApacheVhost => matches!(tier, Tier::Apache { .. }),
            Point::PhpFpmPool => tier == Tier::PhpFpm,
            Point::PhpIni => tier.runs_php(),
            Point::VarnishVcl => tier == Tier::Varnish,
        }
    }

    /// The kind of tier it needs, as a person names it.
    pub(crate) fn needs(self) -> &'static str {
        match self {
            Point::NginxHttp | Point::NginxServer => "an nginx tier",
            Point::Apache | Point::ApacheVhost => "an Apache tier",
            Point::PhpFpmPool => "a php-fpm tier",
            Point::PhpIni => "a PHP tier",
            Point::VarnishVcl => "a Varnish tier",
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_name())
    }
}

/// A directory of the user's configuration snippets (`--config DIR`, a suite's `config`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// The directory, absolute. Its files are copied when an instance starts.
    pub dir: PathBuf,
    /// The include points its files fill, in [`Point::ALL`]'s order.
    pub files: Vec<Point>,
}

impl Config {
    /// Reads the directory: every file in it must be one of the include points' names
    /// (hidden files, as an editor's or git's, are passed over), and at least one must be.
    pub fn read(dir: &Path) -> Result<Config, String> {
        let shown = dir.display();
        let abs = dir.canonicalize().map_err(|e| format!("{shown}: {e}"))?;
        let entries = fs::read_dir(&abs).map_err(|e| format!("{shown}: {e}"))?;
        let mut files = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| format!("{shown}: {e}"))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Some(point) = Point::from_file_name(&name) else {
                return Err(format!(
                    "{}: {name:?} is not an include point; the files it may hold are {}",
                    abs.display(),
                    names()
                ));
            };
            if !entry.path().is_file() {
                return Err(format!("{}: {name} is not a file", abs.display()));
            }
            files.push(point);
        }
        if files.is_empty() {
            return Err(format!("{}: holds none of {}", abs.display(), names()));
        }
        files.sort_by_key(|p| Point::ALL.iter().position(|a| a == p));
        Ok(Config { dir: abs, files })
    }

    pub fn has(&self, point: Point) -> bool {
        self.files.contains(&point)
    }
}

fn names() -> String {
    Point::ALL.map(Point::file_name).join(", ")
}

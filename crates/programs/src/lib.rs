//! Finding the programs and files that Debian's packages install (the lab's servers, and
//! iproute2's `ip`, `tc` and `ss`), and naming the package to install when one is missing.
//! Its own crate because the lab and the network profiles (`loadlab-net`) both look for
//! programs, the same way.

use std::path::{Path, PathBuf};

/// A program or file that is not installed, with the package that provides it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{program} not found: install it with `apt-get install {package}`")]
pub struct Missing {
    pub program: String,
    pub package: String,
}

/// Something a tier needs from the system, and the Debian package that provides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    /// The Debian package to `apt-get install`.
    pub package: &'static str,
    what: What,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    /// A program, searched in the program directories (see [`search_path`]).
    Program(&'static str),
    /// A program whose name carries PHP's version (`php-fpm8.2`): the newest found.
    VersionedProgram(&'static str),
    /// A file at a fixed path, or the newest matching `dir/prefix*suffix`.
    File { dir: &'static str, prefix: &'static str, suffix: &'static str },
}

pub const NGINX: Need = Need { package: "nginx", what: What::Program("nginx") };
pub const APACHE: Need = Need { package: "apache2", what: What::Program("apache2") };
pub const MOD_PHP: Need = Need {
    package: "libapache2-mod-php",
    what: What::File { dir: "/usr/lib/apache2/modules", prefix: "libphp", suffix: ".so" },
};
pub const PHP_FPM: Need = Need { package: "php-fpm", what: What::VersionedProgram("php-fpm") };
pub const PHP_CGI: Need = Need { package: "php-cgi", what: What::Program("php-cgi") };
pub const PHP_CLI: Need = Need { package: "php-cli", what: What::Program("php") };
pub const PHP_MYSQL: Need = Need {
    package: "php-mysql",
    what: What::File { dir: "/usr/lib/php", prefix: "", suffix: "/mysqli.so" },
};
pub const SPAWN_FCGI: Need = Need { package: "spawn-fcgi", what: What::Program("spawn-fcgi") };
/// `ss`, to read a unix listener's accept queue (the php-fpm pool's, see `pools`).
pub const SS: Need = Need { package: "iproute2", what: What::Program("ss") };
/// `ip` and `tc`, for network profiles' namespaces, veths and qdiscs (see `loadlab-net`).
pub const IP: Need = Need { package: "iproute2", what: What::Program("ip") };
pub const TC: Need = Need { package: "iproute2", what: What::Program("tc") };
pub const VARNISHD: Need = Need { package: "varnish", what: What::Program("varnishd") };
/// The TLS terminator in front of Varnish with `--tls on`.
pub const HITCH: Need = Need { package: "hitch", what: What::Program("hitch") };
pub const CADDY: Need = Need { package: "caddy", what: What::Program("caddy") };
pub const MARIADBD: Need = Need { package: "mariadb-server", what: What::Program("mariadbd") };
pub const MARIADB_INSTALL_DB: Need =
    Need { package: "mariadb-server", what: What::Program("mariadb-install-db") };
pub const MARIADB_CLIENT: Need = Need { package: "mariadb-client", what: What::Program("mariadb") };
pub const WORDPRESS: Need = Need {
    package: "wordpress",
    what: What::File { dir: "/usr/share/wordpress", prefix: "wp-settings.php", suffix: "" },
};
pub const WORDPRESS_THEME: Need = Need {
    package: "wordpress-theme-twentytwentyone",
    what: What::File {
        dir: "/usr/share/wordpress/wp-content/themes",
        prefix: "twentytwentyone",
        suffix: "",
    },
};

/// perf, which profiles the tiers' processes with `--profile`.
pub const PERF: Need = Need { package: "linux-perf", what: What::Program("perf") };
/// php-excimer, which samples PHP's own stacks in the PHP tiers with `--profile`.
pub const EXCIMER: Need = Need {
    package: "php-excimer",
    what: What::File { dir: "/usr/lib/php", prefix: "", suffix: "/excimer.so" },
};

/// Everything any stack may need, for `loadlab doctor`.
pub const ALL: &[Need] = &[
    NGINX,
    APACHE,
    MOD_PHP,
    PHP_FPM,
    PHP_CGI,
    PHP_CLI,
    PHP_MYSQL,
    SPAWN_FCGI,
    VARNISHD,
    HITCH,
    CADDY,
    MARIADBD,
    MARIADB_INSTALL_DB,
    MARIADB_CLIENT,
    WORDPRESS,
    WORDPRESS_THEME,
    PERF,
    EXCIMER,
];

impl Need {
    /// The program's or file's path, or the error that names the package to install.
    pub fn find(&self) -> Result<PathBuf, Missing> {
        self.locate().ok_or_else(|| Missing {
            program: self.name().to_string(),
            package: self.package.to_string(),
        })
    }

    pub fn installed(&self) -> bool {
        self.locate().is_some()
    }

    /// Where it was found, if it was.
    pub fn path(&self) -> Option<PathBuf> {
        self.locate()
    }

    /// What is looked for, as a person would name it.
    pub fn name(&self) -> &'static str {
        match self.what {
            What::Program(name) | What::VersionedProgram(name) => name,
            What::File { prefix, .. } if !prefix.is_empty() => prefix,
            What::File { suffix, .. } => suffix.trim_start_matches('/'),
        }
    }

    fn locate(&self) -> Option<PathBuf> {
        match self.what {
            What::Program(name) => {
                search_path().into_iter().map(|dir| dir.join(name)).find(|p| is_executable(p))
            }
            What::VersionedProgram(name) => search_path()
                .into_iter()
                .flat_map(|dir| newest(&dir, name, "", is_executable))
                .next(),
            What::File { dir, prefix, suffix: "" } => {
                Some(Path::new(dir).join(prefix)).filter(|p| p.exists())
            }
            What::File { dir, prefix, suffix } => {
                newest(Path::new(dir), prefix, suffix, |p| p.exists())
            }
        }
    }
}

/// The directories searched for programs: `LOADLAB_SEARCH_PATH` when set (for tests and
/// unusual installs), else `PATH` plus the `sbin` directories, where Debian puts daemons and
/// which an ordinary user's `PATH` often lacks.
pub fn search_path() -> Vec<PathBuf> {
    if let Some(custom) = std::env::var_os("LOADLAB_SEARCH_PATH") {
        return std::env::split_paths(&custom).collect();
    }
    let mut dirs: Vec<PathBuf> =
        ["/usr/sbin", "/usr/local/sbin", "/sbin"].iter().map(PathBuf::from).collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs
}

/// The entry `dir/PREFIX<version>SUFFIX` with the highest version (`php-fpm8.2`,
/// `libphp8.2.so`); a suffix starting with `/` names a file inside a versioned directory
/// (`/usr/lib/php/20220829/mysqli.so`).
fn newest(dir: &Path, prefix: &str, suffix: &str, ok: fn(&Path) -> bool) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let rest = name.strip_prefix(prefix)?;
            let (version, path) = match suffix.strip_prefix('/') {
                Some(inside) => (rest, dir.join(&name).join(inside)),
                None => (rest.strip_suffix(suffix)?, dir.join(&name)),
            };
            ok(&path).then(|| (version_key(version), path))
        })
        .max()
        .map(|(_, path)| path)
}

/// "8.2.so" -> [8, 2]: numbers compared as numbers, so 8.10 sorts after 8.9.
fn version_key(text: &str) -> Vec<u32> {
    text.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// PHP's `major.minor` from a versioned name such as `php-fpm8.2` or `libphp8.2.so`.
pub fn php_version_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let digits: Vec<u32> = version_key(name);
    (digits.len() >= 2).then(|| format!("{}.{}", digits[0], digits[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_numbers() {
        assert!(version_key("8.10") > version_key("8.9"));
        assert_eq!(version_key("8.2.so"), vec![8, 2]);
    }

    #[test]
    fn php_version_from_names() {
        assert_eq!(php_version_of(Path::new("/usr/sbin/php-fpm8.2")).as_deref(), Some("8.2"));
        assert_eq!(php_version_of(Path::new("/x/libphp8.3.so")).as_deref(), Some("8.3"));
        assert_eq!(php_version_of(Path::new("/usr/bin/php")), None);
    }

    #[test]
    fn newest_picks_the_highest_version() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["libphp7.4.so", "libphp8.2.so", "libphp8.10.so", "other.so"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        let found = newest(dir.path(), "libphp", ".so", |p| p.exists()).unwrap();
        assert_eq!(found, dir.path().join("libphp8.10.so"));
    }

    #[test]
    fn a_missing_program_names_its_package() {
        let err = Need { package: "nginx", what: What::Program("no-such-program-here") }
            .find()
            .unwrap_err();
        assert!(err.to_string().contains("apt-get install nginx"), "{err}");
    }
}

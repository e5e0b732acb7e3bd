//! WordPress from Debian's package, as a site of its own: the package's code in
//! /usr/share/wordpress (directories linked, top-level scripts copied so that WordPress
//! finds this site's wp-config.php beside them, not Debian's, which reads /etc/wordpress),
//! and a blog installed once into the MariaDB template.
//!
//! Each instance has an administrator of its own: `loadlab` with a password made when the
//! instance is prepared, kept in its run directory (`wordpress-admin.json`, mode 0600; `stack
//! show` says where, never the password, which a stored run would keep). MariaDB sets its hash
//! as it starts (`init-file`), so the template's own password, random at install, is never
//! used: a password in loadlab's source would open every stack that listens beyond loopback.
//!
//! Beside it, [`VISITORS`] users of its own for the visitors that log in (`loadlab-1` to
//! `loadlab-256`, subscribers): WordPress keeps one user's sessions in one row that each login
//! rewrites without a lock, so visitors logging in as one user at once lose each other's
//! sessions. Their passwords are one random secret and the visitor's number, kept beside the
//! administrator's (`wordpress-visitors.json`, 0600), their hashes set by the same `init-file`.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::plan::Plan;
use crate::state::make_dir_all;
use crate::supervise;
use crate::template::render;
use crate::workloads::write;
use loadlab_programs as programs;

const WP_CONFIG: &str = include_str!("../../templates/wp-config.php");
const WP_INSTALL: &str = include_str!("../../templates/wp-install.php");

/// Writes the site into `docroot`, talking to the database at `db_host` (`127.0.0.1:PORT`,
/// or `localhost:/path/to/socket`).
pub fn write_site(docroot: &Path, id: &str, db_host: &str) -> Result<()> {
    let package = programs::WORDPRESS.find()?;
    let package = package.parent().expect("wp-settings.php has a directory");
    let themes = programs::WORDPRESS_THEME.find()?;
    let themes = themes.parent().expect("a theme has a directory");
    mirror(package, docroot, &["wp-config.php", "wp-content", "wp-admin"])?;
    // wp-admin's scripts load `dirname(__DIR__)/wp-load.php`, which through a linked
    // directory is the package's, and so Debian's config: the dashboard needs them copied too.
    mirror(&package.join("wp-admin"), &docroot.join("wp-admin"), &[])?;
    let content = docroot.join("wp-content");
    make_dir_all(&content.join("plugins"))?;
    make_dir_all(&content.join("uploads"))?;
    symlink(themes, content.join("themes")).context(|| "linking the themes")?;
    let config = render(WP_CONFIG, &[("id", id.to_string()), ("db_host", db_host.to_string())]);
    write(&docroot.join("wp-config.php"), config.as_bytes())
}

/// Makes `to` a copy of `from` in which the top-level PHP scripts are copied (PHP resolves a
/// script's `__DIR__` through links, so each finds its site's files beside it) and everything
/// else is linked; `skip` names entries left out.
fn mirror(from: &Path, to: &Path, skip: &[&str]) -> Result<()> {
    make_dir_all(to)?;
    for entry in fs::read_dir(from).context(|| format!("reading {}", from.display()))? {
        let entry = entry.context(|| format!("reading {}", from.display()))?;
        let name = entry.file_name();
        let (src, dst) = (entry.path(), to.join(&name));
        match name.to_str() {
            Some(n) if skip.contains(&n) => continue,
            Some(n) if n.ends_with(".php") => {
                let bytes = fs::read(&src).context(|| format!("reading {}", src.display()))?;
                write(&dst, &bytes)?;
            }
            _ => symlink(&src, &dst).context(|| format!("linking {}", dst.display()))?,
        }
    }
    Ok(())
}

/// What [`write_site`] makes in a docroot that a file of the user's must not replace: the
/// package's top-level entries, this site's wp-config.php, and the themes link in wp-content
/// (whose `plugins` and `uploads` are directories of the site's own, which the user's files
/// may join). Only what is installed is listed: without the package the stack does not
/// start anyway, and says which package to install.
pub fn site_entries() -> Vec<String> {
    let mut names = vec!["wp-config.php".to_string(), "wp-content/themes".to_string()];
    let package = programs::WORDPRESS.path();
    let listing = package.as_deref().and_then(Path::parent).and_then(|p| fs::read_dir(p).ok());
    for entry in listing.into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "wp-content" && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The site of an instance, on the instance's MariaDB port.
pub fn write_instance_site(plan: &Plan) -> Result<()> {
    write_site(&plan.docroot(), &plan.id, &format!("127.0.0.1:{}", plan.port("mariadb")))
}

/// Installs the blog into the database behind `socket`, from a throwaway site in `dir`.
pub fn install(dir: &Path, socket: &Path) -> Result<()> {
    let site = dir.join("site");
    write_site(&site, "template", &format!("localhost:{}", socket.display()))?;
    write(&site.join("loadlab-install.php"), WP_INSTALL.as_bytes())?;
    let mut php = Command::new(programs::PHP_CLI.find()?);
    php.arg(site.join("loadlab-install.php")).current_dir(&site);
    supervise::run(php, Duration::from_secs(120))?;
    Ok(())
}

/// The site's administrator, as a visit logs in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Admin {
    pub user: String,
    pub password: String,
}

/// The user the template's install creates (templates/wp-install.php).
const ADMIN_USER: &str = "loadlab";

/// Where an instance's administrator is kept.
pub fn admin_file(run: &Path) -> PathBuf {
    run.join("wordpress-admin.json")
}

/// The SQL MariaDB runs as it starts (its `init-file`): the administrator's password hash.
pub fn init_file(run: &Path) -> PathBuf {
    run.join("mariadb/init.sql")
}

impl Admin {
    /// The administrator of the instance whose run directory is `run`.
    pub fn read(run: &Path) -> Result<Admin> {
        let path = admin_file(run);
        let text = fs::read_to_string(&path).context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| Error::Command {
            command: format!("reading {}", path.display()),
            reason: e.to_string(),
        })
    }
}

/// The administrator as `stack show` prints it and a run stores it with its configs: the user
/// and where its password is, never the password itself, which a stored run, its report and its
/// JSON would carry to whoever reads them (the file is its owner's alone).
pub fn capture_admin(plan: &Plan) -> crate::Captured {
    let text = match Admin::read(&plan.run) {
        Ok(a) => format!(
            "user: {}\npassword: in {} (mode 0600)\nvisitors' users: {ADMIN_USER}-1 to \
             {ADMIN_USER}-{VISITORS}, passwords in {}\nlog in at {}wp-login.php; the built-in \
             visit wordpress:login gives each visitor its own user",
            a.user,
            admin_file(&plan.run).display(),
            visitors_file(&plan.run).display(),
            plan.url()
        ),
        Err(e) => format!("capture failed: {e}"),
    };
    crate::Captured { tier: "wordpress".into(), what: "administrator".into(), text }
}

/// Makes the instance's administrator and its visitors' users: new passwords, kept in the run
/// directory, and the SQL that sets their hashes when MariaDB starts. The hashes are
/// WordPress's own (phpass, as `wp_hash_password` makes them), so that a login does the work it
/// does on any site.
pub fn prepare_admin(plan: &Plan) -> Result<Admin> {
    let admin = Admin { user: ADMIN_USER.to_string(), password: password()? };
    let path = admin_file(&plan.run);
    let json = serde_json::to_string_pretty(&admin).expect("two strings serialise");
    write_private(&path, json.as_bytes())?;
    let visitors = Visitors { count: VISITORS, secret: password()? };
    let json = serde_json::to_string_pretty(&visitors).expect("a number and a string serialise");
    write_private(&visitors_file(&plan.run), json.as_bytes())?;
    let hashes = hash_passwords(&path, &visitors_file(&plan.run))?;
    // One statement per line: MariaDB's init-file reads it so.
    let mut sql = format!(
        "UPDATE wordpress.wp_users SET user_pass = '{}' WHERE user_login = '{}';\n",
        hashes[0], admin.user
    );
    sql.push_str(&visitors.sql(&hashes[1..]));
    write_private(&init_file(&plan.run), sql.as_bytes())?;
    Ok(admin)
}

/// The phpass hashes of the administrator's password (the first) and of each visitor's, in
/// order. The passwords go by their files, not by an argument or the environment, which a
/// failed command's error message would show.
fn hash_passwords(admin: &Path, visitors: &Path) -> Result<Vec<String>> {
    let package = programs::WORDPRESS.find()?;
    let phpass = package.parent().expect("a directory").join("wp-includes/class-phpass.php");
    let mut php = Command::new(programs::PHP_CLI.find()?);
    php.arg("-r")
        .arg(
            "require $argv[1]; $h = new PasswordHash(8, true); \
             echo $h->HashPassword(json_decode(file_get_contents($argv[2]))->password), \"\\n\"; \
             $v = json_decode(file_get_contents($argv[3])); \
             for ($k = 1; $k <= $v->count; $k++) \
             echo $h->HashPassword($v->secret . '-' . $k), \"\\n\";",
        )
        .arg("--")
        .arg(phpass)
        .arg(admin)
        .arg(visitors);
    let out = supervise::run(php, Duration::from_secs(60))?;
    let hashes: Vec<String> = out.lines().map(str::to_string).collect();
    let phpass = |h: &String| h.starts_with("$P$") && h.bytes().all(|b| b.is_ascii_graphic());
    if hashes.len() != VISITORS + 1 || !hashes.iter().all(phpass) {
        return Err(Error::Command {
            command: "php-cli hashing the WordPress passwords".into(),
            reason: format!("not {} phpass hashes: {:?}", VISITORS + 1, hashes.first()),
        });
    }
    Ok(hashes)
}

/// How many visitors of an instance have a WordPress user each: more than any closed
/// population the lab's suites log in with, and a login visit's `-c` above it is refused.
pub const VISITORS: usize = 256;

/// The visitors' WordPress users are numbered from this id on (visitor k is user id
/// `VISITOR_IDS + k`), clear of the administrator's and of users a site would add by hand.
const VISITOR_IDS: usize = 1000;

/// The instance's users for the visitors that log in: visitor k (from 1) is `loadlab-k`, with
/// the password `SECRET-k`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Visitors {
    pub count: usize,
    pub secret: String,
}

/// Where an instance's visitors' users are kept.
pub fn visitors_file(run: &Path) -> PathBuf {
    run.join("wordpress-visitors.json")
}

impl Visitors {
    /// The visitors' users of the instance whose run directory is `run`.
    pub fn read(run: &Path) -> Result<Visitors> {
        let path = visitors_file(run);
        let text = fs::read_to_string(&path).context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| Error::Command {
            command: format!("reading {}", path.display()),
            reason: e.to_string(),
        })
    }

    /// The user name of visitor `{visitor}`, as a visit is given it.
    pub fn user(&self) -> String {
        format!("{ADMIN_USER}-{{visitor}}")
    }

    /// The password of visitor `{visitor}`, as a visit is given it.
    pub fn password(&self) -> String {
        format!("{}-{{visitor}}", self.secret)
    }

    /// The SQL that makes (or, at a restart, resets) the visitors' users with `hashes`, one
    /// statement a line: subscribers (a member's dashboard; an editor's would write a draft
    /// post at each view), their sessions emptied.
    fn sql(&self, hashes: &[String]) -> String {
        let (first, last) = (VISITOR_IDS + 1, VISITOR_IDS + self.count);
        let users: Vec<String> = (1..=self.count)
            .zip(hashes)
            .map(|(k, hash)| {
                let login = format!("{ADMIN_USER}-{k}");
                format!(
                    "({id},'{login}','{hash}','{login}','{login}@example.invalid',\
                     '2009-01-01 00:00:00','{login}')",
                    id = VISITOR_IDS + k
                )
            })
            .collect();
        let meta: Vec<String> = (first..=last)
            .map(|id| {
                format!(
                    "({id},'wp_capabilities','a:1:{{s:10:\"subscriber\";b:1;}}'),\
                     ({id},'wp_user_level','0')"
                )
            })
            .collect();
        format!(
            "INSERT INTO wordpress.wp_users (ID, user_login, user_pass, user_nicename, \
             user_email, user_registered, display_name) VALUES {} \
             ON DUPLICATE KEY UPDATE user_pass = VALUES(user_pass);\n\
             DELETE FROM wordpress.wp_usermeta WHERE user_id BETWEEN {first} AND {last};\n\
             INSERT INTO wordpress.wp_usermeta (user_id, meta_key, meta_value) VALUES {};\n",
            users.join(","),
            meta.join(",")
        )
    }
}

/// 24 letters and digits from the kernel's random source: about 143 bits, and nothing a
/// form body or a URL must escape.
fn password() -> Result<String> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 24];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context(|| "reading /dev/urandom")?;
    // 256 is not a multiple of 62, so the first 8 letters are a little likelier: a bias of
    // 1 in 32 on a few letters costs well under a bit of the 143.
    Ok(bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect())
}

/// Writes `bytes` to a new file only its owner reads.
fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    make_dir_all(path.parent().expect("inside the run directory"))?;
    let _ = fs::remove_file(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_visitor_is_a_subscriber_of_its_own_with_its_own_hash() {
        let visitors = Visitors { count: 3, secret: "S3cret".into() };
        let hashes: Vec<String> = (1..=3).map(|k| format!("$P$hash{k}")).collect();
        let sql = visitors.sql(&hashes);
        // MariaDB's init-file: one statement a line.
        assert_eq!(sql.lines().count(), 3, "{sql}");
        assert!(sql.lines().all(|l| l.ends_with(';')), "{sql}");
        for k in 1..=3 {
            let row = format!("({},'loadlab-{k}','$P$hash{k}','loadlab-{k}'", 1000 + k);
            assert!(sql.contains(&row), "{row} in {sql}");
            assert!(sql.contains(&format!("({},'wp_user_level','0')", 1000 + k)), "{sql}");
        }
        assert!(sql.contains("BETWEEN 1001 AND 1003"), "{sql}");
        assert!(!sql.contains("S3cret"), "only hashes go to MariaDB: {sql}");
        assert_eq!(
            (visitors.user(), visitors.password()),
            ("loadlab-{visitor}".into(), "S3cret-{visitor}".into())
        );
    }
}

//! WordPress from Debian's package, as a site of its own: the package's code in
//! /usr/share/wordpress (directories linked, top-level scripts copied so that WordPress
//! finds this site's wp-config.php beside them, not Debian's, which reads /etc/wordpress),
//! and a blog installed once into the MariaDB template.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::error::{IoContext, Result};
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
    make_dir_all(docroot)?;
    for entry in fs::read_dir(package).context(|| format!("reading {}", package.display()))? {
        let entry = entry.context(|| format!("reading {}", package.display()))?;
        let name = entry.file_name();
        let (src, dst) = (entry.path(), docroot.join(&name));
        match name.to_str() {
            Some("wp-config.php" | "wp-content") => continue,
            Some(n) if n.ends_with(".php") => {
                let bytes = fs::read(&src).context(|| format!("reading {}", src.display()))?;
                write(&dst, &bytes)?;
            }
            _ => symlink(&src, &dst).context(|| format!("linking {}", dst.display()))?,
        }
    }
    let content = docroot.join("wp-content");
    make_dir_all(&content.join("plugins"))?;
    make_dir_all(&content.join("uploads"))?;
    symlink(themes, content.join("themes")).context(|| "linking the themes")?;
    let config = render(WP_CONFIG, &[("id", id.to_string()), ("db_host", db_host.to_string())]);
    write(&docroot.join("wp-config.php"), config.as_bytes())
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

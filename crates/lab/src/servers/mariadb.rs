//! MariaDB: `mariadbd --defaults-file` on a datadir of its own. The datadir is copied from a
//! template kept in the state directory (initialised once with mariadb-install-db, the
//! Country table and, for WordPress, an installed blog), so that a start takes a second,
//! not the install's ten.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::catalog::Tier;
use crate::error::{Error, IoContext, Result};
use crate::servers::{capture_file, capture_version, country, user_line, wordpress};
use crate::servers::{Captured, Generated, Plan, Probe, Server};
use crate::state::{make_dir_all, StateDir};
use crate::supervise;
use crate::sys::is_root;
use crate::template::render;
use crate::wait;
use loadlab_programs as programs;

const CNF: &str = include_str!("../../templates/mariadb.cnf");
/// Bumped whenever what a template holds changes, so old templates are not reused.
const TEMPLATE_VERSION: u32 = 2;
const START_LIMIT: Duration = Duration::from_secs(30);

pub struct Mariadb;

/// The SQL run once on a fresh datadir: the workloads' database and user.
const SETUP_SQL: &str = "CREATE DATABASE loadlab;
CREATE DATABASE wordpress;
CREATE USER 'loadlab'@'127.0.0.1' IDENTIFIED BY 'loadlab';
CREATE USER 'loadlab'@'localhost' IDENTIFIED BY 'loadlab';
GRANT ALL ON loadlab.* TO 'loadlab'@'127.0.0.1', 'loadlab'@'localhost';
GRANT ALL ON wordpress.* TO 'loadlab'@'127.0.0.1', 'loadlab'@'localhost';
";

impl Mariadb {
    fn cnf(plan: &Plan) -> PathBuf {
        plan.run.join("mariadb/my.cnf")
    }

    /// The client, connected as root over the instance's unix socket.
    pub fn client(plan: &Plan) -> Result<Command> {
        let mut command = Command::new(programs::MARIADB_CLIENT.find()?);
        command.arg(format!("--defaults-file={}", Self::cnf(plan).display())).arg("-uroot");
        Ok(command)
    }
}

impl Server for Mariadb {
    fn tier(&self) -> Tier {
        Tier::Mariadb
    }

    fn configs(&self, plan: &Plan) -> Vec<Generated> {
        let mut vars = plan.common_vars();
        vars.extend([
            ("bind", plan.bind(Tier::Mariadb).to_string()),
            ("port", plan.port("mariadb").to_string()),
            // As root mariadbd refuses to start unless told to stay root.
            ("user", user_line(plan, |_, _| "user = root\n".to_string())),
            // WordPress's administrator gets the instance's own password as the server starts.
            (
                "init_file",
                match plan.stack.wordpress {
                    true => format!("init-file = {}\n", wordpress::init_file(&plan.run).display()),
                    false => String::new(),
                },
            ),
        ]);
        vec![("mariadb/my.cnf".into(), render(CNF, &vars))]
    }

    fn prepare(&self, plan: &Plan, state: &StateDir) -> Result<()> {
        let template = ensure_template(state, plan.stack.wordpress)?;
        if plan.stack.wordpress {
            wordpress::prepare_admin(plan)?;
        }
        copy_tree(&template, &plan.run.join("mariadb/data"))
    }

    fn command(&self, plan: &Plan) -> Result<Command> {
        let mut command = Command::new(programs::MARIADBD.find()?);
        command.arg(format!("--defaults-file={}", Self::cnf(plan).display()));
        Ok(command)
    }

    fn probe(&self, plan: &Plan) -> Probe {
        Probe::Tcp(plan.port("mariadb"))
    }

    fn capture(&self, plan: &Plan) -> Vec<Captured> {
        let mut out = vec![capture_version("mariadb", &programs::MARIADBD, "--version")];
        out.push(capture_file("mariadb", "my.cnf", &Self::cnf(plan)));
        out
    }
}

/// The datadir template for these contents, built first if it is not there yet. A lock
/// file serialises builders: a second loadlab waits and then copies the first one's work.
pub fn ensure_template(state: &StateDir, wordpress: bool) -> Result<PathBuf> {
    let root = state.templates();
    make_dir_all(&root)?;
    // "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu ...": an upgraded
    // server gets a template of its own.
    let mut query = Command::new(programs::MARIADBD.find()?);
    query.arg("--version");
    let version = supervise::run(query, Duration::from_secs(10))?;
    let version = version.split_whitespace().nth(2).unwrap_or("unknown").to_string();
    let kind = if wordpress { "wordpress" } else { "country" };
    let name = format!("mariadb-{version}-{kind}-v{TEMPLATE_VERSION}");
    let done = root.join(&name);
    let lock_path = root.join(".lock");
    let lock =
        fs::File::create(&lock_path).context(|| format!("creating {}", lock_path.display()))?;
    // Released when `lock` is closed.
    crate::sys::lock_exclusive(&lock).context(|| "locking the template directory")?;
    if done.join("data").is_dir() {
        return Ok(done.join("data"));
    }
    let build = root.join(format!("{name}.build"));
    let _ = fs::remove_dir_all(&build);
    make_dir_all(&build)?;
    build_template(&build, wordpress)?;
    // Only the datadir is kept; the build's socket, logs and scripts go.
    let keep = root.join(format!("{name}.keep"));
    let _ = fs::remove_dir_all(&keep);
    make_dir_all(&keep)?;
    fs::rename(build.join("data"), keep.join("data")).context(|| "keeping the datadir")?;
    fs::rename(&keep, &done).context(|| format!("publishing {}", done.display()))?;
    let _ = fs::remove_dir_all(&build);
    drop(lock);
    Ok(done.join("data"))
}

/// Initialises a datadir in `dir/data`, starts a private server on a unix socket only, loads
/// the Country table (and installs WordPress), and shuts the server down cleanly.
fn build_template(dir: &Path, wordpress: bool) -> Result<()> {
    let data = dir.join("data");
    let log = dir.join("build.log");
    let mut install = Command::new(programs::MARIADB_INSTALL_DB.find()?);
    install
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
        .arg("--innodb-log-file-size=8M");
    if is_root() {
        install.arg("--user=root");
    }
    supervise::run(install, Duration::from_secs(120))?;

    let socket = dir.join("s.sock");
    let cnf = dir.join("my.cnf");
    let user = if is_root() { "user = root\n" } else { "" };
    let text = format!(
        "[mariadbd]\n{user}datadir = {}\nsocket = {}\nskip-networking\npid-file = {}\n\
         log-error = {}\nperformance-schema = OFF\ninnodb-log-file-size = 8M\n\
         [client]\nsocket = {}\n",
        data.display(),
        socket.display(),
        dir.join("mariadbd.pid").display(),
        log.display(),
        socket.display(),
    );
    fs::write(&cnf, text).context(|| format!("writing {}", cnf.display()))?;
    let mut server = Command::new(programs::MARIADBD.find()?);
    server.arg(format!("--defaults-file={}", cnf.display()));
    let leader = supervise::spawn(server, &log, None, None)?;
    let outcome = (|| {
        let ready = wait::until(START_LIMIT, || {
            std::os::unix::net::UnixStream::connect(&socket).is_ok()
                || !supervise::group_alive(leader)
        });
        if !ready || !supervise::group_alive(leader) {
            return Err(Error::Start {
                tier: "mariadb (template)".into(),
                reason: "the server did not come up".into(),
                log: supervise::tail(&log),
            });
        }
        let sql = dir.join("setup.sql");
        fs::write(&sql, format!("{SETUP_SQL}{}", country::sql()))
            .context(|| format!("writing {}", sql.display()))?;
        let mut client = Command::new(programs::MARIADB_CLIENT.find()?);
        client
            .arg(format!("--defaults-file={}", cnf.display()))
            .arg("-uroot")
            .arg("-e")
            .arg(format!("source {}", sql.display()));
        supervise::run(client, Duration::from_secs(60))?;
        if wordpress {
            wordpress::install(dir, &socket)?;
        }
        Ok(())
    })();
    let stopped = supervise::stop_groups("mariadb template", &[leader], supervise::STOP_GRACE);
    outcome.and(stopped)
}

/// Copies a directory tree (regular files and directories; a datadir holds nothing else).
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    make_dir_all(to)?;
    for entry in fs::read_dir(from).context(|| format!("reading {}", from.display()))? {
        let entry = entry.context(|| format!("reading {}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().context(|| format!("reading {}", src.display()))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(())
}

//! The state directory: one JSON record per running instance (its tiers' process ids and
//! start times, its owner, its run directory), so that `down` from another process, and the
//! next start after a crash, find every process loadlab started.

use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::knobs::Knobs;
use crate::plan::TlsFiles;
use crate::procfs::ProcId;
use crate::sys::is_root;
use crate::tier::Tier;

/// A running (or crashed) instance of a stack, as recorded on disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub stack: String,
    /// Where clients go: `http://127.0.0.1:PORT/`, or `mysql://...` for the database alone.
    pub url: String,
    pub run_dir: PathBuf,
    pub knobs: Knobs,
    /// The process that must stay alive for the instance to be wanted: the loadlab that is
    /// starting it, or that runs it in the foreground. `None` once `stack up` has handed it
    /// over to the user, who ends it with `stack down`.
    pub owner: Option<ProcId>,
    pub created_unix_ms: u64,
    pub tiers: Vec<TierRecord>,
    /// The namespace and link of a stack behind a network profile; `None` on loopback.
    #[serde(default)]
    pub net: Option<loadlab_net::Link>,
    /// With `--listen`: where the front tier listens and is reached, and its shaping behind a
    /// profile (removed with the instance); `None` on loopback. Not written when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<loadlab_net::host::Exposure>,
}

/// One tier of a recorded instance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierRecord {
    pub name: String,
    pub tier: Tier,
    /// The server's first process, leader of its session and process group; `None` until
    /// it has been started.
    pub leader: Option<ProcId>,
    pub port: Option<u16>,
    pub socket: Option<PathBuf>,
}

impl Record {
    /// An instance as recorded before any of it starts: default knobs, no owner process, no
    /// tiers, on loopback; whoever starts it fills in the rest.
    pub fn unstarted(id: String, stack: String, url: String, run_dir: PathBuf) -> Record {
        Record {
            id,
            stack,
            url,
            run_dir,
            knobs: Knobs::default(),
            owner: None,
            created_unix_ms: 0,
            tiers: vec![],
            net: None,
            listen: None,
        }
    }

    /// Where clients reach the instance: 127.0.0.1, its namespace's end of the link, or the
    /// address it listens on (`--listen`).
    pub fn host(&self) -> std::net::IpAddr {
        match (&self.net, &self.listen) {
            (Some(l), _) => l.ns_ip.into(),
            (None, Some(e)) => e.public,
            (None, None) => loadlab_net::host::LOOPBACK,
        }
    }

    /// Where `tier` listens on TCP, as a client reaches it: with `--listen` only the front
    /// (the first tier) is beyond loopback.
    pub fn tier_addr(&self, tier: &TierRecord) -> Option<std::net::SocketAddr> {
        let front = self.tiers.first().is_some_and(|t| t.name == tier.name);
        let host =
            if self.listen.is_some() && !front { loadlab_net::host::LOOPBACK } else { self.host() };
        Some(std::net::SocketAddr::new(host, tier.port?))
    }

    /// The CA a client trusts the instance by, when its front speaks TLS.
    pub fn cacert(&self) -> Option<PathBuf> {
        self.knobs.tls.is_on().then(|| TlsFiles::in_run(&self.run_dir).ca)
    }

    /// The leaders of the tiers started so far.
    pub fn leaders(&self) -> Vec<ProcId> {
        self.tiers.iter().filter_map(|t| t.leader).collect()
    }

    pub fn tier(&self, name: &str) -> Option<&TierRecord> {
        self.tiers.iter().find(|t| t.name == name)
    }
}

/// Where loadlab keeps its records and templates.
#[derive(Clone, Debug)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// `LOADLAB_STATE_DIR`, else `$XDG_STATE_HOME/loadlab`, else `~/.local/state/loadlab`.
    pub fn from_env() -> Result<StateDir> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let root = if let Some(dir) = var("LOADLAB_STATE_DIR") {
            dir
        } else if let Some(dir) = var("XDG_STATE_HOME") {
            dir.join("loadlab")
        } else if let Some(home) = var("HOME") {
            home.join(".local/state/loadlab")
        } else {
            return Err(Error::Io {
                context: "finding the state directory".into(),
                source: std::io::Error::new(
                    ErrorKind::NotFound,
                    "neither LOADLAB_STATE_DIR, XDG_STATE_HOME nor HOME is set",
                ),
            });
        };
        Ok(StateDir::at(root))
    }

    pub fn at(root: impl Into<PathBuf>) -> StateDir {
        StateDir { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn records(&self) -> PathBuf {
        self.root.join("instances")
    }

    /// Templates kept between instances (an initialised MariaDB datadir).
    pub fn templates(&self) -> PathBuf {
        self.root.join("templates")
    }

    /// Where instances' run directories go. Servers' workers run unprivileged when loadlab
    /// runs as root (Apache refuses to serve as root), so they must be able to reach the
    /// document root: under a home directory that others cannot enter (`/root` is 0700),
    /// run directories go to `/run/loadlab-<uid>-<hash of the state dir>` instead.
    pub fn run_root(&self) -> PathBuf {
        let inside = self.root.join("run");
        if !is_root() || reachable_by_others(&self.root) {
            return inside;
        }
        PathBuf::from(format!("/run/loadlab-{}", short_hash(&self.root.to_string_lossy())))
    }

    /// Creates the directories the state needs, readable by others (see [`run_root`]).
    pub fn ensure(&self) -> Result<()> {
        for dir in [self.records(), self.templates(), self.run_root()] {
            make_dir_all(&dir)?;
        }
        Ok(())
    }

    /// Claims the first free id `NAME-N` by creating its record file, so that two loadlabs
    /// starting the same stack at once get different ids.
    pub fn claim_id(&self, name: &str) -> Result<String> {
        self.ensure()?;
        for n in 1.. {
            let id = format!("{name}-{n}");
            match fs::OpenOptions::new().write(true).create_new(true).open(self.record_path(&id)) {
                Ok(_) => return Ok(id),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).context(|| format!("creating a record for {id}")),
            }
        }
        unreachable!("ids are unbounded")
    }

    fn record_path(&self, id: &str) -> PathBuf {
        self.records().join(format!("{id}.json"))
    }

    /// Writes the record atomically (a reader never sees half of it).
    pub fn save(&self, record: &Record) -> Result<()> {
        let path = self.record_path(&record.id);
        let tmp = path.with_extension("json.tmp");
        let json = serde_json::to_vec_pretty(record).expect("records serialise");
        let mut file = fs::File::create(&tmp).context(|| format!("writing {}", tmp.display()))?;
        file.write_all(&json).context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, &path).context(|| format!("renaming {}", tmp.display()))
    }

    pub fn load(&self, id: &str) -> Result<Record> {
        let path = self.record_path(id);
        let text = match fs::read_to_string(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(Error::NoSuchInstance(id.to_string()))
            }
            other => other.context(|| format!("reading {}", path.display()))?,
        };
        serde_json::from_str(&text).map_err(|e| Error::BadRecord { path, reason: e.to_string() })
    }

    /// Every record, oldest id first. A record claimed but not yet written is skipped.
    pub fn all(&self) -> Result<Vec<Record>> {
        let dir = self.records();
        let entries = match fs::read_dir(&dir) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            other => other.context(|| format!("reading {}", dir.display()))?,
        };
        let mut records = Vec::new();
        for entry in entries {
            let name = entry.context(|| format!("reading {}", dir.display()))?.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            match self.load(id) {
                Ok(record) => records.push(record),
                Err(Error::BadRecord { .. }) | Err(Error::NoSuchInstance(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        records.sort_by(|a, b| a.created_unix_ms.cmp(&b.created_unix_ms).then(a.id.cmp(&b.id)));
        Ok(records)
    }

    /// Ids whose record file was claimed but never written (or is unreadable) and is older
    /// than `age`: what a start that crashed right after claiming its id leaves.
    pub fn claims_older_than(&self, age: std::time::Duration) -> Result<Vec<String>> {
        let dir = self.records();
        let entries = match fs::read_dir(&dir) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            other => other.context(|| format!("reading {}", dir.display()))?,
        };
        let mut ids = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|e| e >= age));
            if old && matches!(self.load(id), Err(Error::BadRecord { .. })) {
                ids.push(id.to_string());
            }
        }
        Ok(ids)
    }

    /// Removes the record, freeing its id, and the run root outside the state directory once
    /// it is empty (see [`StateDir::release_run_root`]). Every way an instance ends (down, a
    /// failed start, a stale one cleaned) forgets it after its run directory is gone.
    pub fn forget(&self, id: &str) -> Result<()> {
        match fs::remove_file(self.record_path(id)) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                return Err(e).context(|| format!("removing the record of {id}"))
            }
            _ => {}
        }
        self.release_run_root();
        Ok(())
    }

    /// Removes a run root under `/run` (see [`StateDir::run_root`]) that no instance's run
    /// directory is in any more: nothing else would, and a temp state directory of a test
    /// leaves one behind for every test. `rmdir` refuses a directory that is not empty, so
    /// another instance's run directory keeps it; a start racing this one recreates it, since
    /// run directories are made with their parents ([`make_dir_all`]). A run root inside the
    /// state directory is part of the state and stays.
    fn release_run_root(&self) {
        let run_root = self.run_root();
        if !run_root.starts_with(&self.root) {
            let _ = fs::remove_dir(&run_root);
        }
    }
}

/// Creates `dir` and its missing parents with mode 0755 (see [`StateDir::run_root`]).
pub fn make_dir_all(dir: &Path) -> Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(dir)
        .context(|| format!("creating {}", dir.display()))
}

/// Whether a user other than the owner can reach `path`: every existing ancestor grants
/// others search (x) permission.
fn reachable_by_others(path: &Path) -> bool {
    path.ancestors()
        .filter_map(|p| fs::metadata(p).ok())
        .all(|m| m.permissions().mode() & 0o001 != 0)
}

/// A short stable hash (FNV-1a) to tell apart run roots of different state directories.
fn short_hash(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{:08x}", hash as u32)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn record(state: &StateDir, id: String) -> Record {
        let run_dir = state.run_root().join("x");
        Record::unstarted(id, "nginx".into(), "http://127.0.0.1:1/".into(), run_dir)
    }

    /// A temp state directory others cannot enter, as `/root/.local/state` is.
    pub(crate) fn private_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    #[test]
    fn ids_are_claimed_once_and_records_round_trip() {
        let dir = private_dir();
        let state = StateDir::at(dir.path());
        let a = state.claim_id("nginx").unwrap();
        let b = state.claim_id("nginx").unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("nginx-1", "nginx-2"));
        // Claimed but not yet written: skipped, not an error.
        assert!(state.all().unwrap().is_empty());
        let rec = record(&state, a.clone());
        state.save(&rec).unwrap();
        assert_eq!(state.load(&a).unwrap(), rec);
        assert_eq!(state.all().unwrap(), vec![rec]);
        state.forget(&a).unwrap();
        assert!(matches!(state.load(&a), Err(Error::NoSuchInstance(_))));
        assert_eq!(state.claim_id("nginx").unwrap(), "nginx-1");
        state.forget("nginx-1").unwrap();
        state.forget(&b).unwrap();
        assert!(!state.run_root().exists() || state.run_root().starts_with(dir.path()));
    }

    /// As root, with a state directory others cannot enter (a test's temp dir), run
    /// directories go to `/run/loadlab-HASH`; that directory goes with the last instance in
    /// it, not before, and no stopped instance leaves it behind empty.
    #[test]
    fn the_run_root_under_run_goes_with_its_last_instance() {
        let dir = private_dir();
        let state = StateDir::at(dir.path());
        let run_root = state.run_root();
        assert_eq!(is_root(), !run_root.starts_with(dir.path()), "{run_root:?}");
        let a = state.claim_id("nginx").unwrap();
        let b = state.claim_id("nginx").unwrap();
        make_dir_all(&run_root.join(&b)).unwrap();
        state.forget(&a).unwrap();
        assert!(run_root.join(&b).is_dir(), "another instance's run directory keeps it");
        fs::remove_dir(run_root.join(&b)).unwrap();
        state.forget(&b).unwrap();
        if run_root.starts_with(dir.path()) {
            // Not root, or a state directory others can enter: the run root is the state's.
            assert!(run_root.is_dir());
        } else {
            assert!(!run_root.exists(), "{} left behind", run_root.display());
        }
    }
}

//! The local records of remote stacks held in the background: `stack up --host` without
//! `--foreground` leaves an owner process holding the ssh session, and records it here
//! (`STATE/remote/HOST--ID.json`) so that `stack list` and `stack down` find it. The owner
//! removes its record when its session ends; a record whose owner is gone (killed with -9)
//! is dropped when read, since its session, and so the remote stack, ended with it.

use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use loadlab_lab::procfs::{self, ProcId};
use loadlab_lab::StateDir;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{IoContext, Result};

/// A remote stack and the local process holding its session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Held {
    /// `ssh://...` as given.
    pub host: String,
    /// The instance's id on that host.
    pub id: String,
    pub url: String,
    pub owner: ProcId,
    /// The instance as the remote's `stack up --json` printed it.
    pub instance: Value,
}

/// The directory of [`Held`] records.
#[derive(Clone, Debug)]
pub struct Holds {
    dir: PathBuf,
}

impl Holds {
    pub fn new(state: &StateDir) -> Holds {
        Holds { dir: state.root().join("remote") }
    }

    fn path(&self, host_tag: &str, id: &str) -> PathBuf {
        self.dir.join(format!("{host_tag}--{id}.json"))
    }

    /// Records `held` (atomically), under `host_tag` ([`crate::Host::file_tag`]).
    pub fn save(&self, host_tag: &str, held: &Held) -> Result<()> {
        fs::create_dir_all(&self.dir).context(|| format!("creating {}", self.dir.display()))?;
        let path = self.path(host_tag, &held.id);
        let tmp = path.with_extension("json.tmp");
        let json = serde_json::to_vec_pretty(held).expect("records serialise");
        fs::write(&tmp, json).context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, &path).context(|| format!("renaming {}", tmp.display()))
    }

    pub fn forget(&self, host_tag: &str, id: &str) -> Result<()> {
        match fs::remove_file(self.path(host_tag, id)) {
            Err(e) if e.kind() != ErrorKind::NotFound => {
                Err(e).context(|| format!("removing the record of {id}"))
            }
            _ => Ok(()),
        }
    }

    /// The records whose owner still runs; the others are removed.
    pub fn all(&self) -> Result<Vec<Held>> {
        let entries = match fs::read_dir(&self.dir) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            other => other.context(|| format!("reading {}", self.dir.display()))?,
        };
        let mut all = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let held = fs::read(&path).ok().and_then(|b| serde_json::from_slice::<Held>(&b).ok());
            match held {
                Some(held) if procfs::alive(held.owner) => all.push(held),
                _ => {
                    let _ = fs::remove_file(&path);
                }
            }
        }
        all.sort_by(|a, b| (&a.host, &a.id).cmp(&(&b.host, &b.id)));
        Ok(all)
    }

    /// The held stacks with this id, on `host` if given.
    pub fn find(&self, id: &str, host: Option<&str>) -> Result<Vec<Held>> {
        let mut found = self.all()?;
        found.retain(|h| h.id == id && host.is_none_or(|host| h.host == host));
        Ok(found)
    }
}

/// Asks the owner to end its session (SIGTERM, as `stack down` of a local stack asks its
/// servers) and waits until it has gone, up to `limit`: whether it did.
pub fn release(held: &Held, limit: Duration) -> bool {
    if procfs::alive(held.owner) {
        // SAFETY: kill(2) with a pid and a signal number has no memory effects; the pid is
        // the owner's, checked alive with its start time just above, so it is not reused.
        unsafe { libc::kill(held.owner.pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + limit;
    while procfs::alive(held.owner) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(id: &str, owner: ProcId) -> Held {
        Held {
            host: "ssh://root@b".into(),
            id: id.into(),
            url: "http://10.215.0.2:1/".into(),
            owner,
            instance: Value::Null,
        }
    }

    #[test]
    fn records_of_live_owners_are_found_and_dead_ones_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let holds = Holds::new(&StateDir::at(dir.path()));
        assert!(holds.all().unwrap().is_empty());
        let me = procfs::identify(std::process::id() as i32).unwrap();
        holds.save("root_b", &held("nginx-1", me)).unwrap();
        // The same pid with another start time: a process that is gone, its pid reused.
        holds
            .save("root_b", &held("nginx-2", ProcId { pid: me.pid, start: me.start + 1 }))
            .unwrap();
        let all = holds.all().unwrap();
        assert_eq!(all.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["nginx-1"]);
        assert_eq!(holds.find("nginx-1", Some("ssh://root@b")).unwrap().len(), 1);
        assert!(holds.find("nginx-1", Some("ssh://other")).unwrap().is_empty());
        assert!(holds.find("nginx-2", None).unwrap().is_empty());
        assert_eq!(fs::read_dir(dir.path().join("remote")).unwrap().count(), 1, "dead one removed");
        holds.forget("root_b", "nginx-1").unwrap();
        assert!(holds.all().unwrap().is_empty());
    }
}

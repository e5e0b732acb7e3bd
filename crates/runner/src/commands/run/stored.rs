//! The stored runs that `report`, `runs` and `compare` read: a store that must already exist,
//! the run asked for (or the latest), and what to say of a run that did not finish. Each
//! refusal names the store's file and what it holds.

use std::path::Path;

use loadlab_store::{RunId, RunStatus, Store};

use crate::commands::run::SuiteError;

/// Opens a store that must already exist: reading commands never create one.
pub fn open_existing(path: &Path) -> Result<Store, SuiteError> {
    if !path.exists() {
        return Err(SuiteError::Usage(format!(
            "no store at {} (run `loadlab run` first, or pass --db FILE or --out DIR)",
            path.display()
        )));
    }
    Ok(Store::open(path)?)
}

/// The run asked for, or the latest one; a run the store does not hold is named with the
/// store's file and the runs it does hold.
pub fn pick_run(store: &Store, run: Option<i64>) -> Result<RunId, SuiteError> {
    let held: Vec<i64> = store.runs()?.iter().map(|r| r.run.id.0).collect();
    let path = store.path().display();
    match run {
        Some(id) if held.contains(&id) => Ok(RunId(id)),
        Some(id) => Err(SuiteError::Usage(match (held.first(), held.last()) {
            (Some(a), Some(b)) => format!("run {id} is not in {path}, which holds runs {a} to {b}"),
            _ => format!("run {id} is not in {path}, which holds no run yet"),
        })),
        None => {
            store.latest_run()?.ok_or_else(|| SuiteError::Usage(format!("{path} holds no run yet")))
        }
    }
}

/// For a run that did not finish, the line to say before its figures: which cells they
/// cover, and why there are no more.
pub fn unfinished(store: &Store, id: RunId) -> Result<Option<String>, SuiteError> {
    let run = store.run(id)?;
    let why = match run.status {
        RunStatus::Finished => return Ok(None),
        RunStatus::Crashed => {
            "crashed: the process that ran it is gone (killed, or the machine restarted)".into()
        }
        RunStatus::Interrupted => "was interrupted (Ctrl-C)".to_string(),
        RunStatus::Failed => {
            format!("failed: {}", run.reason.as_deref().unwrap_or("no reason was stored"))
        }
        RunStatus::Running => "is still running".to_string(),
    };
    let cells = store.cells(id)?.len();
    Ok(Some(format!("run {id} {why}; its {cells} finished cells are shown")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_is_not_there_or_holds_no_such_run_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loadlab.db");
        let e = open_existing(&path).err().unwrap();
        assert!(matches!(&e, SuiteError::Usage(m) if m.starts_with("no store at")), "{e}");
        let store = Store::open(&path).unwrap();
        let e = pick_run(&store, Some(3)).err().unwrap();
        assert!(e.to_string().contains("which holds no run yet"), "{e}");
        assert!(pick_run(&store, None).err().unwrap().to_string().ends_with("holds no run yet"));
    }
}

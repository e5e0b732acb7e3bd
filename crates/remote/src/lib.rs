//! loadlab on a lab host over ssh: a stack started on another machine, living exactly as
//! long as the ssh session that started it.
//!
//! - [`Host`]: `ssh://[user@]host[:port]`, parsed once ([`host`]).
//! - [`Ssh`]: the system's ssh or `LOADLAB_SSH_COMMAND`, never prompting ([`ssh`]).
//! - [`provision`]: the loadlab binary there: its own of this version, or this one copied
//!   into a per-user cache; refused, with the reason, where this one cannot run.
//! - [`Session`]: the remote loadlab in the foreground of one ssh session, its events read
//!   and a heartbeat written ([`session`]); the lines themselves are in [`protocol`], the
//!   one module both ends share.
//! - [`agents`]: an agent of `bench --agent-hosts` started on a host through ssh, its secret
//!   on the session's stdin, ending with the session (the remote side's stdin-EOF watch).
//! - [`args`]: the remote `stack up`'s arguments; [`held`]: the local records of sessions
//!   held in the background by an owner process; [`owner`]: this side of `--host` (the
//!   session held, handed to an owner process, or ended; other commands passed through).
//!
//! # For a runner that puts stacks on other hosts
//! Per stack: find the binary, start the session, read the instance, read samples while the
//! load runs, close. Closing (or dropping, or this process dying) takes the stack down.
//! ```no_run
//! # fn main() -> loadlab_remote::Result<()> {
//! use loadlab_remote::{args, protocol::Event, provision, Host, Session, Ssh};
//! use std::process::Stdio;
//! use std::time::Duration;
//!
//! let host: Host = "ssh://root@lab1".parse()?;
//! let ssh = Ssh::from_env()?;
//! let local = provision::Local::this(env!("CARGO_PKG_VERSION"))?;
//! let remote = provision::ensure(&ssh, &host, &local, &mut |note| eprintln!("{note}"))?;
//! let up = args::remote_up_args(&["nginx".into(), "--workers".into(), "2".into()]).unwrap();
//! let mut session = Session::start(&ssh, &host, &remote.program, &up, Stdio::inherit())?;
//! let instance = session.wait_up(Duration::from_secs(120), &|| false)?;
//! println!("{} at {}", instance["id"], instance["url"]);
//! while let Some(event) = session.next(Duration::from_secs(2))? {
//!     if let Event::Sample { sample } = event {
//!         println!("{sample}");
//!         break;
//!     }
//! }
//! let down = session.close()?; // true once the remote said its stack is gone
//! # let _ = down;
//! # Ok(())
//! # }
//! ```
//! The effective configs of a remote instance are `stack show ID --json` there
//! ([`run::finish`] over [`Ssh::command`]).
//!
//! Nothing here prints; errors are [`Error`]s that say which host and why.

pub mod agents;
pub mod apt;
pub mod args;
mod error;
pub mod held;
pub mod host;
pub mod owner;
pub mod protocol;
pub mod provision;
pub mod run;
pub mod session;
pub mod ssh;

pub use error::{Error, Result};
pub use host::Host;
pub use session::Session;
pub use ssh::Ssh;

//! A profiled cell of a stack on a lab host: its tiers' stacks are recorded there, where
//! their processes are (perf cannot follow a pid across machines), by the remote loadlab at
//! this side's `profile start` and `profile stop` (loadlab_remote::protocol), and come back
//! folded over the session that carries the samples.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use loadlab_lab::profiler::Profiles;
use loadlab_remote::protocol::Event;

/// How long the host may take to say it records: perf's own wait for the mappings of every
/// process there (30 s), and the way back.
const START_LIMIT: Duration = Duration::from_secs(45);
/// How long its stacks may take to come at the stop: `perf script` of the cell's recording
/// with every tier's symbols looked up, there, on a machine the load may still keep busy.
const FOLD_LIMIT: Duration = Duration::from_secs(120);

/// What a stack's [`super::Live`] asks of its session's thread.
pub(super) enum Ask {
    /// Have the host record, and tell this sender its `profiling` and `profiles` events.
    StartProfile(Sender<Event>),
    /// Have it stop and send what it recorded.
    StopProfile,
    /// Close the session in order.
    Close,
}

/// One cell's recording on the host, from its start to its stacks.
pub(super) struct RemoteProfile {
    asks: Sender<Ask>,
    events: Receiver<Event>,
    host: String,
    /// What came instead of `profiling` (the host could not profile), or `None` inside when
    /// the session ended (its loss is told as such).
    early: Option<Option<Profiles>>,
}

impl RemoteProfile {
    /// Asks `host`, through its session's `asks`, to record, and returns once it does or
    /// says why it cannot.
    pub(super) fn start(asks: &Sender<Ask>, host: &str) -> RemoteProfile {
        let (to, events) = mpsc::channel();
        let early = match asks.send(Ask::StartProfile(to)) {
            Err(_) => Some(None),
            Ok(()) => match events.recv_timeout(START_LIMIT) {
                Ok(Event::Profiling) => None,
                Ok(Event::Profiles { profiles }) => Some(Some(read(host, profiles))),
                Ok(_) | Err(RecvTimeoutError::Disconnected) => Some(None),
                Err(RecvTimeoutError::Timeout) => Some(Some(refused(format!(
                    "{host} did not start recording within {} s",
                    START_LIMIT.as_secs()
                )))),
            },
        };
        RemoteProfile { asks: asks.clone(), events, host: host.to_string(), early }
    }

    /// Stops the recording and waits for its stacks: `None` when the session ended first.
    pub(super) fn finish(self) -> Option<Profiles> {
        if let Some(early) = self.early {
            return early;
        }
        self.asks.send(Ask::StopProfile).ok()?;
        loop {
            match self.events.recv_timeout(FOLD_LIMIT) {
                Ok(Event::Profiles { profiles }) => return Some(read(&self.host, profiles)),
                Ok(_) => continue,
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => {
                    return Some(refused(format!(
                        "{} sent no profiles within {} s of the cell's end",
                        self.host,
                        FOLD_LIMIT.as_secs()
                    )))
                }
            }
        }
    }
}

/// The host's `profiles`, its refusal said to be there.
fn read(host: &str, profiles: serde_json::Value) -> Profiles {
    match serde_json::from_value::<Profiles>(profiles) {
        Ok(mut p) => {
            p.refused = p.refused.map(|why| format!("on {host}: {why}"));
            p
        }
        Err(e) => refused(format!("{host} sent profiles that cannot be read: {e}")),
    }
}

fn refused(why: String) -> Profiles {
    Profiles { tiers: Vec::new(), refused: Some(why) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_lab::profiler::TierProfile;

    /// A session's thread as a test: answers each ask as `answer` says.
    fn session(answer: fn(&Ask) -> Option<Event>) -> Sender<Ask> {
        let (asks, asked) = mpsc::channel::<Ask>();
        std::thread::spawn(move || {
            let mut to = None;
            for ask in asked {
                if matches!(ask, Ask::Close) {
                    return;
                }
                let event = answer(&ask);
                if let Ask::StartProfile(sender) = ask {
                    to = Some(sender);
                }
                if let (Some(event), Some(to)) = (event, &to) {
                    let _ = to.send(event);
                }
            }
        });
        asks
    }

    fn nginx() -> Profiles {
        let tier = TierProfile {
            tier: "nginx".into(),
            folded: "nginx;ngx_process_events 3\n".into(),
            samples: 3,
            lost: 0,
            interval_us: 10_101,
        };
        Profiles { tiers: vec![tier], refused: None }
    }

    #[test]
    fn the_hosts_stacks_come_back_at_the_stop_and_its_refusal_says_where() {
        let asks = session(|ask| match ask {
            Ask::StartProfile(_) => Some(Event::Profiling),
            Ask::StopProfile => {
                Some(Event::Profiles { profiles: serde_json::to_value(nginx()).unwrap() })
            }
            Ask::Close => None,
        });
        let profile = RemoteProfile::start(&asks, "ssh://root@b");
        assert_eq!(profile.finish(), Some(nginx()));

        let asks = session(|ask| {
            let none = Profiles { tiers: Vec::new(), refused: Some("No permission.".into()) };
            let profiles = serde_json::to_value(none).unwrap();
            matches!(ask, Ask::StartProfile(_)).then_some(Event::Profiles { profiles })
        });
        let refused = RemoteProfile::start(&asks, "ssh://root@b").finish().unwrap();
        assert_eq!(refused.refused.as_deref(), Some("on ssh://root@b: No permission."));
        assert!(refused.tiers.is_empty());
    }

    #[test]
    fn a_session_that_ends_gives_no_profiles() {
        let (asks, asked) = mpsc::channel::<Ask>();
        drop(asked);
        assert_eq!(RemoteProfile::start(&asks, "ssh://root@b").finish(), None);
        // It records, then its session ends before the stacks come.
        let asks = session(|ask| matches!(ask, Ask::StartProfile(_)).then_some(Event::Profiling));
        let profile = RemoteProfile::start(&asks, "ssh://root@b");
        let _ = profile.asks.send(Ask::Close);
        drop(asks);
        assert_eq!(profile.finish(), None);
    }
}

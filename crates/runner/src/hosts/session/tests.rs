//! A cell's window of a session's samples, without ssh: samples stamped as they arrive.

use super::*;
use loadlab_lab::sampler::TierSample;

fn sample(t_ms: u64) -> Sample {
    Sample {
        t_ms,
        unix_ms: 0,
        interval_ms: 1000,
        tiers: vec![TierSample {
            tier: "nginx".into(),
            cpu_user_pct: 10.0,
            cpu_sys_pct: 5.0,
            rss_bytes: 1,
            processes: 2,
            pool: None,
        }],
        machine: None,
    }
}

/// Samples that arrived before the cell are not its; the one after its stop (its last
/// interval) is, and the times are the cell's own.
#[test]
fn a_cell_takes_the_samples_that_arrived_while_it_ran_and_the_next() {
    let samples = Arc::new(Mutex::new(vec![(Instant::now(), sample(4000))]));
    let ended = Arc::new(Mutex::new(None));
    std::thread::sleep(Duration::from_millis(5));
    let window = Box::new(Window {
        from: Instant::now(),
        samples: samples.clone(),
        ended,
        told: Told::default(),
        profile: None,
    });
    lock(&samples).push((Instant::now(), sample(5000)));
    let feeder = {
        let samples = samples.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            lock(&samples).push((Instant::now(), sample(6000)));
            std::thread::sleep(Duration::from_millis(100));
            lock(&samples).push((Instant::now(), sample(7000)));
        })
    };
    let sampled = window.stop();
    feeder.join().unwrap();
    let times: Vec<u64> = sampled.samples.iter().map(|s| s.t_ms).collect();
    assert_eq!(times, vec![1000, 2000], "the 5 s sample and the one after the stop");
    assert_eq!(sampled.cpu, None);
}

/// A session that ended gives what it had at once, without waiting for a sample.
#[test]
fn an_ended_session_does_not_hold_the_cell() {
    let samples = Arc::new(Mutex::new(Vec::new()));
    let ended = Arc::new(Mutex::new(Some("the session ended".to_string())));
    let started = Instant::now();
    let sampled = Box::new(Window {
        from: Instant::now(),
        samples,
        ended,
        told: Told::default(),
        profile: None,
    })
    .stop();
    assert!(sampled.samples.is_empty());
    assert!(started.elapsed() < LAST_SAMPLE_WAIT, "{:?}", started.elapsed());
}

#[test]
fn stack_show_captures_are_read() {
    let shown = serde_json::json!({"instance": {}, "captured": [
        {"tier": "nginx", "what": "nginx -T", "text": "worker_processes 2;"}
    ]});
    let c = captured(&shown);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].tier.as_str(), c[0].what.as_str()), ("nginx", "nginx -T"));
    assert!(captured(&serde_json::json!({})).is_empty());
}

/// An "ssh" that runs the remote command line here (`sh -c`), and a remote end that says up,
/// sends one sample, then nothing, as a host behind a cut path.
fn silent_session(dir: &std::path::Path) -> Session {
    let sample = Event::Sample { sample: serde_json::to_value(sample(1000)).unwrap() };
    session(dir, &format!("printf '%s' '{}'; exec sleep 60", sample.line()))
}

/// A remote end that says up, then runs `then` (a shell line), through an "ssh" that runs
/// the remote command line here (`sh -c`).
fn session(dir: &std::path::Path, then: &str) -> Session {
    let ssh = dir.join("fake-ssh");
    std::fs::write(&ssh, "#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n").unwrap();
    let mut mode = std::fs::metadata(&ssh).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&ssh, mode).unwrap();
    let ssh = Ssh::parse(Some(&ssh.to_string_lossy())).unwrap();
    let up = Event::Up { instance: serde_json::json!({"id": "nginx-1", "url": "http://b/"}) };
    let script = format!("printf '%s' '{}'; {then}", up.line());
    let host: Host = "ssh://root@b".parse().unwrap();
    let args = vec!["-c".to_string(), script];
    let mut session = Session::start(&ssh, &host, "sh", &args, Stdio::null()).unwrap();
    session.wait_up(Duration::from_secs(10), &|| false).unwrap();
    session
}

/// A session that goes silent is lost after the limit: the cell's window says so
/// (the executor stops the cell), and closing it does not wait for ssh's own 15 s.
#[test]
fn a_silent_session_is_lost_after_the_limit_and_closes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let session = silent_session(dir.path());
    let samples = Arc::new(Mutex::new(Vec::new()));
    let ended = Arc::new(Mutex::new(None));
    let (close, closing) = mpsc::channel();
    let silent = Duration::from_millis(600);
    let started = Instant::now();
    let reader = {
        let (samples, ended) = (samples.clone(), ended.clone());
        let heard = Heard { samples, ended, told: Told::default() };
        std::thread::spawn(move || pump(session, &closing, &heard, silent))
    };
    let told = Told::default();
    let (samples_of, ended_of) = (samples.clone(), ended.clone());
    let window =
        Window { from: started, samples: samples_of, ended: ended_of, told, profile: None };
    let lost = window.lost().expect("a remote window can be lost");
    while lost().is_none() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    let why = lost().expect("lost within 10 s");
    assert!(why.contains("nothing from it"), "{why}");
    assert!(took >= silent && took < silent * 4, "lost after {took:?}");
    assert_eq!(lock(&samples).len(), 1, "the one sample it sent is kept");
    let closing_at = Instant::now();
    drop(close);
    assert!(!reader.join().unwrap().unwrap(), "not said to be down");
    assert!(closing_at.elapsed() < Duration::from_secs(3), "{:?}", closing_at.elapsed());
}

/// What a host lacks is read from its doctor's packages: a program there not installed
/// names its package once; one the doctor does not list is left to that host's stack up.
#[test]
fn a_hosts_missing_packages_are_read_from_its_doctor() {
    let nginx = loadlab_lab::stack("nginx-fpm").unwrap();
    let needs = nginx.needs(&loadlab_lab::Knobs::default());
    let entry = |need: &Need, installed: bool| serde_json::json!({"package": need.package, "needs": need.name(), "installed": installed});
    let all: Vec<_> = needs.iter().map(|n| entry(n, true)).collect();
    assert!(lacking(&serde_json::json!({ "packages": all }), &needs).is_empty());
    let none: Vec<_> = needs.iter().map(|n| entry(n, false)).collect();
    let mut expected: Vec<&str> = needs.iter().map(|n| n.package).collect();
    expected.dedup();
    assert_eq!(lacking(&serde_json::json!({ "packages": none }), &needs), expected);
    assert!(expected.contains(&"nginx") && expected.contains(&"php-fpm"), "{expected:?}");
    assert!(lacking(&serde_json::json!({}), &needs).is_empty(), "an old doctor says nothing");
}

/// A cell of a stack on a lab host tells its live hook (the view's and the metrics
/// endpoint's tiers) of each sample as it arrives over the session, from its start to its
/// stop: those before and after it belong to no cell.
#[test]
fn a_remote_cell_tells_its_live_hook_of_each_sample_that_arrives_while_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sample = Event::Sample { sample: serde_json::to_value(sample(1000)).unwrap() };
    // A sample every 100 ms for 4 s, then the end once this side closes (its heartbeats end).
    let every = format!(
        "for i in $(seq 40); do printf '%s' '{}'; sleep 0.1; done; exec cat >/dev/null",
        sample.line()
    );
    let live =
        Live::read(session(dir.path(), &every), "ssh://root@b".parse().unwrap(), "sh".into());
    let arrived = || lock(&live.samples).len();
    let wait_for = |n: usize| {
        let started = Instant::now();
        while arrived() < n && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(arrived() >= n, "{} samples arrived, not {n}", arrived());
    };
    wait_for(2);
    let told = Arc::new(Mutex::new(Vec::new()));
    let window = Box::new(Window {
        from: Instant::now(),
        samples: live.samples.clone(),
        ended: live.ended.clone(),
        told: live.told.clone(),
        profile: None,
    });
    let into = told.clone();
    window.live(Arc::new(move |s: &Sample| lock(&into).push(s.tiers[0].tier.clone())));
    let before = arrived();
    wait_for(before + 3);
    let sampled = window.stop();
    let heard = lock(&told).len();
    assert!(heard >= 3, "told of {heard} samples");
    // Every sample of the cell told (one may have arrived between its start and the hook's).
    let kept = sampled.samples.len();
    assert!(kept >= heard && kept - heard <= 1, "told {heard}, the cell kept {kept}");
    assert!(lock(&told).iter().all(|t| t == "nginx"));
    wait_for(arrived() + 2);
    assert_eq!(lock(&told).len(), heard, "told after the cell's stop");
    let _ = live.close();
}

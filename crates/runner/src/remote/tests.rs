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
    let window = Box::new(Window { from: Instant::now(), samples: samples.clone(), ended });
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
    let sampled = Box::new(Window { from: Instant::now(), samples, ended }).stop();
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

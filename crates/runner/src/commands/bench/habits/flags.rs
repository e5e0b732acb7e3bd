//! The flags other tools' users type out of habit whose meaning loadlab has, as clap parses
//! them: accepted and lowered into loadlab's own flags, with a note on stderr where loadlab
//! does it differently (ab's `-k` when keep-alive is already on, k6's VUs as connections).
//!
//! The ones ab's, wrk's and httperf's users look for in `--help` are listed there; the ones
//! of hey, oha, k6 and h2load are hidden (one spelling per flag in the help: loadlab's), and
//! docs/bench.md's habits table lists every one with what it does here.

use std::time::Duration;

use loadlab_engine::Level;
use loadlab_load::parse_duration;

use crate::commands::bench::flags::{LoadFlags, RequestFlags};

/// The habit flags of `bench`, flattened into its command.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Habits {
    /// ab's -k: keep-alive, which is already the default (--no-keepalive turns it off).
    #[arg(short = 'k', conflicts_with = "no_keepalive")]
    pub keepalive: bool,
    /// ab's -l: accept a varying response length, which loadlab always does (it reports the
    /// range as a note, never as a failure).
    #[arg(short = 'l')]
    pub variable_length: bool,
    /// ab's -r: go on after socket errors, which loadlab always does (each is counted by class).
    #[arg(short = 'r')]
    pub keep_going: bool,
    /// wrk's --latency: the latency distribution, which every output already has.
    #[arg(long = "latency")]
    pub latency: bool,
    /// httperf's --hog: use as many local ports as it takes, which loadlab always does (the
    /// kernel's whole ephemeral range).
    #[arg(long = "hog")]
    pub hog: bool,
    /// hey's and oha's -z: how long to run, -d here.
    #[arg(
        short = 'z',
        hide = true,
        value_name = "DURATION",
        value_parser = parse_duration,
        allow_hyphen_values = true,
        conflicts_with_all = ["duration", "requests", "conns", "stages"]
    )]
    pub hey_duration: Option<Duration>,
    /// h2load's -D: how long to run, -d here.
    #[arg(
        short = 'D',
        hide = true,
        value_name = "DURATION",
        value_parser = parse_duration,
        allow_hyphen_values = true,
        conflicts_with_all = ["duration", "requests", "conns", "stages", "hey_duration"]
    )]
    pub h2load_duration: Option<Duration>,
    /// k6's --vus: virtual users, each running its script in a loop; with one request for a
    /// script, the closed loop's -c.
    #[arg(long = "vus", hide = true, value_name = "N", conflicts_with = "connections")]
    pub vus: Option<u32>,
    /// oha's --disable-keepalive: --no-keepalive.
    #[arg(long = "disable-keepalive", hide = true, conflicts_with = "keepalive")]
    pub disable_keepalive: bool,
    /// oha's --latency-correction: latency from when each request was due, which the open
    /// loop always measures.
    #[arg(long = "latency-correction", hide = true)]
    pub latency_correction: bool,
}

impl Habits {
    /// Lowers the habits given into loadlab's flags (`-z 10s` into `-d 10s`, `--vus 5` into
    /// `-c 5`): what is left is the command line loadlab's own spelling would have made.
    /// Returns a note for each habit loadlab does another way, or does anyway.
    pub fn lower(&self, load: &mut LoadFlags, request: &mut RequestFlags) -> Vec<String> {
        load.duration = load.duration.or(self.hey_duration).or(self.h2load_duration);
        if let Some(n) = self.vus {
            load.connections = Some(Level::Fixed(f64::from(n)));
        }
        if self.disable_keepalive {
            request.connection.keepalive = false;
        }
        let mut notes: Vec<String> = self.anyway().map(str::to_string).collect();
        if let Some(n) = self.vus {
            notes.push(format!(
                "--vus {n}: {n} connections in a closed loop (-c {n}), each sending its next \
                 request when the last finished, as a k6 VU whose script is one request and \
                 no sleep"
            ));
        }
        if self.latency_correction {
            notes.push(if load.rate().is_some() || load.conn_rate.is_some() {
                "--latency-correction: under --rate latency always counts from each request's \
                 due time (service_time_us counts from its send)"
                    .to_string()
            } else {
                "--latency-correction: a closed loop has no schedule to correct for (each \
                 request is sent when the last finished); with --rate latency counts from the \
                 due time"
                    .to_string()
            });
        }
        notes
    }

    /// What each flag loadlab does anyway says, for those given.
    fn anyway(&self) -> impl Iterator<Item = &'static str> {
        [
            (self.keepalive, "-k: keep-alive is already on (--no-keepalive turns it off)"),
            (
                self.variable_length,
                "-l: a varying response length is never a failure here (it is a note)",
            ),
            (self.keep_going, "-r: socket errors never stop a run here (they are counted)"),
            (self.latency, "--latency: the latency percentiles are always printed"),
            (
                self.hog,
                "--hog: connections take any local port of net.ipv4.ip_local_port_range \
                 (--source-ips gives more)",
            ),
        ]
        .into_iter()
        .filter_map(|(given, note)| given.then_some(note))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The bench command's flags that the habits concern, to parse a command line into.
    #[derive(Debug, clap::Parser)]
    struct Bench {
        #[command(flatten)]
        load: LoadFlags,
        #[command(flatten)]
        request: RequestFlags,
        #[command(flatten)]
        traffic: crate::commands::bench::flags::TrafficFlags,
        #[command(flatten)]
        habits: Habits,
    }

    /// The flags `args` make once their habits are lowered, and the notes said.
    fn lowered(args: &[&str]) -> (LoadFlags, RequestFlags, Vec<String>) {
        let mut b = Bench::try_parse_from([&["bench"], args].concat()).expect("parses");
        let notes = b.habits.lower(&mut b.load, &mut b.request);
        (b.load, b.request, notes)
    }

    #[test]
    fn durations_of_hey_oha_and_h2load_are_d() {
        for flag in ["-z", "-D"] {
            let (load, _, notes) = lowered(&[flag, "2s"]);
            assert_eq!(load.duration, Some(Duration::from_secs(2)), "{flag}");
            assert!(notes.is_empty(), "{flag}: {notes:?}");
        }
        // h2load's bare number is seconds, as -d's.
        assert_eq!(lowered(&["-D", "3"]).0.duration, Some(Duration::from_secs(3)));
        // A count beside it is refused, not silently one or the other.
        assert!(Bench::try_parse_from(["bench", "-z", "2s", "-n", "10"]).is_err());
        assert!(Bench::try_parse_from(["bench", "-z", "2s", "-d", "1s"]).is_err());
    }

    #[test]
    fn k6s_vus_are_connections_and_say_so() {
        let (load, _, notes) = lowered(&["--vus", "5", "--duration", "1s"]);
        assert!(matches!(load.connections, Some(Level::Fixed(n)) if n == 5.0));
        assert_eq!(load.duration, Some(Duration::from_secs(1)));
        assert!(
            notes[0].starts_with("--vus 5: 5 connections in a closed loop (-c 5)"),
            "{notes:?}"
        );
        assert!(Bench::try_parse_from(["bench", "--vus", "5", "-c", "2"]).is_err());
    }

    #[test]
    fn ohas_keepalive_tui_and_correction_flags() {
        let (_, request, notes) = lowered(&["--disable-keepalive", "--no-tui"]);
        assert!(!request.connection.keepalive);
        // --no-tui is loadlab's own flag: no view, and -q is not implied.
        assert!(request.no_tui && !request.quiet);
        assert!(notes.is_empty(), "{notes:?}");
        let (_, _, open) = lowered(&["--latency-correction", "-R", "100"]);
        assert!(open[0].contains("always counts from each request's due time"), "{open:?}");
        let (_, _, closed) = lowered(&["--latency-correction"]);
        assert!(closed[0].contains("a closed loop has no schedule"), "{closed:?}");
        assert!(Bench::try_parse_from(["bench", "--disable-keepalive", "-k"]).is_err());
    }

    #[test]
    fn what_loadlab_does_anyway_is_noted() {
        let (_, request, notes) = lowered(&["-k", "-l", "-r", "--latency", "--hog"]);
        assert!(request.connection.keepalive);
        let flags: Vec<&str> = notes.iter().filter_map(|n| n.split(':').next()).collect();
        assert_eq!(flags, ["-k", "-l", "-r", "--latency", "--hog"]);
    }
}

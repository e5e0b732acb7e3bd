//! `loadlab stack list|up|verify|sample|show|down`: the lab's server stacks by hand.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use loadlab_lab::{own, CpuList, Knobs, Lab, OnOff, Record, Timeout, Up};
use loadlab_output::stack as output;
use loadlab_remote::held::Held;
use loadlab_remote::protocol::Event;
use loadlab_remote::Host;
use loadlab_runner::commands::stack::{self as runner, Down};
use serde_json::json;

use crate::exit::{failure, Failure, OK};
use crate::{remote, signals};
use loadlab_load::parse_duration;

#[derive(Debug, Args)]
pub struct StackArgs {
    #[command(subcommand)]
    command: StackCommand,
}

#[derive(Debug, Subcommand)]
enum StackCommand {
    /// The built-in stacks (tiers, packages, installed or not) and the running instances.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a stack in the background, verify it, and print its URL and id.
    Up(UpArgs),
    /// Verify a running instance again: every workload, its servers, PHP, cache, database.
    Verify {
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Run it on that lab host's loadlab, over ssh (see `stack up --host`).
        #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host)]
        host: Option<Host>,
    },
    /// Sample an instance's tiers (CPU, memory, processes) and the machine every interval.
    Sample {
        id: String,
        /// How long to sample (Ctrl-C stops earlier).
        #[arg(short = 'd', long = "duration", default_value = "10s", value_parser = parse_duration)]
        duration: Duration,
        #[arg(long = "interval", default_value = "1s", value_parser = parse_duration)]
        interval: Duration,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also record each tier's on-CPU stacks with perf while sampling, as `run --profile`
        /// does, and print each tier's top functions. Needs linux-perf and the right to
        /// profile the machine (root).
        #[arg(long = "profile")]
        profile: bool,
        /// Run it on that lab host's loadlab, over ssh (see `stack up --host`).
        #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host)]
        host: Option<Host>,
        /// Stop, as Ctrl-C does, when stdin closes (`--host`'s ssh session ended).
        #[arg(long = "until-eof", hide = true)]
        until_eof: bool,
    },
    /// An instance's effective configuration and versions, tier by tier.
    Show {
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Run it on that lab host's loadlab, over ssh (see `stack up --host`).
        #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host)]
        host: Option<Host>,
    },
    /// Stop an instance, wait until every one of its processes is gone, remove its files.
    Down {
        #[arg(required_unless_present = "all")]
        id: Option<String>,
        /// Every instance in the state directory, and every remote stack held from here.
        #[arg(long, conflicts_with = "id")]
        all: bool,
        /// An instance on that lab host: the one this machine holds a session of (`stack up
        /// --host` without `--foreground`) has its session ended, which takes it down there;
        /// any other is taken down by that host's loadlab.
        #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host,
              conflicts_with = "all", requires = "id")]
        host: Option<Host>,
    },
}

#[derive(Debug, Args)]
struct UpArgs {
    /// The stack (see `loadlab stack list`).
    name: String,
    /// The front tier's port (default: a free one).
    #[arg(long)]
    port: Option<u16>,
    /// Bind the front tier to ADDR, an address of this host, 0.0.0.0 or :: (default
    /// 127.0.0.1), so that clients on other hosts reach it; every tier behind it stays on
    /// loopback or unix sockets. The URL is ADDR, or for 0.0.0.0 and :: this host's primary
    /// address (its default route's source). With --net the profile shapes what the stack
    /// sends on ADDR's interface (egress only, its port only; docs/lab.md).
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::IpAddr>,
    /// HTTP keep-alive or a closed connection after each response.
    #[arg(long, default_value = "on", value_name = "on|off")]
    keepalive: OnOff,
    /// How long an idle kept-alive connection stays open (nginx, Apache; Varnish's
    /// timeout_idle in front). Default 15s (Varnish: its own 5s).
    #[arg(long, value_name = "DURATION")]
    keepalive_timeout: Option<Timeout>,
    /// Requests on one connection before nginx or Apache closes it (default: nginx 1000,
    /// Apache 101).
    #[arg(long, value_name = "N")]
    keepalive_requests: Option<u32>,
    /// gzip of text responses.
    #[arg(long, default_value = "off", value_name = "on|off")]
    gzip: OnOff,
    /// OPcache in the PHP tier (PHP stacks only; default on).
    #[arg(long, value_name = "on|off")]
    opcache: Option<OnOff>,
    /// A MariaDB tier for country.php and complex.php (PHP stacks; WordPress always has one).
    #[arg(long, value_name = "on|off")]
    db: Option<OnOff>,
    /// Web-tier processes: nginx worker_processes, Apache prefork MaxRequestWorkers (which
    /// run mod_php), Apache event processes.
    #[arg(long, value_name = "N")]
    workers: Option<u32>,
    /// PHP processes of a PHP tier of its own: php-fpm pm.max_children, spawn-fcgi's php-cgi
    /// children (default 5).
    #[arg(long, value_name = "N")]
    php_workers: Option<u32>,
    /// Access logs of nginx and Apache into the run directory's logs/.
    #[arg(long, default_value = "off", value_name = "on|off")]
    access_log: OnOff,
    /// Pin every process of the stack to these CPUs (0 or 0,2-3).
    #[arg(long, value_name = "LIST")]
    cpus: Option<CpuList>,
    /// Run the stack behind a network link, in a namespace of its own; with --listen, its
    /// responses shaped on ADDR's interface (docs/lab.md).
    #[arg(long, value_name = "PROFILE", long_help = crate::help::net_profiles(
        "Run the stack behind a network link (in a namespace of its own joined by a veth \
         pair; with --listen no namespace: what the stack sends on ADDR's interface is shaped, \
         its port only, and requests are not)"
    ))]
    net: Option<String>,
    /// HTTPS on the front tier (nginx ssl, Apache mod_ssl, hitch in front of Varnish), with a
    /// certificate from a CA made for the instance (`stack show` names the CA file).
    #[arg(long, default_value = "off", value_name = "on|off")]
    tls: OnOff,
    /// HTTP/2 on the front tier: h2 by ALPN with --tls on, h2c (prior knowledge) without.
    /// Not with Apache prefork + mod_php (mod_http2 needs the event MPM).
    #[arg(long, default_value = "off", value_name = "on|off")]
    http2: OnOff,
    /// Your own config snippets, merged into the generated configs at the include points
    /// their names say: nginx-http.conf, nginx-server.conf, apache.conf, apache-vhost.conf,
    /// php-fpm-pool.conf, php.ini, varnish.vcl (docs/lab.md). Each server tests the result
    /// (nginx -t, ...) before it starts.
    #[arg(long, value_name = "DIR")]
    config: Option<PathBuf>,
    /// Your own files (a site, a PHP application), served beside the lab's workload files.
    #[arg(long, value_name = "DIR")]
    docroot: Option<PathBuf>,
    /// Ready the PHP tiers for `stack sample --profile` to record PHP's own stacks too
    /// (php-excimer, started by an auto_prepend_file only while a profile is taken; a stat(2)
    /// per request otherwise). Needs php-excimer.
    #[arg(long = "profile", conflicts_with = "host")]
    profile: bool,
    /// Print JSON: {"id", "name", "url", "pids", ...}.
    #[arg(long)]
    json: bool,
    /// Stay in the foreground and take the stack down on Ctrl-C or SIGTERM.
    #[arg(long)]
    foreground: bool,
    /// Start the stack on that lab host, through the system's ssh (your keys, agent,
    /// ~/.ssh/config; LOADLAB_SSH_COMMAND replaces `ssh`, as GIT_SSH_COMMAND does). The
    /// loadlab there is used when it is this version, else this binary is copied into a
    /// cache there (refused on another architecture or an older glibc: exit 7). Every knob
    /// goes through as typed (not --config or --docroot, local directories). Without --listen
    /// it listens where ssh reached the host. The stack lives as long as the ssh
    /// session: with --foreground until Ctrl-C; without, held by a process here until `stack
    /// down ID --host ...`; a lost session takes it down there within seconds (docs/hosts.md).
    #[arg(long, value_name = "ssh://[user@]host[:port]", value_parser = crate::remote::parse_host)]
    host: Option<Host>,
    /// Install the stack's missing Debian packages first (apt-get, as root or with `sudo
    /// -n`): with --host on that host, which is where the servers run.
    #[arg(long)]
    install_packages: bool,
    /// The remote end of a `--host` session: JSON lines on stdout, heartbeat on stdin.
    #[arg(long, hide = true)]
    session: bool,
    /// The process holding a `--host` session in the background; its log file.
    #[arg(long, hide = true, value_name = "LOG", requires = "host")]
    hold: Option<PathBuf>,
}

pub fn run(args: StackArgs) -> anyhow::Result<u8> {
    let lab = Lab::from_env().map_err(failure)?;
    match args.command {
        StackCommand::List { json } => list(&lab, json),
        StackCommand::Up(up_args) => match &up_args.host {
            Some(host) => {
                let (json, foreground) = (up_args.json, up_args.foreground);
                remote::up(&lab, host, json, foreground, up_args.hold.as_deref())
            }
            None => up(&lab, up_args),
        },
        StackCommand::Verify { host: Some(host), .. }
        | StackCommand::Sample { host: Some(host), .. }
        | StackCommand::Show { host: Some(host), .. } => remote::pass_through(&host),
        StackCommand::Verify { id, json, .. } => verify(&lab, &id, json),
        StackCommand::Sample { id, duration, interval, json, profile, until_eof, .. } => {
            // Over ssh, the session's end closes stdin: nobody is left to print to.
            let session = until_eof.then(|| {
                let stdin = std::io::BufReader::new(std::io::stdin());
                loadlab_remote::protocol::Watch::reading(stdin, Duration::MAX)
            });
            sample(&lab, &id, (duration, interval, profile), json, session.as_ref())
        }
        StackCommand::Show { id, json, .. } => show(&lab, &id, json),
        StackCommand::Down { id, all, host } => down(&lab, id, all, host.as_ref()),
    }
}

fn list(lab: &Lab, json: bool) -> anyhow::Result<u8> {
    let instances = lab.instances().map_err(failure)?;
    let held = remote::held(lab)?;
    let mut out = std::io::stdout().lock();
    if json {
        let mut value = output::list_json(&instances);
        value["remote"] = json!(held);
        writeln!(out, "{value:#}")?;
    } else {
        output::write_list(&mut out, &instances)?;
        for h in &held {
            writeln!(
                out,
                "{}  {}  on {} (session held by pid {})",
                h.id, h.url, h.host, h.owner.pid
            )?;
        }
    }
    Ok(OK)
}

fn up(lab: &Lab, args: UpArgs) -> anyhow::Result<u8> {
    let stack = loadlab_lab::stack(&args.name).map_err(failure)?;
    let knobs = knobs(&args)?;
    // On stderr, so that --json stays one document (and a session's stdout its events).
    let mut note = |said: &str| {
        let _ = std::io::stderr().write_all(said.as_bytes());
    };
    if args.install_packages {
        runner::install_packages(stack, &knobs, &mut note).map_err(failure)?;
    }
    let control = signals::control()?;
    let cancel = || signals::interrupted(&control);
    // From here until the stack is down or detached, a second Ctrl-C must not leave it running.
    let _teardown = signals::Finishing::hold();
    if args.session {
        let mut say = |event: &Event| say(event);
        let instance = output::up_json;
        runner::session(lab, stack, &knobs, instance, &cancel, &mut note, &mut say)
            .map_err(failure)?;
        return Ok(OK);
    }
    let mut print = |record: &Record, up: &Up| print_up(record, up, &args);
    runner::up(lab, stack, &knobs, args.foreground, &cancel, &mut note, &mut print)
        .map_err(failure)?;
    Ok(OK)
}

/// The stack's knobs as typed; `--config` and `--docroot` read.
fn knobs(args: &UpArgs) -> anyhow::Result<Knobs> {
    Ok(Knobs {
        port: args.port,
        listen: args.listen,
        keepalive: args.keepalive,
        keepalive_timeout: args.keepalive_timeout,
        keepalive_requests: args.keepalive_requests,
        gzip: args.gzip,
        opcache: args.opcache,
        db: args.db,
        workers: args.workers,
        php_workers: args.php_workers,
        access_log: args.access_log,
        cpus: args.cpus.clone(),
        net: args.net.clone(),
        tls: args.tls,
        http2: args.http2,
        config: args
            .config
            .as_deref()
            .map(own::Config::read)
            .transpose()
            .map_err(|e| Failure::usage(format!("--config: {e}")))?,
        docroot: args
            .docroot
            .as_deref()
            .map(own::read_docroot)
            .transpose()
            .map_err(|e| Failure::usage(format!("--docroot: {e}")))?,
        excimer: if args.profile { OnOff::On } else { OnOff::Off },
    })
}

/// One event line on stdout, flushed at once (the other side waits for it).
fn say(event: &Event) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(event.line().as_bytes())?;
    out.flush()
}

fn print_up(record: &Record, up: &Up, args: &UpArgs) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", output::up_json(record, up))?;
    } else {
        output::write_up(&mut out, record, up, args.foreground)?;
    }
    out.flush()
}

fn verify(lab: &Lab, id: &str, json: bool) -> anyhow::Result<u8> {
    let report = lab.verify(id).map_err(failure)?;
    if json {
        writeln!(
            std::io::stdout(),
            "{:#}",
            json!({ "id": id, "ok": report.ok(), "checks": report.checks })
        )?;
    } else {
        output::write_checks(&mut std::io::stdout().lock(), &report.checks)?;
    }
    match report.error() {
        Some(e) if !json => Err(failure(e)),
        Some(_) => Ok(crate::exit::STACK_FAILED),
        None => Ok(OK),
    }
}

fn sample(
    lab: &Lab,
    id: &str,
    (duration, interval, profile): (Duration, Duration, bool),
    json: bool,
    session: Option<&loadlab_remote::protocol::Watch>,
) -> anyhow::Result<u8> {
    let control = signals::control()?;
    // Ctrl-C, or (--until-eof) the ssh session that asked for it ended: nobody to print to.
    let cancel = || signals::interrupted(&control) || session.is_some_and(|w| !w.alive());
    // On stderr, so that --json output stays clean; it also tells a script that the first
    // reading is taken and its load may start.
    let mut started = |tiers: &[&str]| {
        eprintln!(
            "sampling {id} ({}) every {interval:?} for {duration:?}; Ctrl-C stops",
            tiers.join(", ")
        )
    };
    let taken = runner::sample(lab, id, duration, interval, profile, &cancel, &mut started)
        .map_err(failure)?;
    if let Some(Err(why)) = &taken.profiles {
        eprintln!("loadlab: perf could not record ({why}): sampled without profiles");
    }
    if json {
        let mut doc = json!({ "id": id, "samples": taken.samples });
        if let Some(Ok(tiers)) = &taken.profiles {
            doc["profiles"] =
                json!(loadlab_output::profile::tiers_json(tiers, loadlab_output::profile::TOP));
        }
        writeln!(std::io::stdout(), "{doc:#}")?;
        return Ok(OK);
    }
    let mut out = std::io::stdout().lock();
    output::write_samples(&mut out, &taken.samples)?;
    if let Some(Ok(tiers)) = &taken.profiles {
        loadlab_output::profile::write_tiers(&mut out, tiers, loadlab_output::profile::TOP)?;
    }
    Ok(OK)
}

fn show(lab: &Lab, id: &str, json: bool) -> anyhow::Result<u8> {
    let record = lab.record(id).map_err(failure)?;
    let captured = lab.capture(id).map_err(failure)?;
    if json {
        let tls = lab.tls_settings(id).map_err(failure)?;
        let value = json!({ "instance": record, "tls": tls, "captured": captured });
        writeln!(std::io::stdout(), "{value:#}")?;
        return Ok(OK);
    }
    let mut out = std::io::stdout().lock();
    for c in captured {
        writeln!(out, "===== {}: {} =====\n{}", c.tier, c.what, c.text.trim_end())?;
    }
    Ok(OK)
}

fn down(lab: &Lab, id: Option<String>, all: bool, host: Option<&Host>) -> anyhow::Result<u8> {
    let mut released = |held: &Held| outln!("{} down on {}", held.id, held.host);
    match runner::down(lab, id.as_deref(), all, host, &mut released).map_err(failure)? {
        Down::Released => Ok(OK),
        Down::Elsewhere => remote::pass_through(host.expect("only with --host")),
        Down::Local(ids) => {
            for id in ids {
                outln!("{id} down")?;
            }
            Ok(OK)
        }
    }
}

//! The lab's operations on instances: bring a stack up (plan, write, start backends first,
//! wait ready, verify), list, verify, capture, sample targets, tear down, and clean what a
//! crashed loadlab left behind.

use std::fs;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::catalog::{self, Stack, Tier};
use crate::error::{Error, IoContext, Result};
use crate::knobs::Knobs;
use crate::procfs::{self, ProcId};
use crate::sampler::{Sampler, Target};
use crate::servers::{self, wordpress, Captured, Plan};
use crate::state::{make_dir_all, Record, StateDir, TierRecord};
use crate::supervise::{self, STOP_GRACE};
use crate::sys::is_root;
use crate::verify::{self, Report};
use crate::workloads::{self, write};
use crate::{ports, ready};
use loadlab_engine::client as http;
use loadlab_programs as programs;

/// How long one tier may take to become ready. MariaDB's first start after copying the
/// template is the slowest.
const READY_LIMIT: Duration = Duration::from_secs(30);
/// A start that lost its port to another program is retried this many times in all.
const PORT_ATTEMPTS: u32 = 3;
/// A record file claimed but never written is a crashed start's once it is this old.
const CLAIM_GRACE: Duration = Duration::from_secs(60);

/// The lab, over one state directory.
#[derive(Clone, Debug)]
pub struct Lab {
    state: StateDir,
}

/// A stack that came up and verified.
#[derive(Debug)]
pub struct Up {
    pub record: Record,
    pub report: Report,
    /// From the call to `up` until verified.
    pub elapsed: Duration,
    /// Where that time went: `write` (the run directory), `check` (the servers' own tests of
    /// a config with the user's files, only then), `prepare` (MariaDB's datadir,
    /// built the first time), `start` (every tier until ready), `verify`.
    pub phases: Vec<(String, Duration)>,
}

/// What became of a recorded instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Every tier runs.
    Running,
    /// Its owner is still starting it.
    Starting,
    /// The loadlab that owned it is gone (killed, crashed): the next start removes it.
    Stale,
    /// Some tiers run and some do not: `down` it.
    Broken,
    /// No tier runs any more: the next start removes the record.
    Dead,
}

impl Lab {
    pub fn new(state: StateDir) -> Lab {
        Lab { state }
    }

    /// The lab over the state directory the environment names (see `StateDir::from_env`).
    pub fn from_env() -> Result<Lab> {
        Ok(Lab::new(StateDir::from_env()?))
    }

    pub fn state(&self) -> &StateDir {
        &self.state
    }

    /// The network namespace instance `id` of this lab runs in behind a profile: unique on the
    /// machine, so a test beside others can tell its own from theirs.
    pub fn namespace_of(&self, id: &str) -> String {
        format!("{}{}", loadlab_net::NS_PREFIX, net_tag(id, &self.state.run_root().join(id)))
    }

    /// Brings `stack` up, owned by this process, and verifies it. Everything it started is
    /// torn down again if any step fails or `cancel()` turns true while it starts.
    pub fn up(
        &self,
        stack: &'static Stack,
        knobs: &Knobs,
        cancel: &dyn Fn() -> bool,
    ) -> Result<Up> {
        let started = Instant::now();
        stack.check_knobs(knobs)?;
        for need in stack.needs(knobs) {
            need.find()?;
        }
        self.clean_stale()?;
        if let Some(port) = knobs.port {
            self.check_port_free(stack, knobs, port)?;
        }
        let reach = Reach::decide(knobs)?;
        let id = self.state.claim_id(stack.name)?;
        for attempt in 1..=PORT_ATTEMPTS {
            let mut plan = self.plan(&id, stack, knobs)?;
            let link = match reach.make(&id, &mut plan) {
                Ok(link) => link,
                Err(e) => {
                    self.state.forget(&id)?;
                    return Err(e);
                }
            };
            let mut record = new_record(&plan);
            record.net = link;
            record.listen = plan.listen.clone();
            self.state.save(&record)?;
            let mut phases = Vec::new();
            match self.bring_up(&plan, &mut record, cancel, &mut phases) {
                Ok(report) => {
                    return Ok(Up { record, report, elapsed: started.elapsed(), phases });
                }
                Err(e) => {
                    let torn = teardown(&record);
                    let lost_port =
                        matches!(&e, Error::Start { log, .. } if log.contains("in use"));
                    if lost_port && knobs.port.is_none() && attempt < PORT_ATTEMPTS && torn.is_ok()
                    {
                        continue;
                    }
                    self.state.forget(&id)?;
                    return Err(torn.err().unwrap_or(e));
                }
            }
        }
        unreachable!("the last attempt returns")
    }

    /// Hands a running instance over to the user: it no longer depends on this process and
    /// stays up until `down`.
    pub fn detach(&self, record: &mut Record) -> Result<()> {
        record.owner = None;
        self.state.save(record)
    }

    /// A port the user chose (`--port`) that something already listens on fails the start at
    /// once, naming the instance that holds it if one does, rather than after the front
    /// server's own bind retries (nginx tries for about 2.5 s) and a page of its log.
    fn check_port_free(&self, stack: &'static Stack, knobs: &Knobs, port: u16) -> Result<()> {
        // std's bind sets SO_REUSEADDR, as the servers do: a port left in TIME_WAIT is free
        // to them and to this check, a listening one to neither.
        let bind = knobs.listen.unwrap_or(loadlab_net::host::LOOPBACK);
        match std::net::TcpListener::bind((bind, port)) {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                let holder = self
                    .state
                    .all()?
                    .into_iter()
                    .find(|r| r.tiers.iter().any(|t| t.port == Some(port)))
                    .map_or(String::new(), |r| {
                        format!(" by {} (`loadlab stack down {}` frees it)", r.id, r.id)
                    });
                let front = stack.tiers(knobs).into_iter().find(|t| listens_on_tcp(*t));
                Err(Error::Start {
                    tier: front.map_or(stack.name, |t| t.name()).to_string(),
                    reason: format!(
                        "{} is already in use{holder}",
                        std::net::SocketAddr::new(bind, port)
                    ),
                    log: String::new(),
                })
            }
            // Free, or a bind the server itself may be allowed (a low port as root): the
            // server's own start says what is wrong, if anything.
            _ => Ok(()),
        }
    }

    /// A plan with fresh ports and a fresh run directory.
    fn plan(&self, id: &str, stack: &'static Stack, knobs: &Knobs) -> Result<Plan> {
        let tiers = stack.tiers(knobs);
        let tcp: Vec<&'static str> =
            tiers.iter().filter(|t| listens_on_tcp(**t)).map(|t| t.name()).collect();
        let mut free = ports::free(tcp.len())?;
        if let (Some(port), Some(first)) = (knobs.port, free.first_mut()) {
            *first = port;
        }
        let run = self.state.run_root().join(id);
        let _ = fs::remove_dir_all(&run);
        Ok(system_plan(id, stack, knobs, run, tcp.into_iter().zip(free).collect()))
    }

    /// The plan an instance was started from, rebuilt from its record.
    pub fn plan_of(&self, record: &Record) -> Result<Plan> {
        let stack = catalog::stack(&record.stack)?;
        let ports = record.tiers.iter().filter_map(|t| Some((t.tier.name(), t.port?))).collect();
        let mut plan = system_plan(&record.id, stack, &record.knobs, record.run_dir.clone(), ports);
        plan.net = record.net.as_ref().map(net_plan);
        plan.listen = record.listen.clone();
        Ok(plan)
    }

    fn bring_up(
        &self,
        plan: &Plan,
        record: &mut Record,
        cancel: &dyn Fn() -> bool,
        phases: &mut Vec<(String, Duration)>,
    ) -> Result<Report> {
        let mut phase = Instant::now();
        write_files(plan)?;
        lap(phases, "write", &mut phase);
        // The servers' own tests of a config with the user's files in it, before anything
        // starts: their refusal names the user's file and line.
        if crate::own::check::run(plan)? {
            lap(phases, "check", &mut phase);
        }
        // Backends first, though nothing waits for them: no server here connects to the
        // tier behind it before its first request, so all start at once and only verify
        // needs them all ready.
        let tiers: Vec<Tier> = plan.tiers().into_iter().rev().collect();
        for tier in &tiers {
            servers::server(*tier).prepare(plan, &self.state)?;
        }
        lap(phases, "prepare", &mut phase);
        let mut started = Vec::new();
        for tier in tiers {
            let command = servers::server(tier).command(plan)?;
            let log = plan.console_log(tier.name());
            let netns = plan.net.as_ref().map(|n| n.netns.as_path());
            let leader = supervise::spawn(command, &log, plan.knobs.cpus.as_ref(), netns)?;
            if let Some(t) = record.tiers.iter_mut().find(|t| t.tier == tier) {
                t.leader = Some(leader);
            }
            // Saved at once: a crash from here on leaves a record that names this process.
            self.state.save(record)?;
            started.push((tier, leader));
        }
        for (tier, leader) in started {
            let logs = || tier_logs(plan, tier.name());
            let probe = servers::server(tier).probe(plan);
            ready::wait(tier.name(), leader, &probe, READY_LIMIT, cancel, &logs)?;
        }
        lap(phases, "start", &mut phase);
        let report = with_loopback_check(verify::verify(plan), record);
        lap(phases, "verify", &mut phase);
        // Ready means verified: a Ctrl-C that came while verify ran (half a second for the
        // database stacks) came before the stack was ready, so it goes down like one that
        // came while a tier started.
        if cancel() {
            return Err(Error::Interrupted);
        }
        match report.error() {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Every recorded instance with its health, oldest first.
    pub fn instances(&self) -> Result<Vec<(Record, Health)>> {
        Ok(self
            .state
            .all()?
            .into_iter()
            .map(|r| {
                let h = health(&r);
                (r, h)
            })
            .collect())
    }

    pub fn record(&self, id: &str) -> Result<Record> {
        self.state.load(id)
    }

    /// Verifies a running instance again.
    pub fn verify(&self, id: &str) -> Result<Report> {
        let record = self.state.load(id)?;
        Ok(with_loopback_check(verify::verify(&self.plan_of(&record)?), &record))
    }

    /// The effective configuration and versions of every tier of an instance.
    pub fn capture(&self, id: &str) -> Result<Vec<Captured>> {
        let record = self.state.load(id)?;
        let plan = self.plan_of(&record)?;
        let mut out: Vec<Captured> =
            plan.tiers().into_iter().flat_map(|t| servers::server(t).capture(&plan)).collect();
        out.extend(crate::own::capture(&plan));
        if plan.stack.has_php() {
            // PHP's version, extensions and OPcache as the serving SAPI sees them.
            let answer = verify::endpoint(&plan, plan.front())
                .and_then(|endpoint| http::get(&endpoint, workloads::STATUS_PATH, &[]));
            let text = match answer {
                Ok(r) => String::from_utf8_lossy(&r.body).into_owned(),
                Err(e) => format!("capture failed: {e}"),
            };
            out.push(Captured { tier: "php".into(), what: "status.php".into(), text });
        }
        if plan.stack.wordpress {
            out.push(wordpress::capture_admin(&plan));
            let text = crate::visits::describe(&plan.url());
            out.push(Captured { tier: "wordpress".into(), what: "built-in visits".into(), text });
        }
        if !plan.stack.http_tiers.is_empty() {
            out.push(Captured {
                tier: "tls".into(),
                what: "TLS and HTTP/2".into(),
                text: crate::cert::describe(&crate::cert::settings(&plan)),
            });
        }
        if let Some(link) = &record.net {
            let profile = record.knobs.net.as_deref().unwrap_or_default();
            let text = format!("--net {profile}\n{}", link.show());
            out.push(Captured { tier: "net".into(), what: "link".into(), text });
        }
        if let Some(listen) = &record.listen {
            let profile =
                record.knobs.net.as_ref().map_or(String::new(), |p| format!(" --net {p}"));
            let text = format!("--listen {}{profile}\n{}", listen.bind, listen.show());
            out.push(Captured { tier: "net".into(), what: "listen".into(), text });
        }
        Ok(out)
    }

    /// An instance's TLS and HTTP/2 settings (`None` for the database alone).
    pub fn tls_settings(&self, id: &str) -> Result<Option<crate::cert::Settings>> {
        let plan = self.plan_of(&self.state.load(id)?)?;
        Ok((!plan.stack.http_tiers.is_empty()).then(|| crate::cert::settings(&plan)))
    }

    /// Starts sampling instance `id`'s tiers every `interval`; with `profile`, recording their
    /// on-CPU stacks with perf too, and PHP's own where the instance was brought up for them
    /// (the `excimer` knob, see [`crate::profiler::php`]), until the stop.
    pub fn sampler(&self, id: &str, interval: Duration, profile: bool) -> Result<Sampler> {
        let targets = self.targets(id)?;
        if !profile {
            return Ok(Sampler::start(targets, interval));
        }
        Ok(Sampler::profiled(targets, interval, &self.profile_tools(id)?))
    }

    /// Starts recording instance `id`'s tiers' on-CPU stacks, as a profiled [`Lab::sampler`]
    /// does, without sampling them: a lab host's session samples them on its own 1 s grid.
    /// Returns once perf records.
    pub fn profiler(&self, id: &str) -> Result<crate::sampler::TiersProfiler> {
        let targets = self.targets(id)?.into_iter().map(crate::sampler::Watched::from).collect();
        let tools = self.profile_tools(id)?;
        let procs = crate::sampler::ProcSource::processes(&mut crate::sampler::Proc);
        Ok(crate::sampler::TiersProfiler::start(targets, &procs, &tools))
    }

    /// The perf that profiles instance `id`, and its PHP tiers' profile directory where it
    /// was brought up for PHP's own stacks (the `excimer` knob, see [`crate::profiler::php`]).
    fn profile_tools(&self, id: &str) -> Result<crate::profiler::Tools> {
        let perf = programs::PERF.find()?;
        let record = self.state.load(id)?;
        let php = record.knobs.excimer.is_on().then(|| crate::profiler::php::dir(&record.run_dir));
        Ok(crate::profiler::Tools { perf, php })
    }

    /// What to give the sampler for an instance: each started tier's process group, and where
    /// its worker pool reports, for the tiers that have one.
    pub fn targets(&self, id: &str) -> Result<Vec<Target>> {
        let record = self.state.load(id)?;
        let plan = self.plan_of(&record)?;
        // The status pages are read where the load goes: over TLS when the tier speaks it.
        let endpoint = |tier: Tier| {
            verify::endpoint(&plan, tier).map_err(|reason| Error::Command {
                command: format!("reading {}'s CA", record.id),
                reason,
            })
        };
        let mut targets = Vec::new();
        for t in &record.tiers {
            use crate::pools::PoolStatus;
            let pool = match t.tier {
                Tier::PhpFpm => Some(PoolStatus::PhpFpm {
                    status: crate::servers::php_fpm::status_socket(&record.run_dir),
                    listen: crate::servers::php_fpm::listen_socket(&record.run_dir),
                }),
                Tier::Apache { mode } if t.port.is_some() => Some(PoolStatus::Apache {
                    endpoint: endpoint(t.tier)?,
                    max: crate::own::apache_max_workers(&plan).unwrap_or_else(|| {
                        crate::servers::apache::Apache::max_workers(mode, &record.knobs)
                    }),
                }),
                Tier::Nginx { .. } if t.port.is_some() => Some(PoolStatus::Nginx {
                    endpoint: endpoint(t.tier)?,
                    max: crate::servers::nginx::max_connections(&record.knobs),
                }),
                _ => None,
            };
            if let Some(leader) = t.leader {
                targets.push(Target { tier: t.name.clone(), leader, pool });
            }
        }
        Ok(targets)
    }

    /// Stops every process of the instance, waits until they are gone, and removes its run
    /// directory and record.
    pub fn down(&self, id: &str) -> Result<()> {
        let record = self.state.load(id)?;
        teardown(&record)?;
        self.state.forget(id)
    }

    /// `down` for every recorded instance; the ids that were taken down.
    pub fn down_all(&self) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for record in self.state.all()? {
            self.down(&record.id)?;
            ids.push(record.id);
        }
        Ok(ids)
    }

    /// The instances a start would clean: stale (owner gone) or dead ones, and records a
    /// crashed start claimed but never wrote.
    pub fn stale(&self) -> Result<Vec<String>> {
        let mut ids: Vec<String> = self
            .instances()?
            .into_iter()
            .filter(|(r, h)| cleanable(r, *h))
            .map(|(r, _)| r.id)
            .collect();
        ids.extend(self.abandoned_claims()?);
        Ok(ids)
    }

    /// Tears down stale and dead instances (see [`Lab::stale`]); the ids removed.
    pub fn clean_stale(&self) -> Result<Vec<String>> {
        let mut cleaned = Vec::new();
        for (record, health) in self.instances()? {
            if cleanable(&record, health) {
                teardown(&record)?;
                self.state.forget(&record.id)?;
                cleaned.push(record.id);
            }
        }
        for id in self.abandoned_claims()? {
            sweep(&self.state.run_root().join(&id))?;
            let _ = fs::remove_dir_all(self.state.run_root().join(&id));
            self.state.forget(&id)?;
            cleaned.push(id);
        }
        Ok(cleaned)
    }

    fn abandoned_claims(&self) -> Result<Vec<String>> {
        let known: Vec<String> = self.state.all()?.into_iter().map(|r| r.id).collect();
        Ok(self
            .state
            .claims_older_than(CLAIM_GRACE)?
            .into_iter()
            .filter(|id| !known.contains(id))
            .collect())
    }
}

/// A plan for this machine: workers as `www-data` when running as root, Debian's Apache
/// module directory and the installed mod_php.
fn system_plan(
    id: &str,
    stack: &'static Stack,
    knobs: &Knobs,
    run: std::path::PathBuf,
    ports: Vec<(&'static str, u16)>,
) -> Plan {
    Plan {
        id: id.to_string(),
        stack,
        knobs: knobs.clone(),
        run,
        ports,
        run_as: is_root().then(|| ("www-data".to_string(), "www-data".to_string())),
        apache_modules: "/usr/lib/apache2/modules".into(),
        mod_php: programs::MOD_PHP.find().unwrap_or_default(),
        net: None,
        listen: None,
    }
}

/// The namespace's name: the instance's id, made unique on the machine by its run directory
/// (two state directories both have an `nginx-1`).
fn net_tag(id: &str, run: &std::path::Path) -> String {
    let mut h: u32 = 2_166_136_261;
    for b in run.as_os_str().as_encoded_bytes() {
        h = (h ^ u32::from(*b)).wrapping_mul(16_777_619);
    }
    format!("{id}-{h:08x}")
}

/// How an instance reaches its clients, decided once before anything is made: behind a
/// network profile (a namespace of its own behind a shaped link, made for each attempt and
/// removed with the instance, and what carries its delay), and with `--listen` on an address
/// of this host (whose interface a profile then shapes instead).
struct Reach {
    link: Option<(loadlab_net::Profile, Option<loadlab_net::DelayPath>)>,
    exposure: Option<loadlab_net::host::Exposure>,
    shaped: Option<loadlab_net::Profile>,
    named: String,
}

impl Reach {
    fn decide(knobs: &Knobs) -> Result<Reach> {
        let profile = match knobs.net.as_deref() {
            None | Some("loopback") => None,
            Some(p) => Some(p.parse::<loadlab_net::Profile>().map_err(Error::BadKnob)?),
        };
        let named = knobs.net.clone().unwrap_or_default();
        if let (Some(_), Some(why)) = (&profile, loadlab_net::unavailable()) {
            return Err(Error::NetUnavailable(format!("--net {named}: {why}")));
        }
        let exposure = knobs.listen.map(expose).transpose()?;
        if exposure.is_some() {
            return Ok(Reach { link: None, exposure, shaped: profile, named });
        }
        let link = match profile {
            Some(p) => {
                let delay = p
                    .delay_path(loadlab_net::netem)
                    .map_err(|why| Error::NetUnavailable(format!("--net {named}: {why}")))?;
                Some((p, delay))
            }
            None => None,
        };
        Ok(Reach { link, exposure: None, shaped: None, named })
    }

    /// Makes one attempt's link or shaping for `plan`'s ports, and sets them in `plan`.
    fn make(&self, id: &str, plan: &mut Plan) -> Result<Option<loadlab_net::Link>> {
        if let Some(exposure) = &self.exposure {
            plan.listen = Some(shape(exposure, plan, self.shaped.as_ref(), &self.named)?);
        }
        let Some((profile, delay)) = &self.link else { return Ok(None) };
        let link = loadlab_net::Link::create(&net_tag(id, &plan.run), profile, *delay)
            .map_err(|e| Error::BadKnob(format!("--net {}: {e}", self.named)))?;
        plan.net = Some(net_plan(&link));
        Ok(Some(link))
    }
}

/// Checks `--listen ADDR` before anything is made: an address of this host (the knob's other
/// rules are [`Stack::knob_problem`]'s, checked before).
fn expose(addr: std::net::IpAddr) -> Result<loadlab_net::host::Exposure> {
    loadlab_net::host::Exposure::resolve(addr)
        .map_err(|why| Error::BadKnob(format!("--listen {addr}: {why}")))
}

/// The exposure of one attempt: with a profile, the host's interface shaped for the front's
/// port. What cannot be shaped here fails as a profile this machine cannot run (exit 6).
fn shape(
    exposure: &loadlab_net::host::Exposure,
    plan: &Plan,
    profile: Option<&loadlab_net::Profile>,
    named: &str,
) -> Result<loadlab_net::host::Exposure> {
    let mut exposure = exposure.clone();
    if let Some(profile) = profile {
        let port = plan.port(plan.front().name());
        let shaping =
            loadlab_net::host::Shaping::create(&exposure, port, profile, &loadlab_net::netem)
                .map_err(|why| {
                    Error::NetUnavailable(format!("--net {named} with --listen: {why}"))
                })?;
        exposure.shaping = Some(shaping);
    }
    Ok(exposure)
}

/// Where the servers of a stack behind `link` run, and whom their status pages answer.
fn net_plan(link: &loadlab_net::Link) -> servers::NetPlan {
    servers::NetPlan {
        netns: std::path::Path::new("/run/netns").join(&link.namespace),
        stack_ip: link.ns_ip,
        client_ip: link.host_ip,
    }
}

/// Records how long the phase that began at `since` took, and starts the next one.
fn lap(phases: &mut Vec<(String, Duration)>, name: &str, since: &mut Instant) {
    phases.push((name.to_string(), since.elapsed()));
    *since = Instant::now();
}

/// Adds to a verify the check that every listening socket of the instance is on loopback.
fn with_loopback_check(mut report: Report, record: &Record) -> Report {
    if let Some(link) = &record.net {
        // In its own namespace the stack listens on every address there: its loopback and
        // its end of the link, which only this machine's side of the veth reaches.
        report.checks.push(verify::Check {
            workload: "loopback".into(),
            ok: true,
            detail: format!(
                "listening in namespace {} only, reached at {} from {}",
                link.namespace, link.ns_ip, link.host_ip
            ),
        });
        return report;
    }
    // With --listen the front's own socket is the one allowed beyond loopback.
    let front = record.listen.as_ref().zip(record.tiers.first().and_then(|t| t.port));
    let allowed = front.map(|(l, port)| std::net::SocketAddr::new(l.bind, port));
    let exposed = ready::exposed(&supervise::members(&record.leaders()), allowed);
    let ok = match allowed {
        Some(front) => format!("every listening socket is on loopback but the front's, {front}"),
        None => "every listening socket is on 127.0.0.1".into(),
    };
    report.checks.push(verify::Check {
        workload: "loopback".into(),
        ok: exposed.is_empty(),
        detail: if exposed.is_empty() {
            ok
        } else {
            format!("listening beyond loopback (address:port in hex): {}", exposed.join(", "))
        },
    });
    report
}

fn cleanable(record: &Record, health: Health) -> bool {
    health == Health::Stale || health == Health::Dead && record.owner.is_none()
}

fn listens_on_tcp(tier: Tier) -> bool {
    !matches!(tier, Tier::PhpFpm | Tier::SpawnFcgi)
}

fn new_record(plan: &Plan) -> Record {
    Record {
        knobs: plan.knobs.clone(),
        owner: procfs::identify(std::process::id() as i32),
        created_unix_ms: crate::sampler::unix_ms(),
        tiers: plan
            .tiers()
            .into_iter()
            .map(|tier| TierRecord {
                name: tier.name().to_string(),
                tier,
                leader: None,
                port: plan.ports.iter().find(|(n, _)| *n == tier.name()).map(|(_, p)| *p),
                socket: match tier {
                    Tier::PhpFpm => Some(plan.run.join("php-fpm.sock")),
                    Tier::SpawnFcgi => Some(plan.run.join("php-cgi.sock")),
                    Tier::Mariadb => Some(plan.run.join("mariadb.sock")),
                    _ => None,
                },
            })
            .collect(),
        ..Record::unstarted(
            plan.id.clone(),
            plan.stack.name.to_string(),
            plan.url(),
            plan.run.clone(),
        )
    }
}

/// Writes the run directory: document root, configs, the WordPress site.
fn write_files(plan: &Plan) -> Result<()> {
    make_dir_all(&plan.run)?;
    make_dir_all(&plan.logs())?;
    // nginx makes its *_temp_path directories itself, but not their parent.
    make_dir_all(&plan.run.join("nginx/tmp"))?;
    let db_port = plan.has_db().then(|| plan.port("mariadb"));
    workloads::write_docroot(&plan.docroot(), plan.stack, db_port)?;
    if plan.stack.wordpress {
        wordpress::write_instance_site(plan)?;
    }
    // The user's files after the lab's, beside them (a clash is refused, not overwritten).
    crate::own::write(plan)?;
    if plan.knobs.tls.is_on() {
        crate::cert::write(plan)?;
    }
    for (path, text) in servers::all_configs(plan) {
        let path = plan.run.join(path);
        make_dir_all(path.parent().expect("configs are inside the run directory"))?;
        write(&path, text.as_bytes())?;
    }
    if plan.knobs.excimer.is_on() && plan.stack.has_php() {
        let dir = crate::profiler::php::dir(&plan.run);
        crate::profiler::php::open_dir(&dir).context(|| format!("opening {}", dir.display()))?;
    }
    Ok(())
}

/// The ends of a tier's logs (its console and its own error logs), for error messages.
fn tier_logs(plan: &Plan, tier: &str) -> String {
    let mut out = String::new();
    let Ok(entries) = fs::read_dir(plan.logs()) else { return out };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(tier)))
        .collect();
    paths.sort();
    for path in paths {
        let tail = supervise::tail(&path);
        if !tail.trim().is_empty() {
            out.push_str(&format!("{}:\n{tail}\n", path.display()));
        }
    }
    out
}

fn health(record: &Record) -> Health {
    if record.owner.is_some_and(|o| !procfs::alive(o)) {
        return Health::Stale;
    }
    let leaders: Vec<Option<ProcId>> = record.tiers.iter().map(|t| t.leader).collect();
    let alive = leaders.iter().filter(|l| l.is_some_and(supervise::group_alive)).count();
    if alive == leaders.len() && !leaders.is_empty() {
        Health::Running
    } else if record.owner.is_some() && leaders.iter().any(Option::is_none) {
        Health::Starting
    } else if alive == 0 {
        Health::Dead
    } else {
        Health::Broken
    }
}

/// Stops every process of an instance and removes its run directory.
fn teardown(record: &Record) -> Result<()> {
    supervise::stop_groups(&record.id, &record.leaders(), STOP_GRACE)?;
    sweep(&record.run_dir)?;
    // The namespace and its link go with the servers that ran in it.
    if let Some(link) = &record.net {
        link.remove();
    }
    // As does the shaping of the host's interface for a stack listening beyond loopback.
    if let Some(shaping) = record.listen.as_ref().and_then(|l| l.shaping.as_ref()) {
        shaping.remove();
    }
    match fs::remove_dir_all(&record.run_dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).context(|| format!("removing {}", record.run_dir.display()))
        }
        _ => Ok(()),
    }
}

/// Kills any process whose command line names `run_dir`: a server started in the instant
/// between its spawn and its record being written, which no record names.
fn sweep(run_dir: &std::path::Path) -> Result<()> {
    let needle = format!("{}/", run_dir.display());
    let found: Vec<ProcId> = procfs::all()
        .into_iter()
        .filter(|p| p.pid == p.pgid && !p.is_zombie())
        .filter(|p| procfs::cmdline(p.pid).is_some_and(|c| c.contains(&needle)))
        .map(|p| p.id())
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    supervise::stop_groups(&run_dir.display().to_string(), &found, STOP_GRACE)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a missing server is a failure here (in CI) rather than a reason to skip, as in
    /// the CLI's tests.
    fn servers_required() -> bool {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0");
        set("LOADLAB_REQUIRE_SERVERS") || set("CI")
    }

    /// A Ctrl-C that comes once the tiers are ready, while verify runs, is looked at too: a
    /// `stack up` must not leave a running stack and exit 0. Cancelled from the moment nginx
    /// accepts, the start must fail as interrupted whichever of the readiness wait and verify
    /// sees it first, and leave no instance. Needs nginx.
    #[test]
    fn a_cancel_once_the_tiers_are_ready_takes_the_stack_down() {
        // Private, as a home directory: as root, the run directory goes under /run.
        let dir = crate::state::tests::private_dir();
        let lab = Lab::new(StateDir::at(dir.path()));
        let port = ports::free(1).unwrap()[0];
        let knobs = Knobs { port: Some(port), ..Knobs::default() };
        let cancel = || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        match lab.up(catalog::stack("nginx").unwrap(), &knobs, &cancel) {
            Err(Error::Interrupted) => {}
            Err(e @ Error::MissingPackage { .. }) if !servers_required() => {
                // Past libtest's capture of eprintln!: a skip nobody sees looks like a pass.
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "skipped {}: {e}", module_path!());
                return;
            }
            Err(e) => panic!("stack up failed otherwise: {e}"),
            Ok(up) => {
                let _ = lab.down(&up.record.id);
                panic!("the stack came up despite the cancel");
            }
        }
        assert!(lab.instances().unwrap().is_empty());
        // Its run directory under /run (as root) and the run root made for it are gone too.
        let run_root = lab.state.run_root();
        assert!(run_root.starts_with(dir.path()) || !run_root.exists(), "{run_root:?} left");
    }
}

//! The Kubernetes objects that start N loadlab agents (`loadlab agents k8s`): an Indexed Job
//! whose pods each run the same `loadlab bench ... --agents N --rendezvous NAME-0.NAME:PORT`,
//! a headless Service that gives agent 0 that stable name, and the Secret holding the
//! rendezvous token. loadlab grows no cluster manager: Kubernetes starts the pods, gives each
//! its index (`JOB_COMPLETION_INDEX`, which bench reads when `--agent` is absent) and keeps
//! none of them running after a failure.
//!
//! Why each setting:
//! - `completionMode: Indexed`, completions = parallelism = N: every index 0..N-1 runs exactly
//!   once and all at the same time (agent 0 waits for all the others at the rendezvous).
//! - `restartPolicy: Never`, `backoffLimit: 0`: an agent that failed is not started again; a
//!   restarted agent would arrive after the start and be refused anyway (k6-operator's restarted
//!   runner waits forever, grafana/k6-operator 304).
//! - The pod template's `subdomain` is the Service's name: an Indexed Job's pod has hostname
//!   `JOB-INDEX`, so agent 0 is `NAME-0.NAME` in the namespace's DNS. The Service publishes
//!   not-ready addresses so that the name resolves as soon as the pod runs, before any probe.
//! - The token reaches the pods as `LOADLAB_TOKEN` from a Secret, never on the command line
//!   (which `kubectl describe` and the process list show).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, PodSpec, PodTemplateSpec, Secret,
    SecretKeySelector, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The key of the token in the Secret.
pub const TOKEN_KEY: &str = "token";

/// The label Kubernetes puts on every pod of a Job (since 1.27), which the Service selects.
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// Flags the manifest sets itself on every pod's command line, so refused in the user's.
const SET_HERE: [&str; 6] =
    ["--agents", "--agent", "--rendezvous", "--token-file", "--agent-hosts", "--agent-weight"];

/// What the manifests are made from.
#[derive(Debug, Clone)]
pub struct Agents {
    /// The Job's and the Service's name.
    pub name: String,
    pub namespace: Option<String>,
    /// The container image that has `loadlab` on its PATH.
    pub image: String,
    /// N, the number of agents.
    pub agents: u32,
    /// The rendezvous port agent 0 listens on.
    pub port: u16,
    /// The loadlab command every agent runs, without the program's name: `bench URL [flags]`.
    pub command: Vec<String>,
    pub token: Token,
}

/// Where the token comes from: a Secret printed with the manifests, or one that exists.
#[derive(Debug, Clone)]
pub enum Token {
    /// Print a Secret of this name holding `value`.
    Value { secret: String, value: String },
    /// Reference the Secret of this name (created by the user, key [`TOKEN_KEY`]).
    Existing { secret: String },
}

impl Token {
    pub fn secret(&self) -> &str {
        match self {
            Token::Value { secret, .. } | Token::Existing { secret } => secret,
        }
    }
}

/// Why no manifest was made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("--name {0:?}: {1}")]
    Name(String, String),
    #[error("--agents must be at least 1")]
    NoAgents,
    #[error("{0} is set by the manifest itself; leave it out of the command after --")]
    SetHere(String),
    #[error("the command after -- is empty: give `bench URL [flags]`")]
    NoCommand,
    #[error("{0}")]
    Yaml(String),
}

/// The objects, in the order `kubectl apply` should create them.
#[derive(Debug, Clone)]
pub struct Manifests {
    pub secret: Option<Secret>,
    pub service: Service,
    pub job: Job,
}

impl Manifests {
    /// One multi-document YAML stream.
    pub fn to_yaml(&self) -> Result<String, Error> {
        let yaml = |v: Result<String, serde_yaml::Error>| v.map_err(|e| Error::Yaml(e.to_string()));
        let mut docs = Vec::new();
        if let Some(secret) = &self.secret {
            docs.push(yaml(serde_yaml::to_string(secret))?);
        }
        docs.push(yaml(serde_yaml::to_string(&self.service))?);
        docs.push(yaml(serde_yaml::to_string(&self.job))?);
        Ok(docs.iter().map(|d| format!("---\n{d}")).collect())
    }
}

/// `name` as a DNS label (RFC 1123, as Kubernetes checks it) that still is one with `-INDEX`
/// appended for the pods' hostnames.
fn check_name(name: &str, agents: u32) -> Result<(), Error> {
    let bad = |why: &str| Err(Error::Name(name.to_string(), why.to_string()));
    let longest = 63 - 1 - (agents.saturating_sub(1)).to_string().len();
    if name.is_empty() || name.len() > longest {
        return bad(&format!("must be 1 to {longest} characters (the pods are NAME-INDEX)"));
    }
    let ok = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !ok
        || name.starts_with('-')
        || name.ends_with('-')
        || name.starts_with(|c: char| c.is_ascii_digit())
    {
        return bad("must be lowercase letters, digits and '-', starting with a letter and ending with a letter or digit");
    }
    Ok(())
}

/// Checks `spec` and builds the objects.
pub fn manifests(spec: &Agents) -> Result<Manifests, Error> {
    if spec.agents == 0 {
        return Err(Error::NoAgents);
    }
    check_name(&spec.name, spec.agents)?;
    if spec.command.is_empty() {
        return Err(Error::NoCommand);
    }
    if let Some(flag) = spec.command.iter().find_map(|w| {
        let name = w.split('=').next().unwrap_or_default();
        SET_HERE.contains(&name).then(|| name.to_string())
    }) {
        return Err(Error::SetHere(flag));
    }
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_string()),
        namespace: spec.namespace.clone(),
        labels: Some(labels(spec)),
        ..ObjectMeta::default()
    };
    let secret = match &spec.token {
        Token::Value { secret, value } => Some(Secret {
            metadata: meta(secret),
            type_: Some("Opaque".into()),
            string_data: Some(BTreeMap::from([(TOKEN_KEY.to_string(), value.clone())])),
            ..Secret::default()
        }),
        Token::Existing { .. } => None,
    };
    let service = Service {
        metadata: meta(&spec.name),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            publish_not_ready_addresses: Some(true),
            selector: Some(BTreeMap::from([(JOB_NAME_LABEL.to_string(), spec.name.clone())])),
            ports: Some(vec![ServicePort {
                name: Some("rendezvous".into()),
                port: i32::from(spec.port),
                protocol: Some("TCP".into()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    };
    let job = Job { metadata: meta(&spec.name), spec: Some(job_spec(spec)), ..Job::default() };
    Ok(Manifests { secret, service, job })
}

fn labels(spec: &Agents) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "loadlab".to_string()),
        ("app.kubernetes.io/instance".to_string(), spec.name.clone()),
    ])
}

/// The agent's command line: the user's, then the agents' flags. The index is not on it:
/// bench reads `JOB_COMPLETION_INDEX`, which Kubernetes sets in each pod of an Indexed Job.
pub fn agent_command(spec: &Agents) -> Vec<String> {
    let mut args = vec!["loadlab".to_string()];
    args.extend(spec.command.iter().cloned());
    args.extend([
        "--agents".to_string(),
        spec.agents.to_string(),
        "--rendezvous".to_string(),
        rendezvous(spec),
    ]);
    args
}

/// Agent 0's stable name and port: pod `NAME-0` under the Service `NAME`.
pub fn rendezvous(spec: &Agents) -> String {
    format!("{0}-0.{0}:{1}", spec.name, spec.port)
}

fn job_spec(spec: &Agents) -> JobSpec {
    let n = i32::try_from(spec.agents).unwrap_or(i32::MAX);
    let token = EnvVar {
        name: "LOADLAB_TOKEN".into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: spec.token.secret().to_string(),
                key: TOKEN_KEY.into(),
                optional: Some(false),
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    };
    let container = Container {
        name: "agent".into(),
        image: Some(spec.image.clone()),
        command: Some(agent_command(spec)),
        env: Some(vec![token]),
        ports: Some(vec![ContainerPort {
            name: Some("rendezvous".into()),
            container_port: i32::from(spec.port),
            protocol: Some("TCP".into()),
            ..ContainerPort::default()
        }]),
        ..Container::default()
    };
    JobSpec {
        completions: Some(n),
        parallelism: Some(n),
        completion_mode: Some("Indexed".into()),
        backoff_limit: Some(0),
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta { labels: Some(labels(spec)), ..ObjectMeta::default() }),
            spec: Some(PodSpec {
                subdomain: Some(spec.name.clone()),
                restart_policy: Some("Never".into()),
                containers: vec![container],
                ..PodSpec::default()
            }),
        },
        ..JobSpec::default()
    }
}

#[cfg(test)]
mod tests;

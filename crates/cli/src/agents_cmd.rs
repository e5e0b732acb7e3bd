//! `loadlab agents k8s -- bench URL [flags]`: prints the Kubernetes manifests that run the
//! bench on N agents (the k8s crate builds them). The command after `--` is parsed here as
//! loadlab would parse it in the pods, so that a typo is refused now, not in N pods later.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use loadlab_k8s::{Agents, Token};

use crate::exit::Failure;

#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    pub command: AgentsCommand,
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Print a Kubernetes Indexed Job, its headless Service and (with --token-file) its Secret
    /// that run `loadlab bench URL [flags]` on N agents; apply with `kubectl apply -f -`.
    K8s(K8sArgs),
}

#[derive(Debug, Args)]
pub struct K8sArgs {
    /// The container image the agents run (loadlab on its PATH)
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// How many agents (pods) share the load
    #[arg(long, value_name = "N")]
    pub agents: u32,
    /// The Job's and the headless Service's name; agent 0 is reached as NAME-0.NAME
    #[arg(long, value_name = "NAME", default_value = "loadlab")]
    pub name: String,
    /// The namespace of every object [default: kubectl's current one]
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// The port agent 0 listens on for the rendezvous
    #[arg(long, value_name = "PORT", default_value_t = 7400)]
    pub port: u16,
    /// Print a Secret holding the token in FILE; without it, the Secret --token-secret names
    /// must exist (key "token")
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The Secret's name [default: NAME-token]
    #[arg(long = "token-secret", value_name = "SECRET")]
    pub token_secret: Option<String>,
    /// The loadlab command every agent runs: `bench URL [flags]` or `sweep ...`
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub fn run(args: AgentsArgs) -> anyhow::Result<u8> {
    match args.command {
        AgentsCommand::K8s(k8s) => kubernetes(k8s),
    }
}

fn kubernetes(args: K8sArgs) -> anyhow::Result<u8> {
    check_command(&args.command)?;
    let secret = args.token_secret.clone().unwrap_or_else(|| format!("{}-token", args.name));
    let token = match &args.token_file {
        Some(path) => {
            let value = loadlab_agents::auth::Token::read_text(path)
                .map_err(|e| crate::agents::failure(e.into()))?;
            Token::Value { secret, value }
        }
        None => Token::Existing { secret },
    };
    let spec = Agents {
        name: args.name,
        namespace: args.namespace,
        image: args.image,
        agents: args.agents,
        port: args.port,
        command: args.command,
        token,
    };
    let manifests = loadlab_k8s::manifests(&spec).map_err(|e| Failure::usage(e.to_string()))?;
    let yaml = manifests.to_yaml().context("writing the manifests")?;
    if let Token::Existing { secret } = &spec.token {
        eprintln!(
            "loadlab: note: the pods read the token from the Secret {secret:?} (key \"token\"), \
             which must exist: kubectl create secret generic {secret} --from-file=token=FILE \
             (or give --token-file FILE to print it here)"
        );
    }
    out!("{yaml}")?;
    Ok(crate::exit::OK)
}

/// The agents' command, parsed as the pods' loadlab will parse it: only bench or sweep.
fn check_command(words: &[String]) -> anyhow::Result<()> {
    let first = words.first().map(String::as_str);
    if !matches!(first, Some("bench" | "sweep")) {
        let given = first.unwrap_or_default();
        let msg = format!("after --: `bench URL [flags]` or `sweep ...`, not {given:?}");
        return Err(Failure::usage(msg).into());
    }
    let line = std::iter::once("loadlab".to_string()).chain(words.iter().cloned());
    match crate::Cli::try_parse_from(line) {
        Ok(_) => Ok(()),
        Err(e) => {
            // clap's message on one line: what it says before its usage and tips.
            let text = e.to_string();
            let said: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:"))
                .map(|l| l.trim().trim_start_matches("error: "))
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect();
            Err(Failure::usage(format!("the command after --: {}", said.join(" "))).into())
        }
    }
}

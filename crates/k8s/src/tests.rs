//! The manifests' structure, read back from the YAML a user applies.

use serde_yaml::Value;

use super::*;

fn spec(token: Token) -> Agents {
    Agents {
        name: "shop-test".into(),
        namespace: Some("load".into()),
        image: "registry.example/loadlab:1".into(),
        agents: 4,
        port: 7400,
        command: ["bench", "http://shop.example/", "--rate", "20000", "-d", "10s"]
            .map(String::from)
            .to_vec(),
        token,
    }
}

fn docs(spec: &Agents) -> Vec<Value> {
    let yaml = manifests(spec).unwrap().to_yaml().unwrap();
    serde_yaml::Deserializer::from_str(&yaml).map(|d| Value::deserialize(d).unwrap()).collect()
}

use serde::Deserialize as _;

fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter().find(|d| d["kind"].as_str() == Some(kind)).unwrap_or_else(|| panic!("no {kind}"))
}

#[test]
fn an_indexed_job_of_n_pods_that_never_restart() {
    let d = docs(&spec(Token::Existing { secret: "t".into() }));
    let job = kind(&d, "Job");
    assert_eq!(job["apiVersion"].as_str(), Some("batch/v1"));
    let s = &job["spec"];
    assert_eq!(s["completionMode"].as_str(), Some("Indexed"));
    assert_eq!((s["completions"].as_i64(), s["parallelism"].as_i64()), (Some(4), Some(4)));
    assert_eq!(s["backoffLimit"].as_i64(), Some(0));
    assert_eq!(s["template"]["spec"]["restartPolicy"].as_str(), Some("Never"));
    assert_eq!(job["metadata"]["namespace"].as_str(), Some("load"));
}

#[test]
fn agent_zero_is_reached_through_the_headless_service_the_pods_are_under() {
    let d = docs(&spec(Token::Existing { secret: "t".into() }));
    let (job, service) = (kind(&d, "Job"), kind(&d, "Service"));
    let pod = &job["spec"]["template"]["spec"];
    let name = service["metadata"]["name"].as_str().unwrap();
    assert_eq!(service["spec"]["clusterIP"].as_str(), Some("None"));
    assert_eq!(pod["subdomain"].as_str(), Some(name));
    let selector = &service["spec"]["selector"]["batch.kubernetes.io/job-name"];
    assert_eq!(selector.as_str(), job["metadata"]["name"].as_str());
    assert_eq!(service["spec"]["ports"][0]["port"].as_i64(), Some(7400));
    let command: Vec<&str> = pod["containers"][0]["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|w| w.as_str())
        .collect();
    // Pod NAME-0 (hostname JOB-INDEX) under the Service NAME.
    let job_name = job["metadata"]["name"].as_str().unwrap();
    let at = command.iter().position(|w| *w == "--rendezvous").unwrap();
    assert_eq!(command[at + 1], format!("{job_name}-0.{name}:7400"));
    let agents = command.iter().position(|w| *w == "--agents").unwrap();
    assert_eq!(command[agents + 1], "4");
    // The index is each pod's JOB_COMPLETION_INDEX, never one fixed --agent for all.
    assert!(!command.contains(&"--agent"), "{command:?}");
    assert_eq!(&command[..3], ["loadlab", "bench", "http://shop.example/"]);
}

#[test]
fn the_token_comes_from_the_secret_printed_only_when_its_value_is_given() {
    let given = docs(&spec(Token::Value { secret: "shop-token".into(), value: "s3cret".into() }));
    let secret = kind(&given, "Secret");
    assert_eq!(secret["stringData"][TOKEN_KEY].as_str(), Some("s3cret"));
    let env = &kind(&given, "Job")["spec"]["template"]["spec"]["containers"][0]["env"][0];
    assert_eq!(env["name"].as_str(), Some("LOADLAB_TOKEN"));
    let from = &env["valueFrom"]["secretKeyRef"];
    assert_eq!(from["name"].as_str(), secret["metadata"]["name"].as_str());
    assert_eq!(from["key"].as_str(), Some(TOKEN_KEY));
    let yaml = manifests(&spec(Token::Value { secret: "x".into(), value: "s3cret".into() }));
    let job_yaml = serde_yaml::to_string(&yaml.unwrap().job).unwrap();
    assert!(!job_yaml.contains("s3cret"), "the token is on no command line: {job_yaml}");

    let referenced = docs(&spec(Token::Existing { secret: "theirs".into() }));
    assert!(referenced.iter().all(|d| d["kind"].as_str() != Some("Secret")));
    let env = &kind(&referenced, "Job")["spec"]["template"]["spec"]["containers"][0]["env"][0];
    assert_eq!(env["valueFrom"]["secretKeyRef"]["name"].as_str(), Some("theirs"));
}

#[test]
fn names_that_are_no_dns_label_and_flags_the_manifest_sets_are_refused() {
    let token = Token::Existing { secret: "t".into() };
    for bad in ["", "Shop", "-shop", "shop-", "9shop", "shop_test", &"a".repeat(62)] {
        let mut s = spec(token.clone());
        s.name = bad.to_string();
        assert!(matches!(manifests(&s), Err(Error::Name(..))), "{bad:?}");
    }
    let mut s = spec(token.clone());
    s.name = "a".repeat(61); // 61 + "-3" = 63
    assert!(manifests(&s).is_ok());
    for flag in ["--agent", "--agents=2", "--rendezvous", "--token-file"] {
        let mut s = spec(token.clone());
        s.command.push(flag.into());
        let want = flag.split('=').next().unwrap().to_string();
        assert_eq!(manifests(&s).unwrap_err(), Error::SetHere(want));
    }
    let mut s = spec(token);
    s.agents = 0;
    assert_eq!(manifests(&s).unwrap_err(), Error::NoAgents);
}

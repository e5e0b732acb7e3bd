//! The certificates of an instance with `tls` on: a CA made for the instance alone and a
//! server certificate it signs for every name a client may use (127.0.0.1, localhost, ::1,
//! and a network profile's namespace address), written into the run directory's `tls/`. A
//! client trusts the instance by its CA (`loadlab bench --cacert RUN/tls/ca.pem`), never by
//! `--insecure`; the CA's key is not kept, so nothing else can be signed with it.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use serde::Serialize;

use crate::error::{Error, IoContext, Result};
use crate::plan::Plan;
use crate::tier::Tier;

/// How long the certificates are valid: a day back (a clock a little behind still accepts
/// them) and a year ahead, longer than any instance runs.
const VALID_BEFORE_DAYS: i64 = 1;
const VALID_AFTER_DAYS: i64 = 365;

/// The TLS versions every terminator offers: 1.2 and 1.3, as the engine does.
pub const VERSIONS: &[&str] = &["TLSv1.2", "TLSv1.3"];

pub use crate::plan::TlsFiles as Files;

/// What `stack show` says of an instance's TLS and HTTP/2: the settings the lab generated,
/// worked out from its plan (the live handshake is verify's `tls` check).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// `on` or `off`.
    pub tls: String,
    /// The tier that speaks TLS to clients (`nginx`, `apache`, `hitch`, `caddy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminator: Option<String>,
    /// What the front offers: ALPN protocol ids over TLS (`h3` over QUIC, `h2`, `http/1.1`),
    /// or `h2c` (prior knowledge) and `http/1.1` without it.
    pub protocols: Vec<String>,
    /// The TLS versions offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<String>,
    /// The server certificate's subject and the names it is valid for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// The files, `ca` being what `loadlab bench --cacert` takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Files>,
    /// How a returning client resumes its session, as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resumption: Option<String>,
}

/// The names the server certificate is valid for: where the client reaches the stack first
/// (the name verify and the runner check), then loopback's names.
pub fn names(plan: &Plan) -> Vec<String> {
    let mut names = vec![plan.host().to_string()];
    for name in ["127.0.0.1", "localhost", "::1"] {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The server certificate's subject.
pub fn subject(plan: &Plan) -> String {
    format!("CN=loadlab {}", plan.id)
}

/// The settings `stack show` prints for `plan`.
pub fn settings(plan: &Plan) -> Settings {
    let http2 = plan.knobs.http2.is_on();
    let Some(terminator) = plan.stack.tls_tier(&plan.knobs) else {
        let protocols = if http2 { vec!["h2c", "http/1.1"] } else { vec!["http/1.1"] };
        return Settings {
            tls: "off".into(),
            terminator: None,
            protocols: protocols.into_iter().map(String::from).collect(),
            versions: Vec::new(),
            subject: None,
            names: Vec::new(),
            files: None,
            resumption: None,
        };
    };
    let resumption = match terminator {
        Tier::Hitch => "tickets, their key shared by hitch's workers (forked from its master)",
        Tier::Caddy { .. } => "tickets, from Go's crypto/tls in Caddy's one process",
        _ => "shared session cache and tickets",
    };
    let mut protocols: Vec<String> = alpn(http2).iter().map(|p| p.to_string()).collect();
    if plan.serves_http3(terminator) {
        // Offered by ALPN too, but in QUIC's handshake on the UDP port (RFC 9114 section 3.1).
        protocols.insert(0, "h3".into());
    }
    Settings {
        tls: "on".into(),
        terminator: Some(terminator.name().to_string()),
        protocols,
        versions: VERSIONS.iter().map(|v| v.to_string()).collect(),
        subject: Some(subject(plan)),
        names: names(plan),
        files: Some(Files::in_run(&plan.run)),
        resumption: Some(resumption.into()),
    }
}

/// The settings as `stack show` prints them, one `key: value` line each.
pub fn describe(s: &Settings) -> String {
    let mut lines = vec![format!("tls: {}", s.tls)];
    if let Some(t) = &s.terminator {
        lines.push(format!("terminated by: {t}"));
    }
    let label = if s.tls == "on" { "ALPN offers" } else { "protocols" };
    lines.push(format!("{label}: {}", s.protocols.join(", ")));
    if !s.versions.is_empty() {
        lines.push(format!("versions: {}", s.versions.join(", ")));
    }
    if let Some(subject) = &s.subject {
        lines.push(format!("certificate: {subject}, for {}", s.names.join(", ")));
    }
    if let Some(files) = &s.files {
        lines.push(format!(
            "CA: {} (loadlab bench --cacert {})",
            files.ca.display(),
            files.ca.display()
        ));
        lines.push(format!("certificate chain: {}", files.cert.display()));
        lines.push(format!("key: {} (mode 0600)", files.key.display()));
    }
    if let Some(r) = &s.resumption {
        lines.push(format!("resumption: {r}"));
    }
    lines.join("\n")
}

/// The ALPN protocol ids the front offers over TLS, in its order of preference.
pub fn alpn(http2: bool) -> &'static [&'static str] {
    if http2 {
        &["h2", "http/1.1"]
    } else {
        &["http/1.1"]
    }
}

/// Makes the instance's CA and server certificate and writes them into its run directory.
pub fn write(plan: &Plan) -> Result<Files> {
    let files = Files::in_run(&plan.run);
    let failed = |e: rcgen::Error| Error::Command {
        command: "generating the instance's certificates".into(),
        reason: e.to_string(),
    };
    let now = time::OffsetDateTime::now_utc();
    let (from, until) = (
        now - time::Duration::days(VALID_BEFORE_DAYS),
        now + time::Duration::days(VALID_AFTER_DAYS),
    );

    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
    // A path length of 0: this CA signs server certificates, never another CA.
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name.push(DnType::CommonName, format!("loadlab CA for {}", plan.id));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    (ca.not_before, ca.not_after) = (from, until);
    let ca_key = KeyPair::generate().map_err(failed)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(failed)?;

    // rcgen makes an IP address SAN of each name that parses as one (RFC 5280 section
    // 4.2.1.6): clients check an IP URL's host against those, never against a DNS name.
    let mut leaf = CertificateParams::new(names(plan)).map_err(failed)?;
    leaf.distinguished_name.push(DnType::CommonName, format!("loadlab {}", plan.id));
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    (leaf.not_before, leaf.not_after) = (from, until);
    let key = KeyPair::generate().map_err(failed)?;
    let cert = leaf.signed_by(&key, &ca_cert, &ca_key).map_err(failed)?;

    let dir = files.ca.parent().expect("the files are in tls/");
    crate::state::make_dir_all(dir)?;
    write_file(&files.ca, ca_cert.pem().as_bytes(), 0o644)?;
    write_file(&files.cert, format!("{}{}", cert.pem(), ca_cert.pem()).as_bytes(), 0o644)?;
    write_file(&files.key, key.serialize_pem().as_bytes(), 0o600)?;
    Ok(files)
}

/// Writes `path` created with `mode`, so that a key is never readable by others, not even
/// for an instant.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .context(|| format!("creating {}", path.display()))?;
    file.write_all(bytes).context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knobs::{Knobs, OnOff};

    fn plan(run: &Path, knobs: Knobs) -> Plan {
        Plan {
            id: "nginx-1".into(),
            stack: crate::catalog::stack("nginx").unwrap(),
            knobs,
            run: run.to_path_buf(),
            ports: vec![("nginx", 1)],
            run_as: None,
            apache_modules: "/usr/lib/apache2/modules".into(),
            mod_php: "/usr/lib/apache2/modules/libphp8.2.so".into(),
            net: None,
            listen: None,
        }
    }

    #[test]
    fn the_key_is_private_and_the_chain_names_loopback() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(dir.path(), Knobs { tls: OnOff::On, ..Knobs::default() });
        let files = write(&plan).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&files.key), 0o600);
        assert_eq!(mode(&files.ca), 0o644);
        let chain = std::fs::read_to_string(&files.cert).unwrap();
        assert_eq!(chain.matches("BEGIN CERTIFICATE").count(), 2, "server then CA: {chain}");
        let ca = std::fs::read_to_string(&files.ca).unwrap();
        assert!(chain.ends_with(&ca), "the CA closes the chain");
        assert_eq!(names(&plan), ["127.0.0.1", "localhost", "::1"]);
    }

    /// Behind a network profile the client reaches the namespace's end of the link: that
    /// address comes first (verify and the runner check it), loopback's names after.
    #[test]
    fn behind_a_profile_the_namespace_address_is_named_first() {
        let mut plan =
            plan(Path::new("/nonexistent"), Knobs { tls: OnOff::On, ..Knobs::default() });
        plan.net = Some(crate::plan::NetPlan {
            netns: "/run/netns/x".into(),
            stack_ip: "10.214.0.2".parse().unwrap(),
            client_ip: "10.214.0.1".parse().unwrap(),
        });
        assert_eq!(names(&plan), ["10.214.0.2", "127.0.0.1", "localhost", "::1"]);
        assert_eq!(settings(&plan).names[0], "10.214.0.2");
    }

    #[test]
    fn settings_say_what_the_front_offers() {
        let dir = Path::new("/nonexistent");
        let on = |tls, http2| Knobs { tls, http2, ..Knobs::default() };
        let s = settings(&plan(dir, on(OnOff::On, OnOff::On)));
        assert_eq!((s.tls.as_str(), s.terminator.as_deref()), ("on", Some("nginx")));
        assert_eq!(s.protocols, ["h2", "http/1.1"]);
        assert_eq!(s.files.unwrap().ca, dir.join("tls/ca.pem"));
        let s = settings(&plan(dir, on(OnOff::Off, OnOff::On)));
        assert_eq!(
            (s.tls.as_str(), s.protocols.clone()),
            ("off", vec!["h2c".into(), "http/1.1".into()])
        );
        assert!(s.files.is_none());
    }
}

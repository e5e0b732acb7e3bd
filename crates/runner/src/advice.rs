//! What to tell the user when a run cannot start, beyond the reason: for a lab instance whose
//! certificate the client does not trust, the instance's own CA file to pass.

use loadlab_engine::tls::UNTRUSTED_CA;
use loadlab_engine::EngineError;
use loadlab_lab::Record;

use crate::commands::bench::profiled::same_authority;

/// `err` with `--cacert FILE` made `--cacert PATH` when the target is one of `instances` (the
/// lab's, as recorded; asked only for such an error) and that instance serves TLS with a CA
/// of its own.
pub fn lab_ca(err: EngineError, instances: impl FnOnce() -> Vec<Record>) -> EngineError {
    let EngineError::Unreachable { target, reason } = err else { return err };
    if !reason.contains(UNTRUSTED_CA) {
        return EngineError::Unreachable { target, reason };
    }
    let ca =
        instances().into_iter().find(|r| same_authority(&r.url, &target)).and_then(|r| r.cacert());
    let reason = match ca {
        Some(ca) => reason
            .replace(UNTRUSTED_CA, &format!("--cacert {} (the lab instance's CA)", ca.display())),
        None => reason,
    };
    EngineError::Unreachable { target, reason }
}

/// A bench's error with [`lab_ca`]'s advice, the instances read from this user's lab (as
/// `StateDir::from_env` finds it).
pub fn bench_with_lab_ca(
    e: crate::commands::bench::BenchError,
) -> crate::commands::bench::BenchError {
    use crate::commands::bench::BenchError;
    let instances = || {
        let lab = loadlab_lab::Lab::from_env().and_then(|lab| lab.instances());
        lab.map(|all| all.into_iter().map(|(r, _)| r).collect()).unwrap_or_default()
    };
    match e {
        BenchError::Engine(e) => BenchError::Engine(lab_ca(e, instances)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untrusted_target_that_is_no_lab_instance_keeps_the_generic_advice() {
        let reason = format!("TLS: reached the server, but ...: pass {UNTRUSTED_CA} ...");
        let err = EngineError::Unreachable { target: "127.0.0.1:1".into(), reason };
        let EngineError::Unreachable { reason, .. } = lab_ca(err, Vec::new) else { panic!() };
        assert!(reason.contains(UNTRUSTED_CA), "{reason}");
    }
}

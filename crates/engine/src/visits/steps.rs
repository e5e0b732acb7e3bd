//! `--visits FILE`: a visit file (TOML steps, `loadlab_visit::visit_file`) read into the run's
//! plan, and the configuration that runs it: visitors arriving at `--rate` visits a second
//! (open loop), or a closed population of `-c` visitors, each starting its next visit when one
//! ends. Either way `-n` counts visits.

use loadlab_visit::Vars;

use super::carry::Render;
use super::Plan;
use crate::mix::Mix;
use crate::EngineError;

/// A visit file, read and planned.
#[derive(Debug)]
pub struct VisitFile {
    pub plan: Plan,
    pub mix: Mix,
}

impl VisitFile {
    /// Reads `file` for `config`'s target and base request, with the values `given` (as
    /// [`VisitFile::parse`] takes them). `per_visitor` is the connections
    /// one visitor may hold; when not given, as many as its largest step needs (one for steps
    /// without resources) up to [`super::PER_VISITOR`].
    pub fn read(
        file: &str,
        config: &crate::BenchConfig,
        per_visitor: Option<usize>,
        given: Vars,
    ) -> Result<VisitFile, EngineError> {
        let text = std::fs::read_to_string(file).map_err(|e| EngineError::Input {
            file: file.to_string(),
            line: None,
            what: e.to_string(),
        })?;
        VisitFile::parse(&text, file, config, per_visitor, given)
    }

    /// A visit file's `text` (named `file` in messages), with values the run gives every
    /// visitor before its first step (`given`: a user and a password a lab set up), which its
    /// steps may use as `{name}` like captured ones.
    pub fn parse(
        text: &str,
        file: &str,
        config: &crate::BenchConfig,
        per_visitor: Option<usize>,
        given: Vars,
    ) -> Result<VisitFile, EngineError> {
        let names: Vec<&str> = given.keys().map(String::as_str).collect();
        let visit = loadlab_visit::visit_file::parse(text, file, &names)
            .map_err(|e| EngineError::Config(e.to_string()))?;
        // A value given for a name no step uses is a mistake (a typo of the name, or the
        // wrong file), not something to ignore.
        if let Some(unused) = names.iter().find(|n| !visit.uses(n)) {
            return Err(EngineError::Config(format!(
                "{file}: a value is given for {{{unused}}}, which no step uses"
            )));
        }
        let widest = visit.bursts.iter().map(|b| b.calls.len()).max().unwrap_or(1);
        let per_visitor = per_visitor.unwrap_or(widest.min(super::PER_VISITOR));
        let render = Render {
            base: config.request.clone(),
            target: config.target.clone(),
            keepalive: config.keepalive,
            given,
        };
        let (plan, mix) = Plan::carrying(file, &visit, per_visitor, render)?;
        Ok(VisitFile { plan, mix })
    }

    /// Makes `config` run these visits: at `rate` visits a second arriving as `arrival` says,
    /// or, without a rate, `config.connections` visitors in a closed loop. The stop condition
    /// (`-n`, `-d`) is `config`'s, counting visits.
    pub fn apply(
        self,
        config: &mut crate::BenchConfig,
        rate: Option<f64>,
        arrival: crate::Arrival,
    ) {
        super::wsesslog::run_plan(config, self.plan, self.mix, rate, arrival);
    }
}

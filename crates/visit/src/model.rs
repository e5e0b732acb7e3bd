//! What one visit is: bursts of calls with a think time after each. Both file formats read into
//! this shape, and the engine drives nothing else.

use std::time::Duration;

use rand::Rng;

use crate::capture::{Capture, Check};
use crate::template::Template;

/// One visitor's visit: its bursts in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Visit {
    /// The session's or the visit file's name, for the output ("session 2", "log in").
    pub name: String,
    pub bursts: Vec<Burst>,
}

/// Calls that go together: the first alone, the others once its answer is in (httperf's
/// burst; a page and its resources). The think time follows the burst's last answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Burst {
    pub calls: Vec<Call>,
    /// The pause after this burst's last answer before the next burst; `None` takes the
    /// run's default (httperf's X of `--wsesslog N,X,FILE`).
    pub think: Option<Think>,
}

/// One request of a visit and what its answer must show and gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub method: String,
    /// The request target; `{name}` stands for a value captured earlier.
    pub path: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Option<Template>,
    /// Conditions on the answer; the first one broken ends the visit.
    pub checks: Vec<Check>,
    /// Values the answer gives to later calls.
    pub captures: Vec<Capture>,
}

impl Call {
    /// A GET of `path`, nothing checked or captured.
    pub fn get(path: &str) -> Call {
        Call {
            method: "GET".to_string(),
            path: Template::literal(path),
            headers: Vec::new(),
            body: None,
            checks: Vec::new(),
            captures: Vec::new(),
        }
    }

    /// The `{name}`s its request uses.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.path
            .names()
            .chain(self.headers.iter().flat_map(|(_, v)| v.names()))
            .chain(self.body.iter().flat_map(|b| b.names()))
    }

    /// The class of the first of its checks that `answer` breaks ([`Check::class`]).
    pub fn broken(&self, answer: &crate::Response<'_>) -> Option<&'static str> {
        self.checks.iter().find(|c| !c.holds(answer)).map(Check::class)
    }

    /// Whether the request's bytes are the same every time: nothing in it is captured.
    pub fn is_static(&self) -> bool {
        self.path.is_static()
            && self.headers.iter().all(|(_, v)| v.is_static())
            && self.body.as_ref().is_none_or(Template::is_static)
    }
}

/// How long a visitor thinks between bursts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    Fixed(Duration),
    /// Exponentially distributed with this mean, as independent people pause.
    Exponential {
        mean: Duration,
    },
}

impl Think {
    /// One think time.
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        match *self {
            Think::Fixed(d) => d,
            Think::Exponential { mean } => {
                // By inversion: -ln(U) x mean, with 1 - U in (0, 1] so the logarithm is finite.
                let u: f64 = 1.0 - rng.random::<f64>();
                Duration::from_secs_f64(-u.ln() * mean.as_secs_f64())
            }
        }
    }
}

impl Visit {
    /// Every call of the visit, in order.
    pub fn calls(&self) -> impl Iterator<Item = &Call> {
        self.bursts.iter().flat_map(|b| b.calls.iter())
    }

    /// Whether some call's request uses `{name}`.
    pub fn uses(&self, name: &str) -> bool {
        self.calls().any(|c| c.names().any(|n| n == name))
    }

    /// The number of requests one visit makes when nothing fails.
    pub fn requests(&self) -> usize {
        self.bursts.iter().map(|b| b.calls.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn exponential_think_has_its_mean() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        let think = Think::Exponential { mean: Duration::from_millis(100) };
        let n = 20_000;
        let total: f64 = (0..n).map(|_| think.sample(&mut rng).as_secs_f64()).sum();
        // The mean of n exponentials has a relative standard deviation of 1/sqrt(n) = 0.7%.
        assert!((total / n as f64 - 0.1).abs() < 0.005, "{}", total / n as f64);
        let fixed = Think::Fixed(Duration::from_millis(7));
        assert_eq!(fixed.sample(&mut rng), Duration::from_millis(7));
    }
}

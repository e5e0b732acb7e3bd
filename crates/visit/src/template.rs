//! Request text with `{name}` holes that captured values fill. Parsed once when the file is
//! read, so a missing name is found then (against the captures of earlier calls) and rendering
//! is a copy.

use std::collections::HashMap;

/// The values a visitor captured so far, by name.
pub type Vars = HashMap<String, String>;

/// Why a value given by the run (`--given NAME=VALUE`, a suite's `given`) cannot be: a name a
/// `{NAME}` cannot hold, `{visitor}` (the visitor's number, which no run gives), or a control
/// character in the value (it goes into request lines and header fields as it is).
pub fn given_refusal(name: &str, value: &str) -> Option<&'static str> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        Some("a name is letters, digits, _ and - (as {NAME} in the visit file)")
    } else if name == crate::VISITOR {
        Some("{visitor} is the visitor's number, which no run gives")
    } else if value.chars().any(char::is_control) {
        Some("a value holds no control characters")
    } else {
        None
    }
}

/// Literal text and named holes, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(String),
}

impl Template {
    /// Text without holes (httperf's session logs have none: a `{` there is a `{`).
    pub fn literal(text: &str) -> Template {
        Template { parts: vec![Part::Text(text.to_string())] }
    }

    /// Reads `{name}` holes (name: letters, digits, `_`, `-`); any other brace is text.
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut literal = String::new();
        while let Some(open) = rest.find('{') {
            let after = &rest[open + 1..];
            let name_len = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(after.len());
            if name_len > 0 && after[name_len..].starts_with('}') {
                literal.push_str(&rest[..open]);
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Var(after[..name_len].to_string()));
                rest = &after[name_len + 1..];
            } else {
                literal.push_str(&rest[..=open]);
                rest = after;
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() || parts.is_empty() {
            parts.push(Part::Text(literal));
        }
        Template { parts }
    }

    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// The text as written, holes as `{name}` (a step's name in the figures).
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Var(n) => format!("{{{n}}}"),
            })
            .collect()
    }

    /// The names of the holes.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(n) => Some(n.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The text with each hole filled, appended to `out`; the first name without a value is
    /// the error.
    pub fn render(&self, vars: &Vars, out: &mut String) -> Result<(), String> {
        self.render_or(vars, out, |name, _| Err(name.to_string()))
    }

    /// The text with each hole that `vars` has a value for filled, the others as written (a
    /// given value's `{visitor}` filled, any other brace its own).
    pub fn to_string_keeping(&self, vars: &Vars) -> String {
        let mut out = String::new();
        let kept: Result<(), String> = self.render_or(vars, &mut out, |name, out| {
            out.push_str(&format!("{{{name}}}"));
            Ok(())
        });
        debug_assert!(kept.is_ok());
        out
    }

    /// [`Template::render`], `missing` deciding what a hole without a value does.
    fn render_or(
        &self,
        vars: &Vars,
        out: &mut String,
        missing: impl Fn(&str, &mut String) -> Result<(), String>,
    ) -> Result<(), String> {
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Var(n) => match vars.get(n) {
                    Some(v) => out.push_str(v),
                    None => missing(n, out)?,
                },
            }
        }
        Ok(())
    }

    /// The text with each hole filled.
    pub fn to_string_with(&self, vars: &Vars) -> Result<String, String> {
        let mut s = String::new();
        self.render(vars, &mut s)?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_are_filled_and_other_braces_stay() {
        let t = Template::parse("/p?n={nonce}&x={}&{a b}&id={post_id}");
        assert_eq!(t.names().collect::<Vec<_>>(), ["nonce", "post_id"]);
        let vars: Vars = [("nonce", "ab12"), ("post_id", "7")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(t.to_string_with(&vars).unwrap(), "/p?n=ab12&x={}&{a b}&id=7");
        assert_eq!(t.to_string_with(&Vars::new()), Err("nonce".to_string()));
        assert!(Template::parse("/plain{").is_static());
        assert_eq!(t.text(), "/p?n={nonce}&x={}&{a b}&id={post_id}");
        assert_eq!(Template::parse("").to_string_with(&vars).unwrap(), "");
    }

    #[test]
    fn a_given_value_needs_a_template_name_and_no_control_character() {
        assert_eq!(given_refusal("user", "member-{visitor}"), None);
        for (name, value) in [("", "x"), ("a b", "x"), ("visitor", "1"), ("pw", "a\r\nX: y")] {
            assert!(given_refusal(name, value).is_some(), "{name}={value:?}");
        }
    }
}

//! Rendering the config templates in `templates/`: `{{name}}` is replaced by a value; a
//! placeholder without a value is a bug in loadlab, caught by the snapshot tests.

/// `template` with every `{{name}}` replaced by its value in `vars`.
pub fn render(template: &str, vars: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").unwrap_or_else(|| panic!("unclosed {{{{ in template"));
        let name = &after[..end];
        let value = vars
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("template placeholder {{{{{name}}}}} has no value"));
        out.push_str(&value.1);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn placeholders_are_replaced() {
        let vars = [("port", "8080".to_string()), ("root", "/www".to_string())];
        assert_eq!(
            render("listen {{port}}; root {{root}};{{port}}", &vars),
            "listen 8080; root /www;8080"
        );
        assert_eq!(render("no placeholders", &vars), "no placeholders");
    }

    #[test]
    #[should_panic(expected = "has no value")]
    fn a_missing_value_is_a_bug() {
        render("{{nope}}", &[]);
    }
}

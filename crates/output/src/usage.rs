//! A command line clap refused, as one line in loadlab's style: the message with its details,
//! a useful tip kept (a similar flag's name), the misleading one dropped (clap suggests `-- -k`
//! to pass an unknown flag as a value), and the help of the subcommand the user typed.

/// The line for clap's error `e` on the command tree `cli`, given the arguments typed (without
/// the program's name). `loadlab` alone, and a subcommand that needs one of its own (`loadlab
/// stack`), name the subcommands in one line.
pub fn line(e: &clap::Error, cli: &clap::Command, args: impl Iterator<Item = String>) -> String {
    let path = subcommand_path(cli, args);
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let typed: String = path.iter().map(|p| format!(" {p}")).collect();
        let names = subcommands(cli, &path);
        if names.is_empty() {
            format!("'loadlab{typed}' needs arguments; see 'loadlab{typed} --help'")
        } else {
            let names = names.join(", ");
            format!("'loadlab{typed}' needs a subcommand: {names}; see 'loadlab{typed} --help'")
        }
    } else {
        one_line(&e.render().to_string(), &path)
    }
}

/// The subcommands the user typed, outermost first (`["stack", "up"]`): each argument that
/// names a subcommand of the one before, flags passed over, up to the first that does not (an
/// unknown one stops there, so its error points at the help that lists the right ones).
fn subcommand_path(cli: &clap::Command, args: impl Iterator<Item = String>) -> Vec<String> {
    let mut at = cli;
    let mut path = Vec::new();
    for arg in args {
        if arg.starts_with('-') {
            continue;
        }
        match at.find_subcommand(&arg) {
            Some(sub) if sub.get_name() != "help" => {
                path.push(sub.get_name().to_string());
                at = sub;
            }
            _ => break,
        }
    }
    path
}

/// The visible subcommands of the one at `path`, by name.
fn subcommands(cli: &clap::Command, path: &[String]) -> Vec<String> {
    let at = path.iter().fold(cli, |c, name| c.find_subcommand(name).unwrap_or(c));
    at.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .map(|s| s.get_name().to_string())
        .collect()
}

/// clap's rendered error as one line: the message with its details (the missing arguments),
/// its useful tips, and the help to read.
fn one_line(rendered: &str, path: &[String]) -> String {
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines.next().unwrap_or("bad arguments");
    let mut out = message.strip_prefix("error: ").unwrap_or(message).to_string();
    for line in lines {
        if let Some(tip) = line.strip_prefix("tip: ") {
            if !tip.contains("as a value, use '--") {
                out.push_str(&format!(" ({tip})"));
            }
        } else if !line.starts_with("Usage: ") && !line.starts_with("For more information") {
            out.push(' ');
            out.push_str(line);
        }
    }
    let help: String = path.iter().map(|p| format!("{p} ")).collect();
    format!("{out}; see 'loadlab {help}--help'")
}

#[cfg(test)]
mod tests {
    use super::{one_line, subcommand_path};

    #[test]
    fn a_clap_error_becomes_one_line_without_the_misleading_tip() {
        let rendered =
            "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a \
                        value, use '-- --bogus'\n\nUsage: loadlab bench [OPTIONS] <URL>\n\nFor \
                        more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered, &["bench".into()]),
            "unexpected argument '--bogus' found; see 'loadlab bench --help'"
        );
        let similar = "error: unexpected argument '--rat' found\n\n  tip: a similar argument \
                       exists: '--rate'\n\nUsage: loadlab bench [OPTIONS] <URL>\n";
        assert_eq!(
            one_line(similar, &["bench".into()]),
            "unexpected argument '--rat' found (a similar argument exists: '--rate'); see \
             'loadlab bench --help'"
        );
        let missing = "error: the following required arguments were not provided:\n  \
                       <URL>\n\nUsage: loadlab bench <URL>\n";
        assert_eq!(
            one_line(missing, &[]),
            "the following required arguments were not provided: <URL>; see 'loadlab --help'"
        );
        let nested = "error: unexpected argument '--bogus' found\n\nUsage: loadlab stack up\n";
        assert_eq!(
            one_line(nested, &["stack".into(), "up".into()]),
            "unexpected argument '--bogus' found; see 'loadlab stack up --help'"
        );
    }

    /// Errors under `stack up` point at `loadlab stack up --help`, not at `loadlab stack
    /// --help`, which does not list up's flags.
    #[test]
    fn the_help_pointed_at_is_the_innermost_subcommand_typed() {
        use clap::{Arg, Command};
        let cli = Command::new("loadlab")
            .subcommand(Command::new("bench").arg(Arg::new("method").short('m')))
            .subcommand(Command::new("stack").subcommand(Command::new("up")));
        let path = |args: &[&str]| subcommand_path(&cli, args.iter().map(|a| a.to_string()));
        assert_eq!(path(&["stack", "up", "--bogus", "nginx"]), ["stack", "up"]);
        assert_eq!(path(&["stack", "frob"]), ["stack"]);
        assert_eq!(path(&["bench", "-m", "stack", "http://x/"]), ["bench"]);
        assert!(path(&["frobnicate"]).is_empty());
        assert!(path(&["--bogus"]).is_empty());
    }
}

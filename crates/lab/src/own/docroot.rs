//! A document root of the user's, served beside the lab's workload files rather than instead
//! of them: the lab's verify keeps checking its own files (the server that answered, PHP
//! executed, the cache hit) on every start, so a stack with the user's site is still known
//! to be the stack it claims to be. A file of the user's that would replace one of the lab's
//! is refused before anything starts; directories merge.

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::Path;

use crate::catalog::Stack;
use crate::error::{Error, IoContext, Result};
use crate::knobs::Knobs;
use crate::state::make_dir_all;
use crate::workloads::{self, sha256_hex};

/// What an entry of the user's docroot is. Symbolic links are copied as links, never
/// followed: a link out of the tree points where it pointed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Link,
    /// A socket, a fifo, a device: nothing a web server serves.
    Other,
}

/// Every entry under `root`, parents before their children, by path relative to `root`
/// with `/` between components.
fn walk(root: &Path) -> io::Result<Vec<(String, Kind)>> {
    let mut out = Vec::new();
    let mut pending = vec![String::new()];
    while let Some(rel) = pending.pop() {
        let dir = if rel.is_empty() { root.to_path_buf() } else { root.join(&rel) };
        let mut entries: Vec<fs::DirEntry> = fs::read_dir(&dir)?.collect::<io::Result<_>>()?;
        entries.sort_by_key(fs::DirEntry::file_name);
        // Reversed onto the stack, so directories are walked in name order.
        let mut dirs = Vec::new();
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            let t = entry.file_type()?;
            let kind = if t.is_symlink() {
                Kind::Link
            } else if t.is_dir() {
                Kind::Dir
            } else if t.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            if kind == Kind::Dir {
                dirs.push(path.clone());
            }
            out.push((path, kind));
        }
        pending.extend(dirs.into_iter().rev());
    }
    Ok(out)
}

/// The paths the lab writes into the document root of `stack`: its workload files, and
/// WordPress's site (whose top-level entries stand for everything under them).
fn lab_paths(stack: &Stack, knobs: &Knobs) -> Vec<String> {
    let mut paths: Vec<String> =
        workloads::lab_paths(stack, knobs).into_iter().map(str::to_string).collect();
    if stack.wordpress {
        paths.extend(crate::servers::wordpress::site_entries());
    }
    paths
}

/// Why the user's docroot at `root` cannot go beside the lab's files of `stack`, if it
/// cannot: an entry that would replace one of the lab's files (or stand where the lab needs
/// a directory), or one that is neither a file, a directory nor a link.
pub fn clash(root: &Path, stack: &Stack, knobs: &Knobs) -> Option<String> {
    let entries = match walk(root) {
        Ok(entries) => entries,
        Err(e) => return Some(format!("reading {}: {e}", root.display())),
    };
    let lab = lab_paths(stack, knobs);
    for (path, kind) in entries {
        if kind == Kind::Other {
            return Some(format!(
                "{}/{path} is not a file, a directory or a symbolic link",
                root.display()
            ));
        }
        // The lab's paths are files: one of the user's by that name (a directory too)
        // replaces it, and one of the user's files where the lab needs a directory
        // (`templates` against the lab's `templates/complex.tpl`) stops it being written.
        let taken = lab
            .iter()
            .find(|l| **l == path || (kind != Kind::Dir && l.starts_with(&format!("{path}/"))));
        if let Some(l) = taken {
            return Some(format!(
                "{}/{path} would replace the lab's {l} in {}, which its verify checks: your \
                 files are served beside the lab's, so rename yours",
                root.display(),
                stack.name
            ));
        }
    }
    None
}

/// Copies the user's docroot at `root` into the instance's document root `into`, beside the
/// lab's files (already written), readable by the workers whichever user they run as, and
/// writes the list of what was copied to `manifest`: each file's SHA-256, size and path, so
/// that a run records exactly which site it served.
pub fn copy(root: &Path, into: &Path, manifest: &Path) -> Result<()> {
    let entries = walk(root).context(|| format!("reading {}", root.display()))?;
    let (mut files, mut bytes) = (0u64, 0u64);
    let mut lines = Vec::new();
    for (path, kind) in entries {
        let (from, to) = (root.join(&path), into.join(&path));
        match kind {
            Kind::Dir => make_dir_all(&to)?,
            Kind::File => {
                // Checked before the start (see `clash`); this guards a file the lab came
                // to write since, rather than silently serving the user's in its place.
                if to.symlink_metadata().is_ok() {
                    return Err(Error::BadKnob(format!(
                        "--docroot: {} would replace the lab's {path}: rename yours",
                        from.display()
                    )));
                }
                let data = fs::read(&from).context(|| format!("reading {}", from.display()))?;
                workloads::write(&to, &data)?;
                lines.push((
                    path.clone(),
                    format!("{}  {:>10}  {path}", sha256_hex(&data), data.len()),
                ));
                files += 1;
                bytes += data.len() as u64;
            }
            Kind::Link => {
                let target =
                    fs::read_link(&from).context(|| format!("reading {}", from.display()))?;
                symlink(&target, &to).context(|| format!("linking {}", to.display()))?;
                let line = format!("{:>64}  {:>10}  {path} -> {}", "link", "", target.display());
                lines.push((path.clone(), line));
            }
            Kind::Other => {
                return Err(Error::BadKnob(format!(
                    "--docroot: {} is not a file, a directory or a symbolic link",
                    from.display()
                )))
            }
        }
    }
    lines.sort();
    let lines: Vec<String> = lines.into_iter().map(|(_, line)| line).collect();
    let text = format!(
        "# {files} {}, {bytes} bytes, copied from {} beside the lab's files\n{}\n",
        if files == 1 { "file" } else { "files" },
        root.display(),
        lines.join("\n")
    );
    workloads::write(manifest, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::stack;
    use crate::knobs::OnOff;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for f in files {
            let path = dir.path().join(f);
            if f.ends_with('/') {
                fs::create_dir_all(path).unwrap();
            } else {
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(path, f.as_bytes()).unwrap();
            }
        }
        dir
    }

    #[test]
    fn the_users_files_go_beside_the_labs() {
        let site = tree(&["index.php", "app/.htaccess", "app/templates/a.tpl", "img/"]);
        let php = stack("nginx-fpm").unwrap();
        let db = Knobs { db: Some(OnOff::On), ..Knobs::default() };
        assert_eq!(clash(site.path(), php, &Knobs::default()), None);
        assert_eq!(clash(site.path(), php, &db), None);
        let into = tempfile::tempdir().unwrap();
        workloads::write_docroot(into.path(), php, None).unwrap();
        let manifest = into.path().join("manifest");
        copy(site.path(), into.path(), &manifest).unwrap();
        assert_eq!(
            fs::read(into.path().join("app/templates/a.tpl")).unwrap(),
            b"app/templates/a.tpl"
        );
        assert!(into.path().join("img").is_dir() && into.path().join("hello.php").is_file());
        let listed = fs::read_to_string(&manifest).unwrap();
        assert!(listed.starts_with("# 3 files, 41 bytes, copied from "), "{listed}");
        assert!(listed.contains(&sha256_hex(b"index.php")), "{listed}");
        assert!(listed.contains("  app/.htaccess\n"), "{listed}");
    }

    #[test]
    fn a_file_that_would_replace_one_of_the_labs_is_refused_naming_both() {
        let php = stack("nginx-fpm").unwrap();
        let site = tree(&["robots.txt"]);
        let reason = clash(site.path(), php, &Knobs::default()).unwrap();
        assert!(
            reason.ends_with(
                "/robots.txt would replace the lab's robots.txt in nginx-fpm, \
                                  which its verify checks: your files are served beside the \
                                  lab's, so rename yours"
            ),
            "{reason}"
        );
        // A directory of the lab's merges; a file where the lab needs a directory does not.
        let db = Knobs { db: Some(OnOff::On), ..Knobs::default() };
        assert_eq!(clash(tree(&["templates/mine.tpl"]).path(), php, &db), None);
        let reason = clash(tree(&["templates"]).path(), php, &db).unwrap();
        assert!(reason.contains("replace the lab's templates/complex.tpl"), "{reason}");
        // The probe's directory is the lab's whatever it holds.
        let reason = clash(tree(&["_loadlab/status.php/"]).path(), php, &db).unwrap();
        assert!(reason.contains("replace the lab's _loadlab/status.php"), "{reason}");
        // Without PHP, the lab writes no PHP pages: a hello.php of the user's is served.
        assert_eq!(clash(tree(&["hello.php"]).path(), stack("nginx").unwrap(), &db), None);
    }

    #[test]
    fn a_wordpress_plugin_joins_the_sites_own_but_its_config_and_themes_are_the_labs() {
        let wordpress = stack("wordpress-nginx-fpm").unwrap();
        let none = Knobs::default();
        assert_eq!(
            clash(tree(&["wp-content/plugins/mine/mine.php"]).path(), wordpress, &none),
            None
        );
        for taken in ["wp-config.php", "wp-content/themes/mine/style.css"] {
            let reason = clash(tree(&[taken]).path(), wordpress, &none).unwrap();
            assert!(reason.contains("would replace the lab's wp-"), "{reason}");
        }
    }
}

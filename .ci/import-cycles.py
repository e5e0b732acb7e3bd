#!/usr/bin/env python3
"""Module-level import circles in crates/*/src: a module that uses another which, directly or
through others, uses it back. Prints each circle and exits 1 when there is one.

A module is a file (an inline `mod x { .. }` belongs to the file it is written in). An edge
A -> B is a path in A that names B or an item of B:
- in code and in `use`: `crate::b::f`, `super::x`, `self::y`, or `c::z` for A's own child `c`
  (uniform paths: a path may start with a child module's name);
- in attributes, where a path is a string (`#[serde(with = "crate::wire::b64")]`,
  `serialize_with`, `default`, ...): serde calls it, so A depends on it as on code.
A path through a module's re-export (`pub use`) is a use of that module, not of the file that
defines the item: `crate::visits::SessionTally` depends on everything `visits` itself uses.
The crate root alone is a facade: a path through its re-exports is followed to the module it
names. A path to one of A's ancestors (`super::Limits`, an item of the root) is A reading the
scope it is written in, not an import, so it is no edge; a parent's use of its children is
one, since whoever uses the parent uses what it hands on to them.
`mod b;` and a `pub use` of the module's own descendants declare, they do not use.
Test-only files (`tests.rs`, `*_tests.rs`, `fake.rs`, `testcell.rs`) and inline
`#[cfg(test)]` modules are left out: they exist to use their parent."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "crates"

USE_RE = re.compile(r"\buse\s+((?:::)?[\w{}*,\s:]+)\s*;", re.S)
# A path of two or more segments, not the tail of a longer one (`a::b::c` is read once).
PATH_RE = re.compile(r"(?<![\w:])((?:\$?crate|super|self|[a-z_]\w*)(?:\s*::\s*\w+)+)")
MOD_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
INLINE_MOD_RE = re.compile(r"\b(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{")
REEXPORT_RE = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);")
TEST_MOD_RE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
TEST_ONLY = re.compile(r"(^|/)(tests|fake|\w+_tests|testcell)\.rs$")
ATTR_PATH = re.compile(r"(?:crate|super|self|[a-z_]\w*)(?:::\w+)+")


def strip(text: str) -> str:
    """Comments and literals out, so `crate::x` in a doc comment or a message is no edge; a
    string inside an attribute (`#[...]`) that is a path stays, unquoted, since it names code."""
    out, i, n = [], 0, len(text)
    attr_depth = None  # bracket depth inside the current attribute, or None outside one
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "r" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")) and re.match(r'r#*"', text[i:]):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            j = text.find('"' + hashes, i + len(hashes) + 2)
            out.append('""')
            i = n if j < 0 else j + 1 + len(hashes)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            body = text[i + 1 : j]
            if attr_depth is not None and ATTR_PATH.fullmatch(body):
                out.append(f" {body} ")
            else:
                out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append("' '")
            i += m.end()
        else:
            if attr_depth is None and c == "#" and re.match(r"#!?\[", text[i:]):
                attr_depth = 0
            elif attr_depth is not None and c == "[":
                attr_depth += 1
            elif attr_depth is not None and c == "]":
                attr_depth -= 1
                if attr_depth == 0:
                    attr_depth = None
            out.append(c)
            i += 1
    return "".join(out)


def block_end(text: str, open_at: int) -> int:
    """The index just past the `}` that closes the `{` at `open_at` (text already stripped)."""
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


class Crate:
    def __init__(self, src: Path):
        self.src = src
        root = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
        self.files = {}  # module path tuple -> file
        self.text = {}  # module path tuple -> stripped text
        self.walk(root, ())

    def walk(self, file: Path, module: tuple):
        self.files[module] = file
        self.text[module] = text = strip(file.read_text())
        if file.name in ("lib.rs", "main.rs", "mod.rs"):
            base = file.parent
        else:
            base = file.parent / file.stem
        for m in MOD_RE.findall(text):
            # #[path] is not used in this tree; mod.rs or NAME.rs.
            for cand in (base / f"{m}.rs", base / m / "mod.rs"):
                if cand.exists():
                    self.walk(cand, module + (m,))
                    break

    def resolve(self, module: tuple, path: list) -> tuple:
        """The file module that `path`, written in `module` (a file's module and the inline
        modules around the path), names or names an item of; None for another crate's."""
        if path[0] in ("crate", "$crate"):
            cur, rest = (), path[1:]
        elif path[0] in ("super", "self"):
            cur, rest = module, path
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    cur = cur[:-1]
                rest = rest[1:]
        elif self.file_of(module) + (path[0],) in self.files:
            # Uniform paths: a path may start with a child module's name.
            cur, rest = self.file_of(module), path
        else:
            return None
        cur = self.file_of(cur)
        for seg in rest:
            if cur + (seg,) in self.files:
                cur = cur + (seg,)
            elif cur == ():
                # An item of the root: the facade's re-export of it, if it has one.
                return self.root_reexports().get(seg, cur)
            else:
                break
        return cur

    def file_of(self, module: tuple) -> tuple:
        """The deepest file module that holds `module` (inline modules are part of a file)."""
        while module not in self.files:
            module = module[:-1]
        return module

    def root_reexports(self) -> dict:
        if not hasattr(self, "_root"):
            self._root = {}
            for m in REEXPORT_RE.finditer(self.text[()]):
                for full in expand(m.group(1)):
                    segs = full.split("::")
                    if segs[0] not in ("crate", "super", "self"):
                        segs = ["self"] + segs
                    target = self.resolve((), segs)
                    if target is not None and target != ():
                        self._root[segs[-1]] = target
        return self._root


def expand(tree: str) -> list:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]; `x as y` -> x."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)
    tree = re.sub(r"\s+", "", tree).removeprefix("::")
    out = []

    def go(prefix, s):
        i = s.find("{")
        if i < 0:
            for part in s.split(","):
                if part:
                    out.append((prefix + part).removesuffix("::self"))
            return
        head = s[:i]
        j = block_end(s, i) - 1
        inner = s[i + 1 : j]
        # split inner at top-level commas
        parts, depth, cur = [], 0, ""
        for ch in inner:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        for p in parts:
            if p:
                go(prefix + head, p)

    go("", tree)
    return out


def scopes(text: str, module: tuple) -> list:
    """(start, end, module) of each inline `mod x { .. }` in `text`."""
    out = []
    for m in INLINE_MOD_RE.finditer(text):
        around = [mod for s, e, mod in out if s <= m.start() < e]
        outer = max(around, key=len) if around else module
        out.append((m.end(), block_end(text, m.end() - 1), outer + (m.group(1),)))
    return out


def uses(crate: Crate, module: tuple) -> set:
    """The file modules that `module`'s file uses."""
    text = crate.text[module]
    # Inline test modules use their parent by design.
    for m in reversed(list(TEST_MOD_RE.finditer(text))):
        text = text[: m.start()] + text[block_end(text, m.end() - 1) :]
    inline = scopes(text, module)

    def where(pos):
        inside = [mod for s, e, mod in inline if s <= pos < e]
        return max(inside, key=len) if inside else module

    paths = []  # (module the path is written in, segments)
    # A re-export of the module's own descendants declares them; any other `use` is a use.
    for m in USE_RE.finditer(text):
        at = where(m.start())
        reexport = re.search(r"\bpub(?:\([^)]*\))?\s+$", text[max(0, m.start() - 20) : m.start()])
        for full in expand(m.group(1)):
            segs = full.split("::")
            target = crate.resolve(at, segs)
            if reexport and target is not None and target[: len(module)] == module:
                continue
            paths.append((at, segs))
    rest = USE_RE.sub(lambda m: " " * len(m.group(0)), text)
    for m in PATH_RE.finditer(rest):
        paths.append((where(m.start()), re.sub(r"\s+", "", m.group(1)).split("::")))
    targets = set()
    for at, segs in paths:
        t = crate.resolve(at, segs)
        # An ancestor's items (`super::Limits`, the root's own functions) are the scope the
        # file is written in, not an import; `module` itself is no edge either.
        if t is None or module[: len(t)] == t:
            continue
        targets.add(t)
    return targets


def edges(crate: Crate) -> dict:
    graph = {}
    rel = lambda mod: str(crate.files[mod].relative_to(ROOT))
    for module in crate.files:
        if TEST_ONLY.search(rel(module)):
            continue
        graph[rel(module)] = {rel(t) for t in uses(crate, module) if not TEST_ONLY.search(rel(t))}
    return graph


def cycles(graph: dict) -> list:
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main():
    found = []
    for src in sorted(ROOT.glob("*/src")):
        crate = Crate(src)
        graph = edges(crate)
        for comp in cycles(graph):
            found.append((comp, graph))
    for comp, graph in found:
        print(f"circle of {len(comp)} files:")
        for f in comp:
            inside = sorted(t for t in graph[f] if t in comp)
            print(f"  {f} -> {', '.join(inside)}")
    if found:
        print(f"{len(found)} import circle(s)")
        return 1
    print("no import circles")
    return 0


if __name__ == "__main__":
    sys.exit(main())

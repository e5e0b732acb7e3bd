#!/usr/bin/env python3
"""File-level import circles in crates/*/src: a file that uses another which, directly or
through others, uses it back. Prints each circle and exits 1 when there is one.

An edge A -> B is a path in A (`use crate::b::..`, `super::x`, `self::y`, or a qualified
`crate::b::f()` in code) that names an item of B's module. `mod b;` is a declaration, not a
use, and a `pub use` in a crate root or `mod.rs` only re-exports: a path through a re-export
is followed to the file that defines the item. Test-only files (`tests.rs`, `*_tests.rs`,
`fake.rs` and files under `tests/`) are left out: they exist to use their parent.
"""

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "crates"

USE_RE = re.compile(r"\buse\s+((?:crate|super|self)(?:::[\w{}*,\s:]+)?)\s*;", re.S)
PATH_RE = re.compile(r"\b((?:crate|super|self)(?:::\w+)+)")
MOD_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
TEST_ONLY = re.compile(r"(^|/)(tests|fake|\w+_tests|testcell)\.rs$")


def strip(text: str) -> str:
    """Comments, string and char literals out, so `crate::x` in a doc comment is no edge."""
    out, i, n = [], 0, len(text)
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
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(\\.[^']*|[^\\'])'", text[i:]):
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            out.append("' '")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Crate:
    def __init__(self, src: Path):
        self.src = src
        root = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
        self.files = {}  # module path tuple -> file
        self.walk(root, ())
        self.by_file = {f: m for m, f in self.files.items()}

    def walk(self, file: Path, module: tuple):
        self.files[module] = file
        text = strip(file.read_text())
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
        """The deepest module that `path` (from `module`) names."""
        if path[0] == "crate":
            cur, rest = (), path[1:]
        elif path[0] in ("super", "self"):
            cur = module
            rest = path
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    cur = cur[:-1]
                rest = rest[1:]
        else:
            return None
        for seg in rest:
            if cur + (seg,) in self.files:
                cur = cur + (seg,)
            else:
                # An item of `cur`: follow a re-export of that name, if `cur` re-exports it.
                target = self.reexports(cur).get(seg)
                if target is not None:
                    return target
                break
        return cur

    def reexports(self, module: tuple) -> dict:
        if not hasattr(self, "_re"):
            self._re = {}
        if module in self._re:
            return self._re[module]
        self._re[module] = {}
        text = strip(self.files[module].read_text())
        out = {}
        for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([\w:{}\s,*]+);", text):
            for full in expand(m.group(1)):
                segs = full.split("::")
                if segs[0] not in ("crate", "super", "self"):
                    segs = ["self"] + segs
                name = segs[-1]
                target = self.resolve(module, segs)
                if target is not None and target != module:
                    out[name] = target
        self._re[module] = out
        return out


def expand(tree: str) -> list:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def go(prefix, s):
        i = s.find("{")
        if i < 0:
            for part in s.split(","):
                if part:
                    out.append((prefix + part).removesuffix("::self"))
            return
        head = s[:i]
        depth, j = 0, i
        for j in range(i, len(s)):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                depth -= 1
                if depth == 0:
                    break
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


def edges(crate: Crate) -> dict:
    graph = {}
    for module, file in crate.files.items():
        rel = str(file.relative_to(ROOT))
        if TEST_ONLY.search(rel):
            continue
        text = strip(file.read_text())
        # Drop the re-export lines of roots and mod.rs: they declare, they do not use.
        if file.name in ("lib.rs", "main.rs", "mod.rs"):
            text = re.sub(r"\bpub(?:\([^)]*\))?\s+use\s+[^;]+;", "", text)
        # Inline test modules use their parent by design.
        cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
        if cut:
            text = text[: cut.start()]
        paths = []
        for m in USE_RE.finditer(text):
            paths += expand(m.group(1))
        text_no_use = USE_RE.sub("", text)
        paths += PATH_RE.findall(text_no_use)
        targets = set()
        for p in paths:
            t = crate.resolve(module, p.split("::"))
            if t is None or t == module:
                continue
            # A path into a descendant names that descendant, not the parent that declares it;
            # a path to an ancestor's own item is a use of the ancestor.
            f = crate.files[t]
            if TEST_ONLY.search(str(f.relative_to(ROOT))):
                continue
            targets.add(str(f.relative_to(ROOT)))
        graph[rel] = targets
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

#!/usr/bin/env python3
"""Functions longer than a limit (default 80 lines, signature to closing brace) in the given
Rust source trees (default: crates/*/src). Test modules and test-only files are left out.
Prints each, longest first; exits 1 when there is one.

    .ci/long-functions.py [--max N] [PATH...]
"""

import argparse
import re
import sys
from pathlib import Path

FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
                r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")
TEST_ONLY = re.compile(r"(^|/)(tests|fake|\w+_tests|testcell)\.rs$|/tests/")


def functions(path: Path):
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"\s*#\[cfg\(test\)\]", line):
            # Skip the test module that follows: to its closing brace at the same indent.
            indent = len(line) - len(line.lstrip())
            j = i + 1
            while j < len(lines) and not (
                lines[j].startswith(" " * indent + "}") and len(lines[j]) - len(lines[j].lstrip()) == indent
            ):
                j += 1
            i = j + 1
            continue
        m = FN.match(line)
        if m and not line.rstrip().endswith(";"):
            indent = m.group(1)
            j = i
            # The body ends at the first line that is the indent's closing brace.
            while j < len(lines) and not (lines[j] == indent + "}" or (j == i and line.rstrip().endswith("}"))):
                j += 1
            yield m.group(2), i + 1, j - i + 1
            i += 1
            continue
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=80)
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    paths = [Path(p) for p in args.paths] or sorted(root.glob("crates/*/src"))
    long = []
    for base in paths:
        files = [base] if base.is_file() else sorted(base.rglob("*.rs"))
        for f in files:
            if TEST_ONLY.search(str(f)):
                continue
            for name, line, n in functions(f):
                if n > args.max:
                    long.append((n, f"{f.relative_to(root) if f.is_absolute() else f}:{line}", name))
    for n, where, name in sorted(long, reverse=True):
        print(f"{n:5} {where} {name}")
    print(f"{len(long)} function(s) over {args.max} lines")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The cli's size budget (issue 20): the binary crate only parses arguments and prints, so its
non-test code stays under a limit (default 2,500 lines). A file counts up to its first
`#[cfg(test)]` line; files that are tests themselves (tests.rs, *_tests.rs, under tests/) do
not count. Prints each file's count, largest first, and the total; exits 1 over the limit.

    .ci/cli-lines.py [--max N] [PATH]
"""

import argparse
import re
import sys
from pathlib import Path

TEST_ONLY = re.compile(r"(^|/)(tests|\w+_tests)\.rs$|/tests/")
TEST_MODULE = re.compile(r"\s*#\[cfg\(test\)\]")


def counted(path: Path) -> int:
    n = 0
    for line in path.read_text().splitlines():
        if TEST_MODULE.match(line):
            break
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=2500)
    ap.add_argument("path", nargs="?")
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    base = Path(args.path) if args.path else root / "crates/cli/src"
    counts = sorted(
        ((counted(f), f.relative_to(base)) for f in base.rglob("*.rs")
         if not TEST_ONLY.search(str(f.relative_to(base)))),
        key=lambda c: (-c[0], str(c[1])),
    )
    total = sum(n for n, _ in counts)
    for n, f in counts:
        print(f"{n:6} {f}")
    print(f"{total:6} total (limit {args.max})")
    if total > args.max:
        print(f"cli-lines: {base} has {total} lines of non-test code, over {args.max}: move "
              "what decides or conducts into a library", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

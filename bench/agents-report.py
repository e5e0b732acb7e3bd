"""One round of bench/agents.sh, read back: the merged test (agent 0's JSON), each agent's own
JSON and --hdr-log, and /usr/bin/time's CPU seconds per agent.

Usage: agents-report.py open|closed WORK AGENTS ROUND

The merged p99 is set beside the p99 of the agents' own interval logs added by HdrHistogram's
reference reader (PyPI `hdrhistogram`): equal when the merge is exact. The start skew bound is
broken into its parts (how late each agent woke by its clock, and the clock error), so that a
large bound says which one made it.
"""

import json
import os
import sys
import tempfile

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader


def added_logs(paths, tag):
    """The intervals tagged `tag` of every log, added by the reference reader."""
    total = HdrHistogram(1, 3_600_000_000, 3)
    for path in paths:
        # The reader keeps no tag: only the tag's lines are handed to it, without the tag.
        with open(path) as f, tempfile.NamedTemporaryFile("w", suffix=".hlog", delete=False) as t:
            for line in f:
                if line.startswith("Tag="):
                    name, _, rest = line.partition(",")
                    if name[4:] == tag:
                        t.write(rest)
                elif not tag or line.startswith("#") or line.startswith('"'):
                    t.write(line)
        reader = HistogramLogReader(t.name, HdrHistogram(1, 3_600_000_000, 3))
        while True:
            h = reader.get_next_interval_histogram()
            if h is None:
                break
            total.add(h)
        reader.close()
        os.unlink(t.name)
    return total


def cpu(work, i, report):
    """(process CPU s, engine workers' CPU s) of agent i."""
    user, sys_ = (float(x) for x in open(f"{work}/time.{i}").read().split()[-2:])
    engine = report["client"]["cpu_user_s"] + report["client"]["cpu_sys_s"]
    return user + sys_, engine


def main():
    kind, work, n, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    merged = json.load(open(f"{work}/out.0.json"))
    own = [None] + [json.load(open(f"{work}/out.{i}.json")) for i in range(1, n)]
    rows = merged["agents"]
    logs = [f"{work}/own.{i}.hlog" for i in range(n)]
    tag = "corrected" if kind == "open" else ""
    reference = added_logs(logs, tag).get_value_at_percentile(99.0)
    p99 = merged["latency_us"]["p99"]
    late = [r["start_late_us"] for r in rows]
    error = max(r["clock_error_us"] for r in rows)
    head = f"{kind} round {rnd}:"
    if kind == "open":
        rate = merged["rate"]
        head += (f" offered {rate['offered_rps']:.0f} achieved {rate['achieved_rps']:.1f}"
                 f" ({100 * rate['achieved_rps'] / rate['offered_rps']:.2f}%)")
    else:
        # Each agent's own req/s: its completed over its own measured time.
        sum_own = sum(o["requests"]["completed"] / o["duration_s"] for o in own[1:])
        sum_own += rows[0]["completed"] / merged["duration_s"]
        head += (f" merged {merged['rps']:.0f} req/s, agents' own summed"
                 f" {sum_own:.0f} ({100 * merged['rps'] / sum_own:.2f}%)")
    print(f"{head}; merged p99 {p99} us, own logs added by hdrh {reference} us"
          f" ({'equal' if p99 == reference else 'DIFFERENT'}), agents' own p99"
          f" {[r['p99_us'] for r in rows]}")
    print(f"  start skew <= {merged['start_skew_us']:.0f} us: woke late by"
          f" {[round(x) for x in late]} us (spread {max(late) - min(late):.0f}),"
          f" clock error <= {error:.0f} us")
    for i in range(n):
        process, engine = cpu(work, i, merged if i == 0 else own[i])
        other = max(process - engine, 0.0)
        print(f"  agent {i}: process CPU {process:.2f} s, engine workers {engine:.2f} s,"
              f" the rest {other:.2f} s ({100 * other / process if process else 0:.1f}%)")


main()

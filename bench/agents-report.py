"""One round of bench/agents.sh, read back: the merged test (agent 0's JSON), each agent's own
JSON and --hdr-log, and /usr/bin/time's CPU seconds per agent.

Usage: agents-report.py open|closed|single WORK AGENTS ROUND [LABEL]

The merged p99 is set beside the p99 of the agents' own interval logs added by HdrHistogram's
reference reader (PyPI `hdrhistogram`): equal when the merge is exact. The start skew bound is
broken into its parts (how late each agent woke by its clock, and the clock error), so that a
large bound says which one made it.

Each agent's CPU is split as bench/agents-run.py read it from /proc, thread by thread: the
engine's workers (their own figure, from the JSON), the one-off start (everything but the
workers before the first worker ran: process start-up, pre-flight, the rendezvous), the run
(the rendezvous's threads, `agent-*`: the stream, heartbeats, the loss monitor; and the main
thread, which only waits then), and the one-off end (the merge, the report, the logs). The
figure held against the 1% bound is the run's coordination over the process's CPU; `single`
measures one host with one agent's load the same way, so that the start and the end an agent
adds can be told from what any run costs.
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
    """Agent i's CPU seconds: (process, engine workers, start, run's coordination, end)."""
    t = json.load(open(f"{work}/cpu.{i}.json"))
    engine = report["client"]["cpu_user_s"] + report["client"]["cpu_sys_s"]
    first, last, process = t["first"], t["last"], t["process_s"]
    start = first["main"] + first["rest"]
    run = last["main"] + last["rest"] - start
    end = process - engine - start - run
    return process, engine, start, run, end


def cpu_line(name, split):
    process, engine, start, run, end = split
    share = 100 * run / process if process else 0.0
    return (f"  {name}: process CPU {process:.3f} s, engine workers {engine:.3f} s;"
            f" start {1000 * start:.1f} ms, coordination during the run {1000 * run:.1f} ms"
            f" ({share:.2f}% of the process), end {1000 * end:.1f} ms")


def main():
    kind, work, n, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    label = f" [{sys.argv[5]}]" if len(sys.argv) > 5 else ""
    if kind == "single":
        report = json.load(open(f"{work}/out.0.json"))
        print(f"single host, one agent's load, round {rnd}{label}:")
        print(cpu_line("one host", cpu(work, 0, report)))
        return
    merged = json.load(open(f"{work}/out.0.json"))
    own = [None] + [json.load(open(f"{work}/out.{i}.json")) for i in range(1, n)]
    rows = merged["agents"]
    logs = [f"{work}/own.{i}.hlog" for i in range(n)]
    tag = "corrected" if kind == "open" else ""
    reference = added_logs(logs, tag).get_value_at_percentile(99.0)
    p99 = merged["latency_us"]["p99"]
    late = [r["start_late_us"] for r in rows]
    error = max(r["clock_error_us"] for r in rows)
    head = f"{kind} round {rnd}{label}:"
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
        print(cpu_line(f"agent {i}", cpu(work, i, merged if i == 0 else own[i])))


main()

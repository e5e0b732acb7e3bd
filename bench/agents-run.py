"""Runs one round's agents of bench/agents.sh and measures where each one's CPU goes, thread by
thread, so that coordination is not lumped with process start-up and the final report.

Usage: agents-run.py WORK AGENTS GRACE -- COMMAND...

COMMAND is run AGENTS times at once, '{i}' in it replaced by the agent's index; agent I's
stdout goes to WORK/out.I.json, its stderr to WORK/err.I. Every 50 ms each agent's threads are
read from /proc/PID/task/*: the name (comm) and the nanoseconds on a CPU (the first field of
schedstat, the scheduler's own sum, not the 10 ms ticks of utime). A thread that ended keeps
its last reading. At its end the process's own user + system CPU comes from wait4(2).

Threads are told apart by name and place: the engine's workers (`loadlab-w*`), the main thread
(tid = pid: start-up, pre-flight, the rendezvous, then the merge and the report), and the rest
(the rendezvous's threads, `agent-*`: readers, heartbeats, the loss monitor, the late-agent
refuser). Written to WORK/cpu.I.json:
  process_s       wait4's user + system seconds
  first, last     {main, workers, rest} seconds at the first and the last reading that saw a
                  worker alive: the run is between them
  threads         {name: seconds} at the end, the names' sums

Exit status 1 when an agent failed or outlived GRACE seconds (it is then killed).
"""

import json
import os
import signal
import subprocess
import sys
import time

EVERY = 0.05


def read_threads(pid, names, ns):
    """Updates ns[tid] and names[tid] from /proc; False once the process is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        try:
            # A new thread has its parent's name until it names itself (pthread_setname_np
            # runs in the thread, after the clone): read again until it has a name of its own.
            if tid not in names or tid == str(pid) or names[tid] == names.get(str(pid)):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    names[tid] = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns[tid] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return True


def split(pid, names, ns):
    """{main, workers, rest} seconds of the readings so far."""
    out = {"main": 0.0, "workers": 0.0, "rest": 0.0}
    for tid, n in ns.items():
        kind = ("main" if tid == str(pid)
                else "workers" if names.get(tid, "").startswith("loadlab-w") else "rest")
        out[kind] += n / 1e9
    return out


def main():
    work, n, grace = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    command = sys.argv[sys.argv.index("--") + 1:]
    agents = []
    for i in range(n):
        args = [a.replace("{i}", str(i)) for a in command]
        out, err = open(f"{work}/out.{i}.json", "w"), open(f"{work}/err.{i}", "w")
        p = subprocess.Popen(args, stdout=out, stderr=err)
        agents.append({"p": p, "names": {}, "ns": {}, "first": None, "last": None, "rusage": None})
    deadline = time.monotonic() + grace
    failed = False
    while any(a["rusage"] is None for a in agents):
        for a in agents:
            if a["rusage"] is not None:
                continue
            pid = a["p"].pid
            read_threads(pid, a["names"], a["ns"])
            if any(t != str(pid) and a["names"].get(t, "").startswith("loadlab-w")
                   and os.path.exists(f"/proc/{pid}/task/{t}") for t in a["ns"]):
                now = split(pid, a["names"], a["ns"])
                a["first"] = a["first"] or now
                a["last"] = now
            done, status, rusage = os.wait4(pid, os.WNOHANG)
            if done:
                a["rusage"] = rusage
                a["p"].returncode = os.waitstatus_to_exitcode(status)
                failed |= status != 0
        if time.monotonic() > deadline:
            for a in agents:
                if a["rusage"] is None:
                    a["p"].send_signal(signal.SIGKILL)
                    a["rusage"] = os.wait4(a["p"].pid, 0)[2]
            failed = True
        time.sleep(EVERY)
    for i, a in enumerate(agents):
        names = {}
        for tid, ns in a["ns"].items():
            name = "main" if tid == str(a["p"].pid) else a["names"].get(tid, "?")
            names[name] = names.get(name, 0.0) + ns / 1e9
        r = a["rusage"]
        with open(f"{work}/cpu.{i}.json", "w") as f:
            json.dump({"process_s": r.ru_utime + r.ru_stime, "first": a["first"],
                       "last": a["last"], "threads": names}, f)
    sys.exit(1 if failed else 0)


main()

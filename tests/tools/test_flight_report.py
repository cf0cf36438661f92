#!/usr/bin/python3
"""usage: test_flight_report.py FLIGHT_REPORT

The verdicts of tools/flight_report.py on made-up run directories (records as
core/flight_recorder.h writes them), where the answer is known:
  - a node lost mid-run while one survivor was ended by the launcher before its own timeout:
    the lost node's ranks are named, not the silent survivor;
  - the same with both survivors reporting;
  - one node, one silent rank (a stopped process): that rank is named;
  - two nodes, a silent rank on each: no node is wholly silent, so both are named."""
import json
import os
import subprocess
import sys
import tempfile

REPORT = sys.argv[1]


def recv(rank, peer, group, microbatch):
    return {"id": 1, "kind": "recv", "group": group, "peer": peer, "tag": 7, "bytes": 131072,
            "seq": -1, "step": 4, "microbatch": microbatch, "what": "activation gradient",
            "start_s": 1.0, "end_s": -1}


def run_dir(hosts, waits):
    """hosts: one host name per rank; waits: rank -> (peer, group) of its pending receive."""
    path = tempfile.mkdtemp(prefix="flight_report_")
    os.makedirs(os.path.join(path, "flight"))
    with open(os.path.join(path, "ranks.txt"), "w") as f:
        for rank, host in enumerate(hosts):
            f.write(f"{rank} {host} {1000 + rank}\n")
    for rank, (peer, group) in waits.items():
        record = {"rank": rank, "world_size": len(hosts), "reason": "timeout", "step": 4,
                  "now_s": 21.0, "last": f"waiting: recv from rank {peer}",
                  "events": [recv(rank, peer, group, 3)]}
        with open(os.path.join(path, "flight", f"rank_{rank}.json"), "w") as f:
            json.dump(record, f)
    return path


def verdict(path):
    out = subprocess.run([sys.executable, REPORT, path], capture_output=True, text=True,
                         check=True).stdout
    lines = [l for l in out.splitlines() if l.startswith("verdict:")]
    return out, lines[-1] if lines else ""


CASES = [
    ("node n2 lost, rank 1 ended by the launcher before its timeout",
     ["n1", "n1", "n2", "n2"], {0: (2, "pp [0,2]")}, "verdict: rank 2, 3 stopped the job"),
    ("node n2 lost, both survivors reported",
     ["n1", "n1", "n2", "n2"], {0: (2, "pp [0,2]"), 1: (3, "pp [1,3]")},
     "verdict: rank 2, 3 stopped the job"),
    ("one node, rank 3 stopped",
     ["n1"] * 4, {0: (3, "pp [0,3]"), 1: (3, "x [1,3]"), 2: (3, "x [2,3]")},
     "verdict: rank 3 stopped the job"),
    ("two nodes, one silent rank on each",
     ["n1", "n1", "n2", "n2"], {0: (1, "pp [0,1]"), 2: (3, "pp [2,3]")},
     "verdict: rank 1, 3 stopped the job"),
]

failed = 0
for name, hosts, waits, expected in CASES:
    out, got = verdict(run_dir(hosts, waits))
    ok = got == expected
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {got!r}" + ("" if ok else f", expected {expected!r}"))
    if not ok:
        print(out)
if failed:
    sys.exit(f"FAIL: {failed} verdict(s) wrong")
print("PASS: flight report verdicts")

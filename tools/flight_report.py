#!/usr/bin/python3
"""usage: flight_report.py RUN_DIR

Reads RUN_DIR/flight/rank_*.json (each rank's flight recorder, written on a timeout, a fatal
error or SIGUSR2; format: core/flight_recorder.h) and says which rank is behind and where the
job is stuck:
  - a rank without a record is a suspect (stopped, killed, or stuck outside any wait); but when
    every rank of a node is silent while ranks on other nodes wrote records, that node is the
    suspect (lost or crashed), and a silent rank on a node that did report is not blamed: the
    launcher may have ended it before its own timeout fired;
  - a receive that waits on a peer which never posted the matching send (same tag) names the
    mismatched send/receive pair and the peer;
  - a collective that waits while a member of its group never posted that collective (by the
    group's sequence number) names the member that skipped it or is behind.
Prints a table of every rank's last action, then the verdict. Exit 0 when records were found."""
import glob
import json
import os
import re
import sys


def load(run_dir):
    records = {}
    for path in glob.glob(os.path.join(run_dir, "flight", "rank_*.json")):
        with open(path) as f:
            record = json.load(f)
        records[record["rank"]] = record
    return records


def rank_table(run_dir):
    """rank -> (host, pid) from RUN_DIR/ranks.txt, the rank table written at start. Its format's
    owner is job/rank_table.h: one `RANK HOST PID` line per rank; other lines are skipped, as
    there."""
    table = {}
    try:
        with open(os.path.join(run_dir, "ranks.txt")) as f:
            for line in f:
                fields = line.split()
                if len(fields) != 3 or not fields[0].isdigit():
                    continue
                rank, host, pid = fields
                table[int(rank)] = (host, pid)
    except OSError:
        pass
    return table


def silent_nodes(records, world_size, hosts):
    """host -> its ranks, for nodes none of whose ranks wrote a record while some other node's
    ranks did (empty on one node, or without a rank table)."""
    by_host = {}
    for rank in range(world_size):
        if rank in hosts:
            by_host.setdefault(hosts[rank][0], []).append(rank)
    if len(by_host) < 2 or len(hosts) < world_size:
        return {}
    silent = {h: ranks for h, ranks in by_host.items() if not any(r in records for r in ranks)}
    return silent if len(silent) < len(by_host) else {}


def members(group):
    match = re.search(r"\[([0-9,]*)\]", group)
    return [int(r) for r in match.group(1).split(",") if r] if match else []


def pending(record):
    return [e for e in record["events"] if e["end_s"] < 0]


def describe(e):
    peer = ""
    if e["peer"] >= 0:
        peer = (" from" if e["kind"] == "recv" else " to") + f" rank {e['peer']}"
    what = f" of {e['what']}" if e["what"] else ""
    mb = f", micro-batch {e['microbatch']}" if e["microbatch"] >= 0 else ""
    return f"{e['kind']}{peer}{what} over {e['group']}, step {e['step']}{mb}"


def analyse(records, world_size, hosts):
    findings, culprits = [], set()
    lost = silent_nodes(records, world_size, hosts)
    for host, ranks in sorted(lost.items()):
        findings.append(f"every rank on {host} (rank {', '.join(map(str, ranks))}) left no flight "
                        f"record while ranks on other nodes did: node {host} was lost or crashed "
                        "(or all its ranks are stuck outside any wait)")
        culprits.update(ranks)
    on_lost_nodes = {rank for ranks in lost.values() for rank in ranks}
    for rank in range(world_size):
        if rank not in records and rank not in on_lost_nodes:
            if lost:
                findings.append(f"rank {rank} left no flight record although a rank on its node "
                                f"({hosts[rank][0]}) did: the launcher ended it before its own "
                                "timeout fired, or it is stuck outside any wait")
                continue
            findings.append(f"rank {rank} left no flight record: it was stopped, killed, or is "
                            "stuck outside any wait")
            culprits.add(rank)
    for rank, record in sorted(records.items()):
        for e in pending(record):
            if e["kind"] == "recv":
                peer = records.get(e["peer"])
                if peer is None:
                    continue  # already named above
                sends = [x for x in peer["events"] if x["kind"] == "send" and
                         x["peer"] == rank and x["step"] == e["step"]]
                if any(x["tag"] == e["tag"] for x in sends):
                    continue  # sent: the message is in flight or its receiver is slow
                later = [x for x in sends if x["microbatch"] > e["microbatch"]]
                peer_wait = pending(peer)
                if later:
                    findings.append(
                        f"mismatched send/receive: rank {rank} waits in {describe(e)} (tag "
                        f"{e['tag']}), but rank {e['peer']} never sent it, although it sent "
                        f"micro-batch {later[0]['microbatch']} after it: the send was dropped")
                    culprits.add(e["peer"])
                elif peer_wait:
                    findings.append(f"rank {rank} waits in {describe(e)}; rank {e['peer']} has "
                                    f"not sent it: it is itself waiting in "
                                    f"{describe(peer_wait[-1])}")
                else:
                    findings.append(f"rank {rank} waits in {describe(e)}; rank {e['peer']} never "
                                    f"sent it and waits for nothing (last: {peer['last']})")
                    culprits.add(e["peer"])
            elif e["seq"] >= 0:
                for member in members(e["group"]):
                    other = records.get(member)
                    if other is None or member == rank:
                        continue
                    seqs = [o["seq"] for o in other["events"] if o["group"] == e["group"]]
                    if not seqs or max(seqs) >= e["seq"]:
                        continue
                    waits = pending(other)
                    if waits and waits[-1]["step"] <= e["step"]:
                        findings.append(
                            f"rank {member} has not reached collective #{e['seq']} on "
                            f"{e['group']} (rank {rank} waits in it): it is itself waiting in "
                            f"{describe(waits[-1])}")
                        continue
                    where = (f"it went on to step {waits[-1]['step']}" if waits
                             else "it waits for nothing")
                    findings.append(
                        f"rank {member} never joined collective #{e['seq']} on {e['group']} "
                        f"that rank {rank} waits in ({describe(e)}); its last there was "
                        f"#{max(seqs)} and {where}: it skipped the collective")
                    culprits.add(member)
    return findings, culprits


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    run_dir = sys.argv[1]
    records = load(run_dir)
    hosts = rank_table(run_dir)
    ranks = {rank: f"pid {pid} on {host}" for rank, (host, pid) in hosts.items()}
    died = os.path.join(run_dir, "flight", "died.txt")
    if os.path.exists(died):
        with open(died) as f:
            print("verdict: " + f.read().strip())
    if not records:
        if ranks:
            print(f"{run_dir}/flight: no rank wrote a flight record: the launcher ended the job "
                  "at once, which is what it does when a process dies (mpirun names it by PID):")
            for rank, where in sorted(ranks.items()):
                print(f"  rank {rank}: {where}")
            return
        sys.exit(f"{run_dir}/flight: no flight records (valid: the run.dir of a run that timed "
                 "out, failed, or got SIGUSR2)")
    world_size = max(r["world_size"] for r in records.values())
    print(f"flight records of {len(records)} of {world_size} ranks in {run_dir}/flight:")
    for rank in range(world_size):
        r = records.get(rank)
        print(f"  rank {rank}: " + (f"[{r['reason']}] step {r['step']}: {r['last']}" if r
                                     else "NO RECORD") + (f" ({ranks[rank]})" if rank in ranks
                                                          else ""))
    # The heartbeat (job/heartbeat.h) named the lost ranks before the job ended: its word is the
    # verdict (a stopped or vanished rank wrote no record of its own).
    beats = [r["reason"] for r in records.values() if r["reason"].startswith("heartbeat: ")]
    if beats:
        print("verdict: " + beats[0][len("heartbeat: "):])
        return
    findings, culprits = analyse(records, world_size, hosts)
    for finding in dict.fromkeys(findings):
        print("- " + finding)
    if culprits:
        print("verdict: rank " + ", ".join(str(c) for c in sorted(culprits))
              + " stopped the job")
    else:
        print("verdict: no rank is behind in these records (every wait has its peer's action)")


main()

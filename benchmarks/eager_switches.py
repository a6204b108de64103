"""Does a busy timing core inflate a timing? Every eager timing of the KernelBench records against
the median of the same task's eager timings (its own attempts' and the paired ones, timed in the
candidates' children), grouped by the involuntary context switches its thread took.

    python3 benchmarks/eager_switches.py benchmarks/results/kernelbench/h200

Prints a markdown table, then the timings of 50 switches or more (``search.DISTURBED_SWITCHES``),
then every timing (any candidate's, and the first of one taken again) by the timing CPU it ran on:
which core the timings are given decides how often the host takes it from them.
"""
from __future__ import annotations

import collections
import json
import statistics
import sys
from pathlib import Path

BUCKETS = ((0, 10, "0-9"), (10, 50, "10-49"), (50, None, "50 or more"))


def record_eager_timings(r: dict) -> list[tuple[float, int | None]]:
    """(ms, switches) of every eager timing of one record: its own attempts' with the switches
    their thread took, and the paired ones (switches None)."""
    out = []
    for a in r.get("attempts") or []:
        if a.get("origin") == "baseline:eager" and a.get("ms"):
            out.append((a["ms"], (a.get("host") or {}).get("involuntary_switches")))
        if a.get("paired_ref_ms"):
            out.append((a["paired_ref_ms"], None))
    return out


def eager_timings(lines: list[str]) -> dict[str, list[tuple[float, int | None, int]]]:
    """Per task: (ms, switches or None for a paired timing, record line) of every eager timing."""
    out = collections.defaultdict(list)
    for i, line in enumerate(lines):
        r = json.loads(line)
        out[r["id"]] += [(ms, sw, i) for ms, sw in record_eager_timings(r)]
    return out


def switches_by_timing_cpu(lines: list[str]) -> dict[str, list[int]]:
    """Per timing CPU set: the involuntary switches of every timing on it, in all the records."""
    out = collections.defaultdict(list)
    for line in lines:
        for a in json.loads(line).get("attempts") or []:
            host = a.get("host") or {}
            if "involuntary_switches" not in host:
                continue
            cpus = ",".join(map(str, host.get("timing_cpus") or [])) or "none"
            out[cpus].append(host["involuntary_switches"])
            again = a.get("retimed") or {}
            if "involuntary_switches" in again:
                out[cpus].append(again["involuntary_switches"])
    return out


def main(argv: list[str]) -> int:
    lines = [x for x in (Path(argv[0]) / "results.jsonl").read_text().splitlines()
             if x.strip() and "replay_rechecked" not in json.loads(x)]   # copies of a search
    ratios, high = collections.defaultdict(list), []
    for task, ts in eager_timings(lines).items():
        if len(ts) < 2:
            continue
        med = statistics.median(ms for ms, _, _ in ts)
        for ms, sw, line in ts:
            if sw is None:
                continue
            label = next(lab for lo, hi, lab in BUCKETS if sw >= lo and (hi is None or sw < hi))
            ratios[label].append(ms / med)
            if sw >= 50:
                high.append((task, line, sw, ms / med))
    print("| involuntary switches | eager timings | median ratio to the task's median | mean | max |")
    print("|---|---|---|---|---|")
    for _, _, label in BUCKETS:
        v = ratios.get(label) or [float("nan")]
        print(f"| {label} | {len(ratios.get(label, []))} | {statistics.median(v):.2f} | "
              f"{statistics.fmean(v):.2f} | {max(v):.2f} |")
    print("\n| task | line (0-based) | switches | ratio |\n|---|---|---|---|")
    for task, line, sw, ratio in sorted(high, key=lambda x: -x[3]):
        print(f"| {task} | {line} | {sw} | {ratio:.2f} |")
    print("\n| timing CPUs | timings | median switches | max | 50 or more |\n|---|---|---|---|---|")
    for cpus, sw in sorted(switches_by_timing_cpu(lines).items()):
        print(f"| {cpus} | {len(sw)} | {statistics.median(sw):g} | {max(sw)} | "
              f"{sum(s >= 50 for s in sw)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["benchmarks/results/kernelbench/h200"]))

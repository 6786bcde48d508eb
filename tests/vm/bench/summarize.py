#!/usr/bin/env python3
"""The reaction benchmark's table: medians per shape, contender and page-reclaim mode of every
run under the given directories (tests/vm/bench.sh writes one); results.json in the first.
   tests/vm/bench/summarize.py DIR [DIR...]"""
import json, statistics, sys, pathlib
outs = [pathlib.Path(a) for a in sys.argv[1:]]
out = outs[0]
runs = {}
for f in sorted(f for o in outs for f in o.glob("*/episode.json")):
    e = json.loads(f.read_text())
    # Runs of versions without the fields were the hog on classic.
    shape = e.get("shape") or ("slow-leak" if e.get("leak") == 1 else "hog")
    runs.setdefault((shape, e["contender"], e.get("lru", "classic")), []).append(e)
order = ["kernel", "earlyoom", "nohang", "oomd", "oomwarden", "oomwarden-memory", "oomwarden-recommended",
         "oomwarden-recommended-swap", "oomwarden-culprit",
         "oomwarden-psi", "earlyoom-oomwarden-idle", "observer"]
rows = {}
for (shape, c, lru), es in sorted(runs.items(), key=lambda k: (k[0][0], k[0][2], order.index(k[0][1]) if k[0][1] in order else 99)):
    med = lambda k: statistics.median(k(e) for e in es)
    row = {"shape": shape, "contender": c, "lru": lru, "runs": len(es),
           "kills": med(lambda e: e["kills"]), "kernelOomKills": med(lambda e: e["kernelOomKills"]),
           "killsPerRun": [e["kills"] for e in es], "kernelOomKillsPerRun": [e["kernelOomKills"] for e in es]}
    if "ticks30s" in es[0]:
        row.update({
            "ticks30s": med(lambda e: e["ticks30s"]),
            "ticks30sPerRun": [e["ticks30s"] for e in es],
            "vmhwmKiB": med(lambda e: e["vmhwmKiB"]),
        })
        # Runs from before the schedstat column have none.
        if all("cpuMs30s" in e for e in es):
            row.update({
                "cpuMs30s": med(lambda e: e["cpuMs30s"]),
                "cpuMs30sPerRun": [e["cpuMs30s"] for e in es],
            })
    if "canary" in es[0]:
        # The canary's worst delay in the 10 s before the hog died and the 3 s after (the stall
        # a contender lets happen and the kill itself); it lists periods later than 5 ms, so 5
        # means "none later than 5 ms".
        def near_death(e):
            end = e["hogEndMs"]
            return max([d for t, d in e["canary"]["late"] if end - 10000 <= t <= end + 3000], default=5.0)
        row.update({
            "canaryWorstMs": med(lambda e: e["canary"]["worstMs"]),
            "canaryWorstPerRun": [e["canary"]["worstMs"] for e in es],
            "canaryP99Ms": med(lambda e: e["canary"]["p99Ms"]),
            "canaryWorstNearDeathMs": med(near_death),
            "systemFullStallSeconds": med(lambda e: e["systemFullStallSeconds"]),
            "hogLifeSeconds": med(lambda e: e["hogLifeSeconds"]),
            "died": sorted({e["died"] for e in es}),
        })
    rows[f"{shape} {c} ({lru})"] = row
(out / "results.json").write_text(json.dumps({"medians": rows, "runs": {" ".join(k): v for k, v in runs.items()}}, indent=2))
for shape in ["hog", "slow-leak", "fast-leak", "cold-services", "full-but-healthy", "page-cache", "quiet",
              "swap-hog", "swap-hog-zswap", "swap-cold", "swap-cold-zswap", "culprit"]:
    rs = [r for r in rows.values() if r["shape"] == shape]
    if not rs:
        continue
    print(f"\n{shape}:\n")
    if "ticks30s" in rs[0]:
        print("| contender | LRU | runs | CPU ticks / 30 s [per run] | CPU ms / 30 s, schedstat [per run] | VmHWM (MiB) | kills |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for r in rs:
            ms = f"{r['cpuMs30s']:g} {r['cpuMs30sPerRun']}" if "cpuMs30s" in r else "-"
            print(f"| {r['contender']} | {r['lru']} | {r['runs']} | {r['ticks30s']:g} {r['ticks30sPerRun']} | {ms} | {r['vmhwmKiB'] / 1024:.1f} | {r['kills']:g} |")
    elif "canaryWorstMs" in rs[0]:
        print("| contender | LRU | runs | canary worst (ms) [per run] | near the death (ms) | canary p99 (ms) | System full stall (s) | hog start to death (s) | kills | kernel OOM kills | what died |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in rs:
            per = ", ".join(f"{w:.1f}" for w in r["canaryWorstPerRun"])
            print(f"| {r['contender']} | {r['lru']} | {r['runs']} | {r['canaryWorstMs']:.0f} [{per}] | {r['canaryWorstNearDeathMs']:.0f} | {r['canaryP99Ms']:.1f} | {r['systemFullStallSeconds']:.2f} | {r['hogLifeSeconds']:.1f} | {r['kills']:g} | {r['kernelOomKills']:g} | {'; '.join(r['died'])} |")
    else:
        print("| contender | LRU | runs | kills [per run] | kernel OOM kills [per run] |")
        print("|---|---|---:|---:|---:|")
        for r in rs:
            print(f"| {r['contender']} | {r['lru']} | {r['runs']} | {r['kills']:g} {r['killsPerRun']} | {r['kernelOomKills']:g} {r['kernelOomKillsPerRun']} |")

#!/usr/bin/env python3
"""Do a contender's own cycles make the canary late? For every hog run under the given
directories (tests/vm/bench.sh writes them), the canary's late periods (7 ms or more, before the
hog's last 2 s so that the kill is left out) as phases of the contender's loop (oomwarden
500 ms, earlyoom 100 ms, the others 500 ms), and Rayleigh's test of uniformity on the circle:
a loop that delays the canary puts its late periods at one phase (small p); the loop's start is
unknown, so each run is tested alone (the statistic does not depend on where the circle starts),
then the runs of a contender together (Fisher's method, runs with at least 10 late periods).
   tests/vm/bench/phase.py DIR [DIR...]"""
import cmath, json, math, pathlib, sys

PERIOD_MS = {"earlyoom": 100}


def rayleigh(times, period):
    """(n, resultant length R, p) for phases of `times` on a circle of `period`."""
    n = len(times)
    if n == 0:
        return 0, 0.0, 1.0
    r = abs(sum(cmath.exp(2j * math.pi * (t % period) / period) for t in times)) / n
    z = n * r * r
    # Zar's approximation of the Rayleigh p-value, good from n = 10 on.
    p = math.exp(math.sqrt(1 + 4 * n + 4 * (n * n - z * n)) - (1 + 2 * n))
    return n, r, min(1.0, p)


def fisher(ps):
    """Fisher's combination of independent p-values: -2 sum ln p is chi-square with 2k degrees
    of freedom; its survival function for even degrees has a closed form."""
    x = -2 * sum(math.log(max(p, 1e-300)) for p in ps) / 2
    return math.exp(-x) * sum(x**i / math.factorial(i) for i in range(len(ps)))


per_contender = {}
print("| run | period (ms) | late periods | R | p (uniform) |")
print("|---|---:|---:|---:|---:|")
for f in sorted(f for a in sys.argv[1:] for f in pathlib.Path(a).glob("*/episode.json")):
    e = json.loads(f.read_text())
    if (e.get("shape") or "hog") != "hog" or "canary" not in e:
        continue
    period = PERIOD_MS.get(e["contender"], 500)
    late = [t for t, d in e["canary"]["late"] if d >= 7 and t < e["hogEndMs"] - 2000]
    n, r, p = rayleigh(late, period)
    print(f"| {f.parent.name} | {period} | {n} | {r:.2f} | {p:.2f} |")
    if n >= 10:
        per_contender.setdefault((e["contender"], e.get("lru", "classic")), []).append(p)
print()
print("| contender | LRU | runs (10+ late periods) | Fisher's combined p |")
print("|---|---|---:|---:|")
for (c, lru), ps in sorted(per_contender.items()):
    print(f"| {c} | {lru} | {len(ps)} | {fisher(ps):.3f} |")

#!/usr/bin/env python3
"""Differential oracle: Google's cel-cpp (the Python package `cel-expr-python`) in the Talos OOM environments.

Reads a TSV of `env<TAB>label<TAB>expression` (env is `trig` or `rank`; `\\n` in the expression
is a line break) and prints one line per case: `label<TAB>outcome`, where outcome is
`OK <type> <value>`, `EVAL-ERR` or `COMPILE-ERR`, followed by a TAB and cel-cpp's message.
The Rust golden test (`crates/expr/tests/golden.rs`) prints the same shape for our engine, and
`compare.py` diffs the two. cel-cpp's checker mirrors cel-go's, which Talos uses.

cel-expr-python cannot bind optional values, so ranking expressions are evaluated with the
three optional variables replaced textually by literals (see RANK_SUBST).
"""
import datetime
import re
import sys

from cel_expr_python import cel

CLASSES = {"Besteffort": 0, "Burstable": 1, "Guaranteed": 2, "Podruntime": 3, "System": 4}
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60,
         "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15, "EB": 10**18}
PSI = [f"memory_{k}_{s}" for k in ("some", "full") for s in ("avg10", "avg60", "avg300", "total")]
SCALARS = PSI + ["d_" + n for n in PSI]
MAPS = (["qos_" + n for n in PSI] + ["d_qos_" + n for n in PSI]
        + [f"{d}qos_memory_{u}" for d in ("", "d_") for u in ("current", "peak", "max")])


def yaml_for(kind):
    lines = [f"name: talos-{kind}", "extensions:", "  - name: optional", "variables:"]
    lines += [f"  - name: {n}\n    type_name: int" for n in CLASSES]
    lines += [f"  - name: {n}\n    type_name: uint" for n in UNITS]
    if kind == "rank":
        for n in ("memory_max", "memory_current", "memory_peak"):
            lines += [f"  - name: {n}\n    type_name: optional_type\n    params:\n      - type_name: uint"]
        lines += ["  - name: path\n    type_name: string", "  - name: class\n    type_name: int"]
    else:
        lines += [f"  - name: {n}\n    type_name: double" for n in SCALARS]
        lines += [f"  - name: {n}\n    type_name: map\n    params:\n      - type_name: int\n      - type_name: double"
                  for n in MAPS]
        lines += ["  - name: time_since_trigger\n    type_name: google.protobuf.Duration"]
    return "\n".join(lines) + "\n"


def mqv(values, weights):
    # Talos semantics: keys of the first map that exist in the second; a non-double is an error.
    acc = 0.0
    for k, v in values.items():
        if k in weights:
            w = weights[k]
            if not isinstance(w, float) or not isinstance(v, float):
                raise ValueError("multiply_qos_vectors: non-double value")
            acc += v * w
    return acc


FUNCS = [cel.FunctionDecl("multiply_qos_vectors", [cel.Overload(
    "multiply_qos_vectors_ma_map_double", cel.Type.DOUBLE,
    [cel.Type.Map(cel.Type.DYN, cel.Type.DOUBLE), cel.Type.Map(cel.Type.DYN, cel.Type.DOUBLE)], impl=mqv)])]

ENVS = {k: cel.NewEnv(config=cel.NewEnvConfigFromYaml(yaml_for(k)), functions=FUNCS if k == "trig" else None)
        for k in ("trig", "rank")}

# Fixture values, shared with crates/expr/tests/golden.rs.
TRIG_DATA = dict(CLASSES, **UNITS, **{n: 0.0 for n in SCALARS}, **{n: {c: 0.0 for c in range(5)} for n in MAPS})
TRIG_DATA.update(d_qos_memory_full_total={0: 0.0, 1: 0.0, 2: 0.0, 3: 200.0, 4: 300.0},
                 qos_memory_full_avg10={0: 0.0, 1: 0.0, 2: 0.0, 3: 3.0, 4: 4.0}, memory_full_avg10=10.0,
                 time_since_trigger=datetime.timedelta(seconds=7))
RANK_DATA = dict(CLASSES, **UNITS, path="/sys/fs/cgroup/kubepods/besteffort/pod123", **{"class": 0})
RANK_SUBST = {"memory_max": "optional.none()", "memory_current": "optional.of(1000u)",
              "memory_peak": "optional.of(2000u)"}


def fmt_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    if isinstance(v, str):
        return repr(v)
    return str(v)


def run(kind, label, expr):
    env = ENVS[kind]
    try:
        compiled = env.compile(expr)
        # cel-cpp spells `list<int>`; cel-go (and Talos's messages) `list(int)`.
        rtype = compiled.return_type().name().replace("<", "(").replace(">", ")")
    except Exception as ex:  # compile or check error
        return f"{label}\tCOMPILE-ERR\t{ex}".replace("\n", "\\n")
    text = expr
    if kind == "rank":
        for k, v in RANK_SUBST.items():
            text = re.sub(rf"\b{k}\b", v, text)
    try:
        r = env.compile(text).eval(data=TRIG_DATA if kind == "trig" else RANK_DATA)
        if r.type().name() == "ERROR":
            return f"{label}\tEVAL-ERR\t{r.value()}".replace("\n", "\\n")
        return f"{label}\tOK {rtype.lower()} {fmt_value(r.value())}"
    except Exception as ex:
        return f"{label}\tEVAL-ERR\t{ex}".replace("\n", "\\n")


def main():
    for line in open(sys.argv[1], encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        kind, label, expr = line.split("\t", 2)
        print(run(kind, label, expr.replace("\\n", "\n")))


if __name__ == "__main__":
    main()

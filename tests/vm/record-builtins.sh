#!/usr/bin/env bash
# Makes the built-in recordings of `oomwarden replay --builtin` from real VM runs:
#   tests/vm/record-builtins.sh [NAME...]      (default: every tests/vm/builtins/*.sh)
# Each run boots the Debian kernel, plays the scenario with `oomwarden run --record`, and
# copies the recording (gzip, with the scenario's description added to its meta line) and the
# daemon's own action records to crates/cli/builtin/NAME.rec.gz and NAME.actions.jsonl (a test
# checks that replaying one gives the other).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$("$here/build.sh")"
dest="$root/crates/cli/builtin"
names=("$@")
if ((${#names[@]} == 0)); then
    for f in "$here"/builtins/*.sh; do names+=("$(basename "$f" .sh)"); done
fi
for name in "${names[@]}"; do
    script="$here/builtins/$name.sh"
    opts=$(sed -n 's/^# vm: //p' "$script" | head -n1)
    out="$root/target/vm/builtins/$name"
    rm -rf "$out"; mkdir -p "$out"
    echo "=== vm: recording $name ($opts)" >&2
    # shellcheck disable=SC2086
    "$here/run-in-vm.sh" --timeout 600 --quiet --log "$out/console.log" --out "$out" $opts \
        --add "$bin/oomwarden:/usr/local/bin/oomwarden" --add "$bin/hog:/usr/local/bin/hog" \
        --add "$bin/service:/usr/local/bin/service" --add "$here/lib.sh:/root/lib.sh" \
        --add "$script:/root/scenario.sh" -- /bin/sh /root/scenario.sh
    description=$(sed -n '3,/^[^#]/p' "$script" | sed -n 's/^# //p' | tr '\n' ' ' | sed 's/ *$//; s/^Built-in recording "[^"]*": //')
    # The description goes into the recording's meta line.
    python3 - "$out/recording.rec" "$dest/$name.rec.gz" "$description" <<'PY'
import gzip, json, sys
src, dst, description = sys.argv[1:]
lines = open(src).read().split("\n")
meta = json.loads(lines[1][len("meta "):])
meta["description"] = description
lines[1] = "meta " + json.dumps(meta, separators=(",", ":"))
with gzip.GzipFile(dst, "wb", mtime=0) as f:
    f.write("\n".join(lines).encode())
PY
    cp "$out/actions.jsonl" "$dest/$name.actions.jsonl" 2>/dev/null || : > "$dest/$name.actions.jsonl"
    echo "=== vm: $name: $(zcat "$dest/$name.rec.gz" | grep -c '^c ') cycles, $(wc -c < "$dest/$name.rec.gz") bytes, $(grep -c . "$dest/$name.actions.jsonl" || true) actions" >&2
done

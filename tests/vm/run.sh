#!/usr/bin/env bash
# Runs the real-kernel scenarios, each in its own VM, and summarises the results.
#   tests/vm/run.sh [--retries N] [SCENARIO[@LAYOUT][@LRU]...]
# A SCENARIO with a slash is a script's path (tests/vm/bench/cri-refresh.sh).
# Default: every tests/vm/scenarios/*.sh on the Talos layout with the classic LRU, S1, S4 and
# S20 with MGLRU too (s1-hog@mglru, s4-no-false-kill@mglru, s20-psi-blind@mglru), plus S2 on the systemd
# cgroup driver's layout (s2-order@systemd; s1-hog@systemd runs when named: S1's real-pressure
# kill is the same code on either layout, and S2@systemd proves the layout's paths and order).
# A failed scenario is run again up to N times (default 1): TCG timing varies from run to
# run. The assertions are the same on every attempt; the summary records the attempts.
# Results: target/vm/results/<scenario>/{result.json,oomwarden.log,actions.jsonl,dmesg.txt,console.log}
# and target/vm/results/summary.json. Exit 0 when every scenario passed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$("$here/build.sh")"
results="$root/target/vm/results"
mkdir -p "$results"
retries=1
if [[ ${1:-} == --retries ]]; then retries=${2:?}; shift 2; fi
scenarios=("$@")
if ((${#scenarios[@]} == 0)); then
    for f in "$here"/scenarios/*.sh; do scenarios+=("$(basename "$f" .sh)"); done
    # The kernel as Debian ships it (MGLRU on) for the real-pressure scenarios.
    scenarios+=(s2-order@systemd s1-hog@mglru s4-no-false-kill@mglru s20-psi-blind@mglru)
fi
passed=0 failed=0
summary="["
for s in "${scenarios[@]}"; do
    # NAME[@LAYOUT][@LRU]: the node's layout (talos, systemd) and the kernel's page reclaim
    # (classic, mglru), in any order.
    layout=talos lru=classic
    IFS=@ read -r -a parts <<< "$s"
    for p in "${parts[@]:1}"; do
        case $p in
            talos|systemd) layout=$p ;;
            classic|mglru) lru=$p ;;
            *) echo "vm: $s: unknown suffix @$p (layouts: talos, systemd; page reclaim: classic, mglru)" >&2; exit 2 ;;
        esac
    done
    base=${parts[0]}
    script="$here/scenarios/$base.sh"
    # A path runs that script the same way (the benchmarks in bench/, outside the suite).
    if [[ $base == */* ]]; then script=$base; s=$(basename "$script" .sh)${s#"$base"}; fi
    [[ -f $script ]] || { echo "vm: no scenario $s" >&2; exit 2; }
    # A scenario may ask for VM options in a line "# vm: --mem 1G --scratch-disk 2G".
    opts=$(sed -n 's/^# vm: //p' "$script" | head -n1)
    # "# needs: containerd": the distribution's containerd and runc (fetched once by
    # cri/prepare.sh), the CRI test driver, the images and the runtime's config.
    extra=()
    if grep -q '^# needs: containerd' "$script"; then
        cri=${cri:-$("$here/cri/prepare.sh")}
        extra=(--add-bin "$cri/usr/bin/containerd:/usr/bin/containerd"
               --add-bin "$cri/usr/bin/containerd-shim-runc-v2:/usr/bin/containerd-shim-runc-v2"
               --add-bin "$cri/usr/bin/ctr:/usr/bin/ctr" --add-bin "$cri/usr/sbin/runc:/usr/sbin/runc"
               --add "$cri/usr/lib/x86_64-linux-gnu/libseccomp.so.2:/lib/x86_64-linux-gnu/libseccomp.so.2"
               --add "$here/cri/config.toml:/etc/containerd/config.toml"
               --add "$bin/cri-driver:/usr/local/bin/cri-driver" --add "$bin/images:/root/images"
               --add "$here/cri.sh:/root/cri.sh")
    fi
    # "# needs: image": the container image scripts/image writes (built again when the binary
    # is newer), the manifest it runs from, and a record to fill a history with.
    if grep -q '^# needs: image' "$script"; then
        image="$root/target/image/oomwarden.tar"
        [[ -f $image && $image -nt $bin/oomwarden ]] || "$root/scripts/image" >&2
        extra+=(--add "$image:/root/oomwarden-image.tar"
                --add "$root/deploy/kubernetes/oomwarden.yaml:/root/deploy/oomwarden.yaml"
                --add "$root/testdata/explain/pod/actions.jsonl:/root/record.jsonl")
    fi
    out="$results/$s"
    attempt=0 rc=1
    while ((rc != 0 && attempt <= retries)); do
        attempt=$((attempt + 1))
        rm -rf "$out"; mkdir -p "$out"
        echo "=== vm: $s (attempt $attempt; $opts)" >&2
        rc=0
        # shellcheck disable=SC2086
        "$here/run-in-vm.sh" --timeout 420 --quiet --log "$out/console.log" --out "$out" $opts \
            --add "$bin/oomwarden:/usr/local/bin/oomwarden" --add "$bin/hog:/usr/local/bin/hog" \
            --add "$bin/service:/usr/local/bin/service" --add "$here/lib.sh:/root/lib.sh" \
            --add "$root/examples/config/recommended.yaml:/root/recommended.yaml" --add "$root/examples/config:/root/config" \
            --add "$script:/root/scenario.sh" "${extra[@]}" --env "LAYOUT=$layout" --env "LRU=$lru" -- /bin/sh /root/scenario.sh || rc=$?
        if [[ $rc == 0 && ! -f $out/result.json ]]; then rc=125; fi   # no verdict from the guest
        if ((rc != 0)); then
            echo "=== vm: $s attempt $attempt FAILED (exit $rc); console tail:" >&2
            tail -n 40 "$out/console.log" >&2 || true
            cp -r "$out" "$out.attempt$attempt" 2>/dev/null || true
        fi
    done
    if ((rc == 0)); then
        passed=$((passed + 1)); echo "=== vm: $s passed (attempt $attempt)" >&2
    else
        failed=$((failed + 1))
    fi
    [[ $summary == "[" ]] || summary+=","
    summary+="{\"scenario\":\"$s\",\"exit\":$rc,\"attempts\":$attempt,\"result\":$(cat "$out/result.json" 2>/dev/null || echo null)}"
done
echo "$summary]" > "$results/summary.json"
echo "vm: $passed passed, $failed failed"
((failed == 0))

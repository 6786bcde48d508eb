#!/bin/sh
# One benchmark episode in the guest: the S1 node (services with hot file working sets, a
# canary in system/, a BestEffort pod that takes 450 MiB then leaks 5 MiB/s) under one
# contender: `kernel` (nothing), `earlyoom` (Debian's, defaults), `oomwarden` (defaults),
# `oomwarden-memory` (examples/config/memory-level.yaml: also act below 10 % MemAvailable),
# `oomwarden-psi` (the defaults plus kernel PSI triggers waking cycles), and
# a diagnostic one, `earlyoom-oomwarden-idle` (earlyoom acts while oomwarden samples every
# 100 ms with a trigger that never fires: what oomwarden's sampling costs the canary), and
# `observer` (oomwarden never acts, samples every 100 ms and records everything it reads into
# /out/recording.rec: the kernel's episode, to replay policies on; tests/vm/bench/record.sh).
# TAKE_MIB (what the hog takes at once, 450) and LEAK_MIB (a second after that, 5) shape the hog;
# TAKE_MIB=600 LEAK_MIB=1 is the slow leak; SHAPE (bench/shapes.sh's name, default hog) is
# written with the results. Writes /out/episode.json.
CONTENDER=$1
SCENARIO=bench-$CONTENDER
. /root/lib.sh
bench_node
start_contender "$CONTENDER"
sleep 2
FULL0=$(system_full_total)
OOM0=$(oom_kills)
P=$(pod besteffort hog)
T0=$(up)
FAST=$(start_in "$P/ctr" hog -s 16 -i 20 -m "${TAKE_MIB:-450}" -H -1)
LEAK=$(start_in "$P/ctr" hog -s "${LEAK_MIB:-5}" -i 1000)
wait_for 10 populated "$P"
i=0
while [ $i -lt "${EPISODE_LIMIT:-2400}" ] && alive "$FAST" && alive "$LEAK"; do sleep 0.1; i=$((i + 1)); done
episode_end
died=""
alive "$FAST" || died="$died hog-fast"
alive "$LEAK" || died="$died hog-leak"
died="$died$(services_died)"
kills=$(contender_kills "$CONTENDER")
printf '{"contender":"%s","shape":"'"${SHAPE:-hog}"'","lru":"'"$LRU"'","take":'"${TAKE_MIB:-450}"',"leak":'"${LEAK_MIB:-5}"',"hogStartMs":%s,"hogEndMs":%s,"hogLifeSeconds":%s,"systemFullStallSeconds":%s,"kills":%s,"kernelOomKills":%s,"died":"%s","canary":%s}\n' \
    "$CONTENDER" "$(awk -v a="$T0" 'BEGIN{printf "%.0f", a * 1000}')" "$(awk -v b="$T1" 'BEGIN{printf "%.0f", b * 1000}')" \
    "$(awk -v a="$T0" -v b="$T1" 'BEGIN{printf "%.1f", b - a}')" \
    "$(awk -v a="$FULL0" -v b="$FULL1" 'BEGIN{printf "%.3f", (b - a) / 1e6}')" \
    "$kills" "$(( $(oom_kills) - OOM0 ))" "$(echo $died)" "$(cat "$OUT/canary.json")" > "$OUT/episode.json"
cat "$OUT/episode.json"
episode_quit
exit 0

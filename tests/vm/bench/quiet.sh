#!/bin/sh
# The quiet node (issue 33): the benchmark's node (S1's services with hot file working sets, the
# canary in system/) with nothing growing, under one contender (lib.sh's start_contender); after
# 10 s to settle, the contender's CPU over 30 s (`utime + stime` of all its threads, clock ticks
# of 10 ms: the method of docs/performance.md; and the run time its threads' schedstat counts,
# in ms, exact) and its peak resident memory (`VmHWM`). Writes
# /out/episode.json (shape `quiet`, no kill expected).
CONTENDER=$1
SCENARIO=quiet-$CONTENDER
. /root/lib.sh
bench_node
OOM0=$(oom_kills)
start_contender "$CONTENDER"
case $CONTENDER in
    oomwarden*) PID=$OOMWARDEN ;;
    *) wait_for 10 test -s "$CG/system/$CONTENDER/cgroup.procs"; PID=$(head -n1 "$CG/system/$CONTENDER/cgroup.procs") ;;
esac
sleep 10
ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }
# Each thread's ticks, `name=ticks` (the comm in parentheses, spaces taken out).
thread_ticks() {
    for t in /proc/$PID/task/*; do
        awk -v name="$(tr -d ' ' < "$t/comm")" '{ n = split($0, f, ") "); split(f[n], r, " "); print name "/" FILENAME "=" r[12] + r[13] }' "$t/stat"
    done
}
# The time its threads ran, in µs (schedstat's first field, ns): exact where the ticks are
# a 100 Hz sample, which at a few ticks a second varies by their square root from run to run.
run_us() { cat /proc/$PID/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s / 1000 }'; }
B0=$(thread_ticks)
R0=$(run_us)
T0=$(ticks)
sleep 30
T1=$(ticks)
R1=$(run_us)
B1=$(thread_ticks)
# "name": ticks over the 30 s, per thread (threads of one name summed).
THREADS=$(printf '%s\n%s\n' "$B0" "$B1" | awk -F= '{ split($1, k, "/"); if (seen[$1]++) d[k[1]] += $2 - first[$1]; else first[$1] = $2 } END { s = ""; for (n in d) { s = s (s == "" ? "" : ",") "\"" n "\":" d[n] }; print "{" s "}" }')
cat "/proc/$PID/smaps" > "$OUT/smaps.txt" 2>/dev/null
HWM=$(awk '/^VmHWM:/ { print $2 }' "/proc/$PID/status")
LCK=$(awk '/^VmLck:/ { print $2 }' "/proc/$PID/status")
kills=$(contender_kills "$CONTENDER")
printf '{"contender":"%s","shape":"quiet","lru":"%s","ticks30s":%s,"cpuMs30s":%s,"threads":%s,"vmhwmKiB":%s,"vmlckKiB":%s,"kills":%s,"kernelOomKills":%s}\n' \
    "$CONTENDER" "$LRU" "$((T1 - T0))" "$(( (R1 - R0) / 1000 ))" "$THREADS" "$HWM" "${LCK:-0}" "$kills" "$(( $(oom_kills) - OOM0 ))" > "$OUT/episode.json"
cat "$OUT/episode.json"
kill -TERM "$CANARY" 2>/dev/null
[ -n "${OOMWARDEN:-}" ] && alive "$OOMWARDEN" && kill -TERM "$OOMWARDEN" && wait "$OOMWARDEN"
exit 0

#!/bin/sh
# vm: --mem 1G --scratch-disk 2G --append transparent_hugepage=never --add-bin /usr/bin/perf:/usr/local/bin/perf --add-bin /usr/bin/strace:/usr/local/bin/strace
# The quiet node's profile (issue 33): bench/quiet.sh's node under oomwarden with
# examples/config/recommended.yaml, `perf record` (the host's perf copied in; cpu-clock, the
# only clock under TCG) for 30 s on the daemon, then where its time went, by function and by
# thread, in /out/profile.txt, and its system calls for 15 s (`strace -c`, the host's too) in
# /out/syscalls.txt, and 3 s of its file calls by name in /out/calls.txt. A direction, not a measurement: under TCG few samples land, and the
# emulation's costs are not a CPU's. Run: tests/vm/run.sh tests/vm/bench/quiet-profile.sh
SCENARIO=quiet-profile
. /root/lib.sh
bench_node
start_contender oomwarden-recommended
PID=$OOMWARDEN
sleep 10
perf record -F 999 -e cpu-clock -g -p "$PID" -o /tmp/perf.data -- sleep 30 > "$OUT/perf-record.txt" 2>&1
{
    echo "## by thread"
    perf report -i /tmp/perf.data --no-children --sort comm --stdio -g none 2>/dev/null | grep -v '^#' | sed '/^$/d'
    echo "## by binary"
    perf report -i /tmp/perf.data --no-children --sort dso --stdio -g none 2>/dev/null | grep -v '^#' | sed '/^$/d'
    echo "## by function (self)"
    perf report -i /tmp/perf.data --no-children --sort dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | sed '/^$/d' | head -80
    echo "## by function (with callees)"
    perf report -i /tmp/perf.data --children --sort sym --stdio -g none 2>/dev/null | grep -v '^#' | sed '/^$/d' | head -80
    # Kernel call chains only: the release binary keeps no frame pointers.
    echo "## callers of the functions with 1.5 % or more (self)"
    perf report -i /tmp/perf.data --no-children --sort sym --stdio -g caller,0.5,callee --percent-limit 1.5 2>/dev/null | grep -v '^#' | sed '/^$/d' | head -600
} > "$OUT/profile.txt"
timeout 15 strace -c -f -p "$PID" > "$OUT/syscalls.txt" 2>&1
# Which files a cycle reads, by name: 3 s of the calls themselves.
timeout 3 strace -f -y -e trace=pread64,read,statx,openat,poll -p "$PID" > "$OUT/calls.txt" 2>&1
kill -TERM "$PID" && wait "$PID"
check "the daemon ran quietly (no kill)" "$(count_outcome killed) kills" [ "$(count_outcome killed)" = 0 ]
finish

#!/bin/sh
# S5 storm: a hog that is restarted in a new pod cgroup right after each kill, and an empty pod
# cgroup left behind (still charged with memory, no process). Never more than one kill per
# cooldown, never the empty cgroup, every kill verified.
SCENARIO=s5-storm
. /root/lib.sh
node_layout
printf 'apiVersion: v1alpha1\nkind: OOMConfig\ntriggerExpression: %s\nsampleInterval: 200ms\n' \
    "'qos_memory_current[Besteffort] > 120.0 * 1048576.0 && time_since_trigger > duration(\"5s\")'" > /root/oom.yaml
# The leftover: a deleted pod whose cgroup keeps 150 MiB of shmem charged and no process.
EMPTY=$(pod besteffort deleted)
sh -c 'echo $$ > '"$(ctr "$EMPTY")"'/cgroup.procs; dd if=/dev/zero of=/dev/shm/leftover bs=1M count=150 2>/dev/null'
log "leftover pod: $(( $(cat $EMPTY/memory.current) >> 20 )) MiB, populated: $(grep populated $EMPTY/cgroup.events)"
start_oomwarden --config /root/oom.yaml
n=0
while [ $n -lt 4 ]; do
    P=$(pod besteffort hog$n)
    H=$(start_in "$(ctr "$P")" hog -s 16 -i 20 -m 64 -H -1)
    # Running, or already killed: the daemon's first cycle can kill the first hog within the
    # 0.2 s between two looks at cgroup.events (that once ended this loop after one kill).
    started() { populated "$P" || [ "$(count_outcome killed)" -gt "$n" ]; }
    wait_for 10 started || { log "hog$n (pid $H) never ran in $P: $(tr '\n' ' ' < $P/cgroup.events), alive: $(alive $H && echo yes || echo no)"; break; }
    log "hog$n (pid $H) runs in $P"
    # Restart right after the kill.
    wait_for 60 sh -c "! grep -q 'populated 1' $P/cgroup.events" || { log "hog$n was not killed within 60 s"; break; }
    log "hog$n killed"
    n=$((n + 1))
done
# With no hog left, the next trigger (one cooldown after the last kill) finds the leftover
# alone. (Waiting only 2 s left this to a race between the cooldown and the hog restarts.)
leftover_alone() { [ "$(count_outcome no-eligible-cgroup)" -ge 1 ]; }
wait_for 20 leftover_alone
kills=$(count_outcome killed)
victims=$(ours | grep -c '"victim"')
check "the restarted hog was killed each time" "$kills kills" [ "$kills" -ge 4 ]
check "every kill was verified" "$kills of $victims" [ "$victims" = "$kills" ]
# Talos would kill the leftover again and again; here a trigger with only it is a no-op record.
check "the leftover alone gives no-eligible-cgroup" "$(count_outcome no-eligible-cgroup)" [ "$(count_outcome no-eligible-cgroup)" -ge 1 ]
check "the empty leftover cgroup was never chosen" "$EMPTY" sh -c "! grep -q '\"kind\":\"oomwarden\",\"outcome\":\"[a-z-]*\",\"victim\":\"$EMPTY\"' $STATE/actions.jsonl"
gaps=$(ours | sed -n 's/.*"monotonicNs":\([0-9]*\).*/\1/p' | awk 'NR > 1 { g = ($1 - p) / 1e9; if (min == "" || g < min) min = g } { p = $1 } END { print min }')
check "actions are at least one cooldown (5 s) apart" "smallest gap ${gaps}s" awk -v g="$gaps" 'BEGIN { exit !(g >= 5.0) }'
check "kill verification took under a second" "killDurationMs" sh -c "sed -n 's/.*\"killDurationMs\":\([0-9.]*\).*/\1/p' $STATE/actions.jsonl | awk '\$1 >= 1000 { bad = 1 } END { exit bad }'"
finish

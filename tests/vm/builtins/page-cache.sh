#!/bin/sh
# vm: --mem 1G --scratch-disk 4G --append transparent_hugepage=never
# Built-in recording "page-cache": a Burstable pod streams 1.2 GB of files over and over (more
# than RAM) and a pod thrashes inside its own 128 MiB limit, beside the node's services. Memory
# looks full all the time; the default configuration must kill nothing.
SCENARIO=builtin-page-cache
. /root/lib.sh
echo n > /sys/kernel/mm/lru_gen/enabled 2>/dev/null
node_layout
disk_services
big_files
start_oomwarden --record "$OUT/recording.rec"
sleep 3
R=$(pod burstable reader)
start_in "$(ctr "$R")" sh -c 'while :; do cat /mnt/big/* > /dev/null; done' > /dev/null
L=$(pod burstable limited 128M)
start_in "$(ctr "$L")" hog -s 10 -i 50 -m 100 -H -1 > /dev/null
start_in "$(ctr "$L")" sh -c 'while :; do cat /mnt/sys1/* /mnt/big/f0 > /dev/null; done' > /dev/null
sleep 60
check "nothing was killed" "$(records) records" [ "$(records)" = 0 ]
finish

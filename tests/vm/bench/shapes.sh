# shapes.sh - sourced by tests/vm/bench.sh and tests/vm/bench/record.sh (bash, $here = tests/vm).
# shape NAME -> the workload shapes the benchmark plays: sets $script (the guest script),
# $timeout, $vmopts (its "# vm:" line) and the array $shape_env (--env arguments).
#   hog               the reaction episode: 450 MiB at once, then 5 MiB/s (bench/episode.sh)
#   slow-leak         the same hog taking 600 MiB, then leaking 1 MiB/s
#   full-but-healthy  S18: the node held at 90-95 % used, nothing growing, for 3 minutes
#   page-cache        S4: page-cache churn larger than RAM, for 2 minutes
#   fast-leak         the hog taking 16 MiB, then leaking 40 MiB/s (memory gone in about 25 s)
#   cold-services     the hog, the node's services touching one page of their files a round
#                     (no hot file working set: what stalls is the canary's 8 MiB alone)
#   quiet             nothing growing: the contender's CPU over 30 s and its VmHWM (bench/quiet.sh)
#   swap-hog          1 GiB of swap on a disk: a resident pod (250 MiB, hot) beside a hog whose
#                     pages go to swap (bench/swap-episode.sh); swap-hog-zswap: zswap in front
#                     (Debian's cloud kernel has no zswap: VMTEST_KERNEL_PKG=linux-image-amd64)
#   swap-cold         swap holding idle pods' and services' cold pages, nothing growing, 120 s
#                     (a kill is a false kill); swap-cold-zswap: zswap in front
#   culprit           no swap: an idle BestEffort pod beside a Burstable pod growing fast
shape() {
    shape_env=() timeout=420
    case $1 in
        hog) script="$here/bench/episode.sh" ;;
        slow-leak) script="$here/bench/episode.sh"; timeout=900
            shape_env=(--env TAKE_MIB=600 --env LEAK_MIB=1 --env EPISODE_LIMIT=6000) ;;
        full-but-healthy) script="$here/bench/s18-full-but-healthy.sh"; timeout=600 ;;
        page-cache) script="$here/scenarios/s4-no-false-kill.sh"; shape_env=(--env DURATION=120) ;;
        fast-leak) script="$here/bench/episode.sh"; shape_env=(--env TAKE_MIB=16 --env LEAK_MIB=40) ;;
        cold-services) script="$here/bench/episode.sh"; shape_env=(--env SERVICE_PAGES=1) ;;
        quiet) script="$here/bench/quiet.sh"; timeout=300 ;;
        swap-hog|swap-cold) script="$here/bench/swap-episode.sh"; timeout=600; shape_env=(--env SWAP=disk) ;;
        swap-hog-zswap|swap-cold-zswap) script="$here/bench/swap-episode.sh"; timeout=600; shape_env=(--env SWAP=zswap) ;;
        culprit) script="$here/bench/swap-episode.sh"; shape_env=(--env SWAP=off) ;;
        *) echo "unknown shape $1 (hog, slow-leak, full-but-healthy, page-cache, fast-leak, cold-services, quiet, swap-hog[-zswap], swap-cold[-zswap], culprit)" >&2; return 2 ;;
    esac
    vmopts=$(sed -n 's/^# vm: //p' "$script" | head -n1)
    [[ -n $vmopts ]] || vmopts="--mem 1G --scratch-disk 2G --append transparent_hugepage=never"
}

#!/bin/sh
# vm: --mem 1280M --scratch-disk 2G --append transparent_hugepage=never --add tests/vm/scenarios/s19-daemonset.sh:/root/s19-daemonset.sh
# needs: containerd
# needs: image
# S19 (the DaemonSet with everything on, a reload, a live kill) as a profile of the text the
# daemon runs, for scripts/text-order/profile: TEXT_PROFILE set, S19 writes the pages of the
# binary its daemons touched to /out/text-pages.txt (lib.sh, text_profile_pages). S19's checks
# apply as ever. 256 MiB more than S19: the profile build's binary (every function on its own
# page, 71 MB) is held three times in the guest's RAM (the initramfs, the image's tar, its
# unpacked layer), and in 1 GiB the hog met the kernel's OOM killer at 530 of its 600 MiB.
# Run: tests/vm/run.sh tests/vm/bench/text-profile.sh (or scripts/text-order/profile).
TEXT_PROFILE=1
. /root/s19-daemonset.sh

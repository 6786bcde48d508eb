/*
 * reclaim: how long a killed cgroup's memory takes to come back (oomwarden VM benchmark,
 * tests/vm/bench/mrelease.sh). Kills every process of CGROUP the way oomwarden does (a pidfd for
 * each, then "1" into cgroup.kill) and, with MODE "mrelease", calls process_mrelease on each
 * pidfd right after, as oomwarden does; with MODE "kill", does not. Then polls every 100 us
 * until the cgroup's memory.current is under 1 MiB and MemAvailable has come back by WANT_MIB,
 * and prints one JSON line with the times in microseconds after the cgroup.kill write.
 *   reclaim CGROUP kill|mrelease WANT_MIB
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease 448
#endif

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static long long read_ll(const char *path, const char *key) {
    char buf[8192];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    if (!key) return atoll(buf);
    char *p = strstr(buf, key);
    return p ? atoll(p + strlen(key)) : -1;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: reclaim CGROUP kill|mrelease WANT_MIB\n"); return 2; }
    const char *cg = argv[1];
    int mrelease = strcmp(argv[2], "mrelease") == 0;
    long long want_kb = atoll(argv[3]) * 1024;
    char path[4096];
    int fds[4096], nfd = 0;
    snprintf(path, sizeof path, "%s/cgroup.procs", cg);
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); return 1; }
    int pid;
    while (nfd < 4096 && fscanf(f, "%d", &pid) == 1) {
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd >= 0) fds[nfd++] = fd;
    }
    fclose(f);
    char current[4096];
    snprintf(current, sizeof current, "%s/memory.current", cg);
    long long before_bytes = read_ll(current, NULL);
    long long avail0 = read_ll("/proc/meminfo", "MemAvailable:");
    snprintf(path, sizeof path, "%s/cgroup.kill", cg);
    int kfd = open(path, O_WRONLY);
    if (kfd < 0) { perror(path); return 1; }
    long long t0 = now_us();
    if (write(kfd, "1", 1) != 1) { perror("cgroup.kill"); return 1; }
    close(kfd);
    long long t_mrelease = -1;
    int released = 0, failed = 0;
    if (mrelease) {
        for (int i = 0; i < nfd; i++) {
            if (syscall(SYS_process_mrelease, fds[i], 0) == 0) released++;
            else if (errno != ESRCH) failed++;
        }
        t_mrelease = now_us() - t0;
    }
    long long t_current = -1, t_avail = -1, deadline = t0 + 30000000LL;
    while ((t_current < 0 || t_avail < 0) && now_us() < deadline) {
        long long t = now_us() - t0;
        if (t_current < 0) {
            long long c = read_ll(current, NULL);
            if (c >= 0 && c < (1 << 20)) t_current = t;
        }
        if (t_avail < 0 && read_ll("/proc/meminfo", "MemAvailable:") - avail0 >= want_kb) t_avail = t;
        usleep(100);
    }
    printf("{\"mode\":\"%s\",\"processes\":%d,\"released\":%d,\"mreleaseFailed\":%d,\"memoryCurrentBefore\":%lld,"
           "\"mreleaseReturnedUs\":%lld,\"memoryCurrentUnder1MiBUs\":%lld,\"memAvailableBackUs\":%lld}\n",
           mrelease ? "mrelease" : "kill", nfd, released, failed, before_bytes, t_mrelease, t_current, t_avail);
    return t_current < 0 || t_avail < 0;
}

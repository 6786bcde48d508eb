/*
 * service: a node service whose working set is file-backed (its "binaries and data"): it maps
 * every file in DIR and touches pages in scattered order every INTERVAL ms, allocating and
 * freeing a little heap each round. Under memory pressure its pages are evicted and refaulted
 * as workingset restores, which the kernel counts as memory stall (PSI) in the service's
 * cgroup, the way node components stall when workloads eat the page cache.
 *   service DIR [PAGES_PER_ROUND=256] [INTERVAL_ms=100]
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

static void msleep(long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: service DIR [PAGES] [INTERVAL_ms]\n"); return 2; }
    long pages = argc > 2 ? atol(argv[2]) : 256, interval = argc > 3 ? atol(argv[3]) : 100;
    DIR *d = opendir(argv[1]);
    if (!d) { perror(argv[1]); return 1; }
    char *maps[256]; size_t sizes[256]; int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        int fd = open(path, O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) { if (fd >= 0) close(fd); continue; }
        char *p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED) continue;
        maps[n] = p; sizes[n] = st.st_size; n++;
    }
    closedir(d);
    if (n == 0) { fprintf(stderr, "service: no files in %s\n", argv[1]); return 1; }
    unsigned long x = (unsigned long)getpid() * 2654435761u;
    /* volatile: the reads and the heap round trip have no other visible effect, and the
     * compiler would otherwise remove them (it did: the service touched nothing). */
    static volatile unsigned long sum;
    for (;;) {
        for (long i = 0; i < pages; i++) {
            x = x * 6364136223846793005ul + 1442695040888963407ul;
            int f = (int)((x >> 33) % (unsigned long)n);
            size_t off = ((x >> 13) % (sizes[f] / 4096)) * 4096;
            sum += ((volatile unsigned char *)maps[f])[off];
        }
        volatile char *heap = malloc(1 << 20);
        if (heap) {
            for (size_t i = 0; i < (1 << 20); i += 4096) heap[i] = (char)sum;
            sum += (unsigned char)heap[4096];
            free((void *)heap);
        }
        msleep(interval);
    }
}

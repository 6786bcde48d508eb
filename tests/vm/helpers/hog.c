/*
 * hog: allocate and touch anonymous memory in steps (oomwarden VM scenarios).
 *   hog [-W] [-t | -T] [-c] [-s STEP_MiB] [-i INTERVAL_ms] [-m MAX_MiB] [-H HOLD_s]
 * -W wait for SIGUSR1 before allocating (a container started early, grown when the scenario says),
 * -t trap SIGTERM and exit 0 (a program that shuts down cleanly), -T ignore SIGTERM,
 * -s MiB per step (16), -i sleep between steps (100 ms), -m stop growing at MAX (0: never),
 * -H after MAX, hold this long re-touching every second (-1: forever; default 0: exit),
 * -c after MAX, hold forever without touching the memory again (cold pages: an idle service).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

static void clean_exit(int sig) {
    (void)sig;
    _exit(0);
}

static void msleep(long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0) {}
}

int main(int argc, char **argv) {
    long step = 16, interval = 100, max = 0, hold = 0;
    int c, wait_usr1 = 0, cold = 0;
    while ((c = getopt(argc, argv, "WtTcs:i:m:H:")) != -1) {
        switch (c) {
        case 'W': wait_usr1 = 1; break;
        case 't': signal(SIGTERM, clean_exit); break;
        case 'T': signal(SIGTERM, SIG_IGN); break;
        case 'c': cold = 1; break;
        case 's': step = atol(optarg); break;
        case 'i': interval = atol(optarg); break;
        case 'm': max = atol(optarg); break;
        case 'H': hold = atol(optarg); break;
        default: fprintf(stderr, "usage: hog [-W] [-t | -T] [-c] [-s MiB] [-i ms] [-m MiB] [-H s]\n"); return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (wait_usr1) {
        sigset_t set;
        int sig;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, NULL);
        printf("hog: pid=%d waiting for SIGUSR1\n", getpid());
        sigwait(&set, &sig);
    }
    char **chunks = calloc(1 << 16, sizeof(char *));
    long n = 0;
    size_t chunk = (size_t)step << 20;
    for (;;) {
        if (max > 0 && n * step >= max) break;
        char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) { perror("mmap"); msleep(interval); continue; }
        /* Odd bytes: a page of zeros goes to swap without a write since Linux 6.12 (found in
         * S23); real memory is not zeros. */
        for (size_t off = 0; off < chunk; off += 4096) p[off] = (char)((off >> 12) | 1);
        chunks[n++] = p;
        if (interval > 0) msleep(interval);
    }
    printf("hog: pid=%d holding %ld MiB\n", getpid(), n * step);
    if (cold)
        for (;;) pause();
    for (long t = 0; hold < 0 || t < hold; t++) {
        for (long i = 0; i < n; i++)
            for (size_t off = 0; off < chunk; off += 4096) chunks[i][off] += 2;
        sleep(1);
    }
    return 0;
}

/*
 * canary: a node component that must stay responsive. Every 10 ms it touches its small
 * working set (a mapped file, like a binary, plus 1 MiB of heap) and measures how late it
 * is. On SIGTERM (or after DURATION s) it writes a JSON summary:
 *   {"samples":N,"worstMs":W,"p99Ms":P,"p999Ms":Q,"over100ms":K,"late":[[T,D],...]}
 * where a delay is the time past the intended 10 ms period, and "late" lists (up to 8192) the
 * periods later than 5 ms: T = CLOCK_MONOTONIC in ms when the period ended, D = its delay.
 *   canary FILE OUT.json [DURATION_s]
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define MAX_SAMPLES (1 << 20)
#define MAX_LATE 8192
#define LATE_MS 5.0
static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: canary FILE OUT.json [DURATION_s]\n"); return 2; }
    double duration = argc > 3 ? atof(argv[3]) * 1e3 : 0;
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 4096) { perror(argv[1]); return 1; }
    volatile unsigned char *file = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (file == MAP_FAILED) { perror("mmap"); return 1; }
    volatile char *heap = malloc(1 << 20);
    double *delays = malloc(sizeof(double) * MAX_SAMPLES);
    if (!heap || !delays) return 1;
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    size_t n = 0, nlate = 0;
    static double late_at[MAX_LATE], late_ms[MAX_LATE];
    static volatile unsigned long sum;
    double start = now_ms(), next = start + 10;
    while (!stop && (duration == 0 || now_ms() - start < duration)) {
        for (off_t off = 0; off < st.st_size; off += 4096) sum += file[off];
        for (size_t off = 0; off < (1 << 20); off += 4096) heap[off] = (char)sum;
        double t = now_ms();
        if (t < next) {
            struct timespec ts = { 0, (long)((next - t) * 1e6) };
            nanosleep(&ts, NULL);
        }
        double late = now_ms() - next;
        if (n < MAX_SAMPLES) delays[n++] = late > 0 ? late : 0;
        if (late > LATE_MS && nlate < MAX_LATE) { late_at[nlate] = now_ms(); late_ms[nlate++] = late; }
        next += 10;
        if (now_ms() > next + 10) next = now_ms() + 10; /* do not try to catch up */
    }
    qsort(delays, n, sizeof(double), cmp);
    size_t over = 0;
    for (size_t i = 0; i < n; i++) over += delays[i] > 100;
    FILE *out = fopen(argv[2], "w");
    if (!out) { perror(argv[2]); return 1; }
    fprintf(out, "{\"samples\":%zu,\"worstMs\":%.1f,\"p99Ms\":%.1f,\"p999Ms\":%.1f,\"over100ms\":%zu,\"late\":[", n,
            n ? delays[n - 1] : 0, n ? delays[(size_t)(n * 0.99)] : 0, n ? delays[(size_t)(n * 0.999)] : 0, over);
    for (size_t i = 0; i < nlate; i++) fprintf(out, "%s[%.0f,%.1f]", i ? "," : "", late_at[i], late_ms[i]);
    fprintf(out, "]}\n");
    fclose(out);
    return 0;
}

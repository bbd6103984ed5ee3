/*
 * Exposure probe: the benchmark's containers run this as their first and only process.
 * It measures, from inside the container, how long after its own start every alias named
 * on its command line resolves (stat follows the link to the bind-mounted driver file),
 * polling every 100 microseconds. Linked statically so it needs nothing from the image.
 *
 *   probe SECONDS PATH...   prints "probe first=present|missing exposure_us=N" (-1 when the
 *                           aliases did not appear within SECONDS), then waits forever
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int all_present(int n, char **paths) {
    struct stat st;
    for (int i = 0; i < n; i++) {
        if (stat(paths[i], &st) != 0) {
            return 0;
        }
    }
    return 1;
}

static long elapsed_us(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000L + (t.tv_nsec - t0->tv_nsec) / 1000L;
}

int main(int argc, char **argv) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (argc < 3) {
        fprintf(stderr, "usage: probe SECONDS PATH...\n");
        return 2;
    }
    long limit_us = atol(argv[1]) * 1000000L;
    int n = argc - 2;
    char **paths = argv + 2;
    int first = all_present(n, paths);
    long us = 0;
    if (!first) {
        while (!all_present(n, paths)) {
            us = elapsed_us(&t0);
            if (us > limit_us) {
                printf("probe first=missing exposure_us=-1\n");
                fflush(stdout);
                for (;;) pause();
            }
            usleep(100);
        }
        us = elapsed_us(&t0);
    }
    printf("probe first=%s exposure_us=%ld\n", first ? "present" : "missing", us);
    fflush(stdout);
    for (;;) pause();
}

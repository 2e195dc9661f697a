/*
 * Runs kernels compiled ahead of time by `relayout aot`, linked into this program as object
 * files. tests/aot.rs writes `kernels.inc` (the headers of the objects and a table of their
 * functions) and the input of each kernel as DIR/NAME.in, builds this file with the objects,
 * and compares what it writes with the JIT's output:
 *
 *   DIR/NAME.whole   NAME(src, dst) on the input
 *   DIR/NAME.range   NAME_range over 0..OUTER cut into 3 pieces run on 3 pthreads at once,
 *                    plus an empty range and one past OUTER (which must change nothing)
 *
 * Both outputs start as garbage, so a byte a kernel forgets to write shows.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_io.h"

typedef void (*whole_fn)(const void *src, void *dst);
typedef void (*range_fn)(const void *src, void *dst, uint64_t start, uint64_t end);

struct kernel {
    const char *name;
    whole_fn whole;
    range_fn range;
    uint64_t input_bytes, output_bytes, outer;
};

/* The objects' headers and `static const struct kernel kernels[]`. */
#include "kernels.inc"

struct piece {
    const struct kernel *k;
    const unsigned char *src;
    unsigned char *dst;
    uint64_t start, end;
};

static void *run_piece(void *arg) {
    struct piece *p = arg;
    p->k->range(p->src, p->dst, p->start, p->end);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    char path[4096];
    int failures = 0;
    size_t count = sizeof kernels / sizeof kernels[0];
    for (size_t i = 0; i < count; i++) {
        const struct kernel *k = &kernels[i];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s.in", argv[1], k->name);
        unsigned char *src = read_file(path, &len);
        if (!src || len != k->input_bytes) {
            fprintf(stderr, "%s: cannot read %s, or it is not %llu bytes\n", k->name, path,
                    (unsigned long long)k->input_bytes);
            failures++;
            continue;
        }
        unsigned char *whole = garbage(k->output_bytes), *ranged = garbage(k->output_bytes);
        k->whole(src, whole);

        /* 0..outer in 3 pieces on 3 threads; then ranges that must do nothing. */
        pthread_t threads[3];
        struct piece pieces[3];
        for (int t = 0; t < 3; t++) {
            pieces[t] = (struct piece){k, src, ranged, k->outer * t / 3, k->outer * (t + 1) / 3};
            if (pthread_create(&threads[t], NULL, run_piece, &pieces[t]) != 0) failures++;
        }
        for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
        k->range(src, ranged, k->outer, k->outer + 5);
        k->range(src, ranged, 1, 1);

        snprintf(path, sizeof path, "%s/%s.whole", argv[1], k->name);
        if (write_file(path, whole, k->output_bytes) != 0) failures++;
        snprintf(path, sizeof path, "%s/%s.range", argv[1], k->name);
        if (write_file(path, ranged, k->output_bytes) != 0) failures++;
        free(src);
        free(whole);
        free(ranged);
    }
    printf("%zu kernels run, %d failures\n", count, failures);
    return failures != 0;
}

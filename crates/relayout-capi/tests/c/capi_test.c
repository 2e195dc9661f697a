/*
 * The C API from C, as a user's program calls it. tests/c_programs.rs compiles this file with
 * the system C compiler, links it with librelayout_capi, and runs it in three modes:
 *
 *   capi_test conformance MANIFEST   one line per case: NAME \t INPUT \t OUTPUT \t OP-TEXT.
 *                                    Compiles OP-TEXT, runs it on the bytes of INPUT (when
 *                                    INPUT is not "-") and writes the result to OUTPUT;
 *                                    prints one line per case, "NAME\tok\tDIMS" or
 *                                    "NAME\terror\tCATEGORY\tMESSAGE", for the Rust side to
 *                                    compare with the case's expectation.
 *   capi_test errors                 the error paths: bad op text, invalid ops, wrong buffer
 *                                    sizes, NULL arguments, IR stages; chains of ops.
 *   capi_test threads                4 threads running one shared kernel at once.
 *
 * Exits 0 when every check held; otherwise prints what failed and exits 1.
 */
#include "relayout.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_io.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                               \
    do {                                                                          \
        checks++;                                                                 \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                           \
        }                                                                         \
    } while (0)

/* True when `e` is an error of `category`; says what it is otherwise. */
static int has_category(relayout_error_t *e, const char *category) {
    const char *got = e ? relayout_error_category(e) : NULL;
    if (got && strcmp(got, category) == 0) return 1;
    fprintf(stderr, "expected an error [%s], got %s [%s]\n", category,
            e ? relayout_error_message(e) : "no error", got ? got : "no category");
    return 0;
}

static void print_error(const char *name, relayout_error_t *e) {
    const char *category = relayout_error_category(e);
    const char *message = relayout_error_message(e);
    /* The message may hold tabs or newlines; the Rust side reads one line per case. */
    printf("%s\terror\t%s\t", name, category ? category : "-");
    for (const char *p = message; *p; p++) putchar(*p == '\n' || *p == '\t' ? ' ' : *p);
    putchar('\n');
}

static int conformance(const char *manifest) {
    FILE *f = fopen(manifest, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", manifest);
        return 1;
    }
    static char line[1 << 16];
    int index = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *name = strtok(line, "\t");
        char *input = strtok(NULL, "\t");
        char *output = strtok(NULL, "\t");
        char *op = strtok(NULL, "\t");
        if (!name || !input || !output || !op) {
            fprintf(stderr, "bad manifest line %d\n", index);
            return 1;
        }
        relayout_error_t *e = NULL;
        relayout_kernel_t *k = relayout_compile(op, &e);
        if (!k) {
            CHECK(e != NULL && relayout_error_message(e)[0] != 0);
            print_error(name, e);
            relayout_error_free(e);
            index++;
            continue;
        }
        if (strcmp(input, "-") != 0) {
            size_t src_len = 0;
            unsigned char *src = read_file(input, &src_len);
            CHECK(src != NULL);
            CHECK(src_len == relayout_kernel_input_bytes(k));
            size_t dst_len = relayout_kernel_output_bytes(k);
            unsigned char *dst = garbage(dst_len);
            /* Every other case runs split over 4 threads. */
            size_t threads = index % 2 ? 4 : 1;
            if (relayout_kernel_run(k, src, src_len, dst, dst_len, threads, &e) != 0) {
                print_error(name, e);
                relayout_error_free(e);
                free(src);
                free(dst);
                relayout_kernel_free(k);
                index++;
                continue;
            }
            CHECK(write_file(output, dst, dst_len) == 0);
            free(src);
            free(dst);
        }
        printf("%s\tok\t", name);
        size_t rank = relayout_kernel_output_rank(k);
        for (size_t i = 0; i < rank; i++)
            printf("%s%lld", i ? "x" : "", (long long)relayout_kernel_output_dim(k, i));
        printf("\n");
        CHECK(relayout_kernel_output_dim(k, rank) == -1);
        relayout_kernel_free(k);
        index++;
    }
    fclose(f);
    return 0;
}

/* Compiles `op`, expecting failure with `category` (NULL: no category). */
static void expect_compile_error(const char *op, const char *category) {
    relayout_error_t *e = NULL;
    relayout_kernel_t *k = relayout_compile(op, &e);
    CHECK(k == NULL);
    CHECK(e != NULL);
    if (!e) return;
    CHECK(strlen(relayout_error_message(e)) > 0);
    const char *got = relayout_error_category(e);
    if (category) {
        CHECK(got != NULL && strcmp(got, category) == 0);
    } else {
        CHECK(got == NULL);
    }
    relayout_error_free(e);
}

/* A chain that must fail to compile: NULL, with an error whose message holds `text`. */
static void expect_chain_error(const char *const *ops, size_t n, const char *text) {
    relayout_error_t *e = NULL;
    relayout_kernel_t *k = relayout_compile_chain(ops, n, &e);
    CHECK(k == NULL && e != NULL);
    if (e && !strstr(relayout_error_message(e), text))
        fprintf(stderr, "expected \"%s\" in: %s\n", text, relayout_error_message(e));
    CHECK(e && strstr(relayout_error_message(e), text) != NULL);
    relayout_error_free(e);
    relayout_kernel_free(k);
}

/* Chains composed into one kernel: SpaceToDepth then DepthToSpace gives the input back (a
 * view); SpaceToDepth then a Transpose gives what the two ops give one by one, whole and over
 * three threads; and the errors a chain can give. */
static void chains(void) {
    const char *s2d = "SpaceToDepth {block_size = 2} : tensor<1x4x4x2xf32>";
    const char *identity[2] = {s2d, "DepthToSpace {block_size = 2}"};
    const char *moved[2] = {s2d, "Transpose {perm = [0, 3, 1, 2]}"};
    unsigned char src[128], mid[128], want[128], got[128];
    for (int i = 0; i < 128; i++) src[i] = (unsigned char)(i * 3 + 1);
    relayout_error_t *e = NULL;

    relayout_kernel_t *k = relayout_compile_chain(identity, 2, &e);
    CHECK(k != NULL && e == NULL);
    if (k) {
        CHECK(relayout_kernel_output_bytes(k) == 128);
        CHECK(relayout_kernel_run(k, src, 128, got, 128, 1, NULL) == 0);
        CHECK(memcmp(got, src, 128) == 0);
        CHECK(strcmp(relayout_kernel_movement_kind(k), "view") == 0);
        char *loops = relayout_kernel_ir(k, "loops", NULL);
        CHECK(loops && strstr(loops, "loops @space_to_depth_then_depth_to_space(") != NULL);
        relayout_string_free(loops);
        relayout_kernel_free(k);
    }

    relayout_kernel_t *first = relayout_compile(s2d, NULL);
    relayout_kernel_t *second = relayout_compile("Transpose {perm = [0, 3, 1, 2]} : tensor<1x2x2x8xf32>", NULL);
    k = relayout_compile_chain(moved, 2, NULL);
    CHECK(first && second && k);
    if (first && second && k) {
        CHECK(relayout_kernel_run(first, src, 128, mid, 128, 1, NULL) == 0);
        CHECK(relayout_kernel_run(second, mid, 128, want, 128, 1, NULL) == 0);
        CHECK(memcmp(want, src, 128) != 0);
        for (size_t threads = 1; threads <= 3; threads += 2) {
            memset(got, 0xEE, sizeof got);
            CHECK(relayout_kernel_run(k, src, 128, got, 128, threads, NULL) == 0);
            CHECK(memcmp(got, want, 128) == 0);
        }
        CHECK(relayout_kernel_output_rank(k) == 4 && relayout_kernel_output_dim(k, 1) == 8);
    }
    relayout_kernel_free(first);
    relayout_kernel_free(second);
    relayout_kernel_free(k);

    /* A later op with a type; an op invalid for the type the chain gives it (its category);
     * a Col2Im, which has no gather form; a chain too large; no ops; NULL arguments. */
    const char *typed[2] = {s2d, "DepthToSpace {block_size = 2} : tensor<1x2x2x8xf32>"};
    expect_chain_error(typed, 2, "leave out");
    const char *invalid[2] = {s2d, "DepthToSpace {block_size = 3}"};
    k = relayout_compile_chain(invalid, 2, &e);
    CHECK(k == NULL && has_category(e, "not_divisible"));
    relayout_error_free(e);
    e = NULL;
    const char *col2im[2] = {"Reshape {shape = [1, 4, 4]} : tensor<1x16xf32>",
                             "Col2Im {image_shape = [3, 3], block_shape = [2, 2]}"};
    expect_chain_error(col2im, 2, "cannot be composed");
    /* Three reflect Pads of four dims: too large to compose, split after the op named. */
    const char *reflects[3] = {
        "Pad {pads = [1, 1, 1, 1, 1, 1, 1, 1], mode = \"reflect\"} : tensor<3x4x5x6xf32>",
        "Pad {pads = [1, 1, 1, 1, 1, 1, 1, 1], mode = \"reflect\"}",
        "Pad {pads = [1, 1, 1, 1, 1, 1, 1, 1], mode = \"reflect\"}"};
    expect_chain_error(reflects, 3, "the ops from it on as two chains");
    expect_chain_error(identity, 0, "n_ops is 0");
    expect_chain_error(NULL, 2, "ops is NULL");
    const char *with_null[2] = {s2d, NULL};
    expect_chain_error(with_null, 2, "ops[1] is NULL");
    CHECK(relayout_compile_chain(identity, 0, NULL) == NULL);
}

static int errors(void) {
    /* Bad syntax: a message with the column, no category. */
    expect_compile_error("SpaceToDepth {block_size 2} : tensor<1x4x4x1xf32>", NULL);
    expect_compile_error("", NULL);
    expect_compile_error("SpaceToDepth : tensor<1x4x4x1xf33>", NULL);
    /* Invalid ops: the conformance categories. */
    expect_compile_error("SpaceToDepth {block_size = 2} : tensor<1x5x4x1xf32>", "not_divisible");
    expect_compile_error("SpaceToDepth {block_size = 1} : tensor<1x4x4x1xf32>", "block_size_too_small");
    expect_compile_error("NoSuchOp {block_size = 2} : tensor<1x4x4x1xf32>", "unknown_op");
    expect_compile_error("DepthToSpace {block_size = 2, mode = \"CRD\"} : tensor<1x2x2x8xf32>", "bad_mode");
    expect_compile_error("SpaceToDepth {block_size = 2} : tensor<4x4xf32>", "bad_rank");
    /* NULL op text is an error; a NULL error pointer discards the error. */
    expect_compile_error(NULL, NULL);
    CHECK(relayout_compile(NULL, NULL) == NULL);
    CHECK(relayout_compile("SpaceToDepth : tensor<1xf32>", NULL) == NULL);

    relayout_error_t *e = NULL;
    relayout_kernel_t *k = relayout_compile("SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>", &e);
    CHECK(k != NULL && e == NULL);
    CHECK(relayout_kernel_input_bytes(k) == 64);
    CHECK(relayout_kernel_output_bytes(k) == 64);
    CHECK(relayout_kernel_input_rank(k) == 4 && relayout_kernel_input_dim(k, 1) == 4);
    CHECK(relayout_kernel_input_dim(k, 4) == -1);
    CHECK(relayout_kernel_output_rank(k) == 4);
    int64_t want[4] = {1, 2, 2, 4};
    for (size_t i = 0; i < 4; i++) CHECK(relayout_kernel_output_dim(k, i) == want[i]);
    CHECK(relayout_kernel_output_dim(k, 4) == -1);

    float src[16], dst[16];
    for (int i = 0; i < 16; i++) src[i] = (float)i;
    /* Wrong lengths: buffer_length, and nothing written. */
    memset(dst, 0xab, sizeof dst);
    CHECK(relayout_kernel_run(k, src, sizeof src - 4, dst, sizeof dst, 1, &e) == -1);
    CHECK(has_category(e, "buffer_length"));
    relayout_error_free(e);
    e = NULL;
    unsigned char *too_long = malloc(sizeof dst + 4);
    CHECK(relayout_kernel_run(k, src, sizeof src, too_long, sizeof dst + 4, 1, &e) == -1);
    free(too_long);
    CHECK(has_category(e, "buffer_length"));
    CHECK(e && strstr(relayout_error_message(e), "destination") != NULL);
    relayout_error_free(e);
    e = NULL;
    CHECK(((unsigned char *)dst)[0] == 0xab);
    /* NULL buffers with a non-zero length, a NULL kernel, overlapping buffers. */
    CHECK(relayout_kernel_run(k, NULL, sizeof src, dst, sizeof dst, 1, &e) == -1);
    CHECK(e && relayout_error_category(e) == NULL);
    relayout_error_free(e);
    e = NULL;
    CHECK(relayout_kernel_run(k, src, sizeof src, NULL, sizeof dst, 1, NULL) == -1);
    CHECK(relayout_kernel_run(NULL, src, sizeof src, dst, sizeof dst, 1, &e) == -1);
    CHECK(e && strstr(relayout_error_message(e), "NULL") != NULL);
    relayout_error_free(e);
    e = NULL;
    CHECK(relayout_kernel_run(k, src, sizeof src, src, sizeof src, 1, &e) == -1);
    CHECK(e && strstr(relayout_error_message(e), "overlap") != NULL);
    relayout_error_free(e);
    e = NULL;
    /* The right lengths: TensorFlow's example, on 1 and on 3 threads. */
    for (size_t threads = 0; threads <= 3; threads += 3) {
        memset(dst, 0, sizeof dst);
        CHECK(relayout_kernel_run(k, src, sizeof src, dst, sizeof dst, threads, &e) == 0);
        CHECK(e == NULL);
        float first_pixel[4] = {0, 1, 4, 5};
        CHECK(memcmp(dst, first_pixel, sizeof first_pixel) == 0);
    }

    /* The IR of every stage, and an unknown stage. */
    const char *stages[5] = {"lowered", "optimized", "loops", "clif", "vcode"};
    const char *expect[5] = {"floordiv", "kernel @space_to_depth", "loops @space_to_depth",
                             "function %space_to_depth(", "ret"};
    for (int i = 0; i < 5; i++) {
        char *text = relayout_kernel_ir(k, stages[i], &e);
        CHECK(text != NULL && e == NULL);
        if (text) CHECK(strstr(text, expect[i]) != NULL);
        relayout_string_free(text);
    }
    CHECK(relayout_kernel_ir(k, "machine", &e) == NULL);
    CHECK(e && strstr(relayout_error_message(e), "lowered") != NULL);
    relayout_error_free(e);
    e = NULL;
    CHECK(relayout_kernel_ir(k, NULL, &e) == NULL);
    relayout_error_free(e);
    e = NULL;
    CHECK(relayout_kernel_ir(NULL, "loops", NULL) == NULL);

    /* What the kernel does with the bytes: SpaceToDepth here is a transpose. */
    char *movement = relayout_kernel_movement(k);
    CHECK(movement && strncmp(movement, "permutation: input.reshape(", 27) == 0);
    relayout_string_free(movement);
    CHECK(relayout_kernel_movement_kind(k) && strcmp(relayout_kernel_movement_kind(k), "permutation") == 0);
    CHECK(relayout_kernel_movement(NULL) == NULL);
    CHECK(relayout_kernel_movement_kind(NULL) == NULL);
    /* Every other row and column: a strided view of the input. */
    relayout_kernel_t *steps =
        relayout_compile("Slice {starts = [0, 0], ends = [8, 8], steps = [2, 2]} : tensor<8x8xf32>", &e);
    CHECK(steps != NULL && e == NULL);
    if (steps) {
        CHECK(strcmp(relayout_kernel_movement_kind(steps), "strided view") == 0);
        char *view = relayout_kernel_movement(steps);
        CHECK(view && strstr(view, "shape=(4, 4), strides=(16, 2)") != NULL);
        relayout_string_free(view);
        relayout_kernel_free(steps);
    }

    /* NULL where the header allows it. */
    CHECK(relayout_kernel_input_bytes(NULL) == 0);
    CHECK(relayout_kernel_output_bytes(NULL) == 0);
    CHECK(relayout_kernel_output_rank(NULL) == 0);
    CHECK(relayout_kernel_output_dim(NULL, 0) == -1);
    CHECK(relayout_error_message(NULL) == NULL);
    CHECK(relayout_error_category(NULL) == NULL);
    relayout_string_free(NULL);
    relayout_kernel_free(NULL);
    relayout_error_free(NULL);
    relayout_kernel_free(k);

    /* An empty tensor: NULL buffers of length 0 are allowed. */
    k = relayout_compile("SpaceToDepth {block_size = 2} : tensor<0x4x4x1xf32>", &e);
    CHECK(k != NULL);
    if (k) {
        CHECK(relayout_kernel_input_bytes(k) == 0 && relayout_kernel_output_bytes(k) == 0);
        CHECK(relayout_kernel_run(k, NULL, 0, NULL, 0, 1, &e) == 0);
        relayout_kernel_free(k);
    } else {
        relayout_error_free(e);
    }
    chains();
    return 0;
}

/* The threads test: one kernel, 4 threads, each running it repeatedly into its own buffer. */
struct worker {
    const relayout_kernel_t *k;
    const unsigned char *src;
    const unsigned char *expected;
    int index;
    int bad;
};

static void *work(void *arg) {
    struct worker *w = arg;
    size_t in = relayout_kernel_input_bytes(w->k), out = relayout_kernel_output_bytes(w->k);
    unsigned char *dst = malloc(out);
    for (int rep = 0; rep < 25; rep++) {
        memset(dst, rep, out);
        /* Half the threads also split each run over the shared pool. */
        size_t threads = w->index % 2 ? 3 : 1;
        if (relayout_kernel_run(w->k, w->src, in, dst, out, threads, NULL) != 0 ||
            memcmp(dst, w->expected, out) != 0)
            w->bad++;
        if (rep % 8 == 0) {
            char *loops = relayout_kernel_ir(w->k, "loops", NULL);
            if (!loops) w->bad++;
            relayout_string_free(loops);
        }
    }
    free(dst);
    return NULL;
}

static int threads(void) {
    const char *op =
        "SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 1], [2, 0]]} : tensor<3x62x70x24xf32>";
    relayout_error_t *e = NULL;
    relayout_kernel_t *k = relayout_compile(op, &e);
    CHECK(k != NULL);
    if (!k) {
        fprintf(stderr, "%s\n", relayout_error_message(e));
        return 1;
    }
    size_t in = relayout_kernel_input_bytes(k), out = relayout_kernel_output_bytes(k);
    unsigned char *src = malloc(in), *expected = malloc(out);
    for (size_t i = 0; i < in; i++) src[i] = (unsigned char)(i * 7 + i / 251);
    CHECK(relayout_kernel_run(k, src, in, expected, out, 1, NULL) == 0);
    pthread_t ids[4];
    struct worker workers[4];
    for (int i = 0; i < 4; i++) {
        workers[i] = (struct worker){k, src, expected, i, 0};
        CHECK(pthread_create(&ids[i], NULL, work, &workers[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(ids[i], NULL);
        CHECK(workers[i].bad == 0);
    }
    relayout_kernel_free(k);
    free(src);
    free(expected);
    return 0;
}

int main(int argc, char **argv) {
    int status = 1;
    if (argc == 3 && strcmp(argv[1], "conformance") == 0) {
        status = conformance(argv[2]);
    } else if (argc == 2 && strcmp(argv[1], "errors") == 0) {
        status = errors();
    } else if (argc == 2 && strcmp(argv[1], "threads") == 0) {
        status = threads();
    } else {
        fprintf(stderr, "usage: %s conformance MANIFEST | errors | threads\n", argv[0]);
        return 2;
    }
    fprintf(stderr, "%s: %d checks, %d failed\n", argv[1], checks, failures);
    return status != 0 || failures != 0;
}

/*
 * relayout.h: the C API of relayout, a compiler from tensor relayout ops (SpaceToDepth,
 * DepthToSpace, SpaceToBatchND, BatchToSpaceND, Col2Im, ...) to machine code specialised
 * for one fixed shape and element type.
 *
 * Link with librelayout_capi (the shared library, or the static one plus -lpthread -ldl -lm).
 *
 * The model:
 * - relayout_compile() turns an op description, written in the op syntax of the `relayout`
 *   command line, into a kernel:
 *       "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>"
 *       "SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 1], [1, 1]]} : tensor<1x6x6x3xui8>"
 *   Compiling the same op text again is a cache lookup.
 * - A kernel reads exactly relayout_kernel_input_bytes() bytes and writes exactly
 *   relayout_kernel_output_bytes() bytes (little-endian elements, row-major, as NumPy's C
 *   order); relayout_kernel_run() checks both lengths before anything runs. A kernel is
 *   immutable: any number of threads may run the same kernel at once.
 * - Ownership: a function that returns a non-const pointer (a kernel, an error, a char *)
 *   gives it to the caller, who frees it with the matching relayout_*_free function. A const
 *   char * belongs to the object it was read from and lives as long as that object.
 * - Errors: every function that can fail takes a last `relayout_error_t **error`. On failure
 *   it returns NULL (or -1) and, when `error` is not NULL, stores a new error in *error, which
 *   the caller frees with relayout_error_free(). On success *error is not written. Passing
 *   NULL for `error` is allowed and discards the error.
 * - No function lets a panic (a bug in relayout) escape: it becomes an error.
 *
 * The library also exports relayout_f16_add, relayout_bf16_add, relayout_stream_copy_nest,
 * relayout_stream_zero_nest and relayout_store_fence: not for programs to call, but for object
 * files written by `relayout aot` whose header says they need librelayout_capi.
 *
 * A NULL pointer argument is allowed where the comment says so; elsewhere it is reported as
 * an error (or by the documented failure value), never dereferenced.
 */
#ifndef RELAYOUT_H
#define RELAYOUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A compiled op or chain of ops (opaque). Created by relayout_compile() or
 * relayout_compile_chain(), freed by relayout_kernel_free(). */
typedef struct relayout_kernel relayout_kernel_t;

/* An error (opaque): a message and, for an invalid op description, its category. Freed by
 * relayout_error_free(). */
typedef struct relayout_error relayout_error_t;

/*
 * Compiles `op` (the command line's op syntax, NUL-terminated UTF-8; borrowed for the call).
 * Returns a new kernel that the caller frees with relayout_kernel_free(), or NULL on failure,
 * with *error set when `error` is not NULL. An invalid op description has a category
 * ("not_divisible", "unknown_op", ...); a syntax error has none.
 */
relayout_kernel_t *relayout_compile(const char *op, relayout_error_t **error);

/*
 * Composes a chain of ops applied one after another into one kernel and compiles it: one pass
 * over the data, no intermediate buffer. `ops` holds `n_ops` NUL-terminated UTF-8 strings
 * (borrowed for the call): ops[0] an op with its input type, as relayout_compile() takes it;
 * each later op without a type, which the op before it gives ("DepthToSpace {block_size =
 * 2}"). Returns a new kernel (run, inspected and freed as relayout_compile()'s), or NULL on
 * failure, with *error set when `error` is not NULL: an op invalid for the type the chain gives
 * it has that op's category; a chain that cannot be composed (a Col2Im in it) says why, and a
 * chain whose composed kernel would be too large (several piecewise Pads) names the op where
 * it splits into two chains that compose.
 */
relayout_kernel_t *relayout_compile_chain(const char *const *ops, size_t n_ops,
                                          relayout_error_t **error);

/*
 * Runs `k` (borrowed) from `src` (src_bytes long, borrowed for the call) into `dst`
 * (dst_bytes long, written). Both lengths must equal the kernel's sizes: a wrong one is an
 * error of category "buffer_length" and nothing is written. `src` and `dst` must not overlap.
 * `src` or `dst` may be NULL only when its length is 0. `threads` 0 or 1 runs on the calling
 * thread only; a larger number splits the work over up to that many threads of a pool shared
 * by the whole process. Returns 0 on success, or -1 with *error set when `error` is not NULL.
 * Safe to call from many threads at once with the same kernel (and different `dst`s).
 */
int relayout_kernel_run(const relayout_kernel_t *k, const void *src, size_t src_bytes,
                        void *dst, size_t dst_bytes, size_t threads, relayout_error_t **error);

/* The byte size of the input `k` reads; 0 when `k` is NULL. */
size_t relayout_kernel_input_bytes(const relayout_kernel_t *k);

/* The byte size of the output `k` writes; 0 when `k` is NULL. */
size_t relayout_kernel_output_bytes(const relayout_kernel_t *k);

/* The rank of the input of `k`; 0 when `k` is NULL. */
size_t relayout_kernel_input_rank(const relayout_kernel_t *k);

/* Dim `i` of the input of `k`; -1 when `k` is NULL or i >= the input rank. */
int64_t relayout_kernel_input_dim(const relayout_kernel_t *k, size_t i);

/* The rank of the output of `k`; 0 when `k` is NULL. */
size_t relayout_kernel_output_rank(const relayout_kernel_t *k);

/* Dim `i` of the output of `k`; -1 when `k` is NULL or i >= the output rank. */
int64_t relayout_kernel_output_dim(const relayout_kernel_t *k, size_t i);

/*
 * The text of one stage of the compilation of `k` (borrowed): `stage` is "lowered",
 * "optimized" (index-map IR), "loops" (loop IR, what is compiled), "clif" (Cranelift IR),
 * "vcode" (machine instructions) or "asm" (only in builds with the disassembler). Returns a
 * new NUL-terminated string that the caller frees with relayout_string_free(), or NULL with
 * *error set when `error` is not NULL.
 */
char *relayout_kernel_ir(const relayout_kernel_t *k, const char *stage, relayout_error_t **error);

/*
 * What `k` does with the bytes of its input, in one line, as a graph optimizer asks it: "no
 * movement: ... (a view)", "contiguous copy: ...", "permutation: input.reshape(...).transpose
 * (...)", "strided view: as_strided(...)" or "gather: ...". Returns a new NUL-terminated
 * string that the caller frees with relayout_string_free(), or NULL when `k` is NULL.
 */
char *relayout_kernel_movement(const relayout_kernel_t *k);

/*
 * The kind of relayout_kernel_movement(), to branch on: "view", "contiguous copy",
 * "permutation", "strided view" or "gather" (a kind added later gets a word of its own). A
 * static string: do not free it. NULL when `k` is NULL.
 */
const char *relayout_kernel_movement_kind(const relayout_kernel_t *k);

/* Frees a string returned by relayout_kernel_ir() or relayout_kernel_movement(). NULL is
 * allowed and does nothing. */
void relayout_string_free(char *s);

/* Frees a kernel. NULL is allowed and does nothing. No thread may be running it. */
void relayout_kernel_free(relayout_kernel_t *k);

/* The message of `e`, owned by `e` (valid until relayout_error_free(e)); NULL when `e` is
 * NULL. */
const char *relayout_error_message(const relayout_error_t *e);

/* The conformance category of `e` ("not_divisible", "bad_rank", "unknown_op",
 * "buffer_length", ...), owned by `e`; NULL when the error has none (a syntax error, a NULL
 * argument, a failure of relayout itself) or when `e` is NULL. */
const char *relayout_error_category(const relayout_error_t *e);

/* Frees an error. NULL is allowed and does nothing. */
void relayout_error_free(relayout_error_t *e);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RELAYOUT_H */

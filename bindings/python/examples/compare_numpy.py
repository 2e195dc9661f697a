"""Times relayout against numpy's best formulation of the same op, on real model shapes.

numpy's formulation is a reshape and transpose view of the input copied with one `np.copyto`
into a preallocated output viewed in the transposed order: one pass over the data, no
temporary (padding and Col2Im need a second pass). relayout runs with `out=` into a
preallocated output as well. Both run in this process, interleaved (relayout, numpy,
relayout, ...), so that both see the same machine state; the medians are compared, and the
results are checked equal first.

    python examples/compare_numpy.py           # 15 rounds per case
    python examples/compare_numpy.py --quick   # 3 rounds (what CI runs)
    python examples/compare_numpy.py --threads 2
"""

import argparse
import statistics
import time

import numpy as np

import relayout


def d2s_crd(x, out, b):
    # PyTorch's pixel_shuffle: (n, c, by, bx, h, w) -> (n, c, h, by, w, bx).
    n, c, h, w = x.shape
    v = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    np.copyto(out.reshape(v.shape), v)


def d2s_nhwc(x, out, b):
    n, h, w, c = x.shape
    v = x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
    np.copyto(out.reshape(v.shape), v)


def s2d_nchw(x, out, b):
    n, c, h, w = x.shape
    v = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    np.copyto(out.reshape(v.shape), v)


def s2d_nhwc(x, out, b):
    n, h, w, c = x.shape
    v = x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
    np.copyto(out.reshape(v.shape), v)


def s2b_nd(x, out, block, paddings):
    # Two passes: numpy has no padded transpose.
    p = np.pad(x, [(0, 0)] + [tuple(p) for p in paddings] + [(0, 0)])
    n, hp, wp, c = p.shape
    b0, b1 = block
    v = p.reshape(n, hp // b0, b0, wp // b1, b1, c).transpose(2, 4, 0, 1, 3, 5)
    np.copyto(out.reshape(v.shape), v)


def col2im_3x3(x, out, pad):
    # One strided add per kernel position into a padded image, then the crop.
    n, ckk, _ = x.shape
    c = ckk // 9
    _, _, h, w = out.shape
    cols = x.reshape(n, c, 3, 3, h, w)
    padded = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dtype=x.dtype)
    for ki in range(3):
        for kj in range(3):
            padded[:, :, ki:ki + h, kj:kj + w] += cols[:, :, ki, kj]
    np.copyto(out, padded[:, :, pad:pad + h, pad:pad + w])


# name, op, attrs, dtype, input shape, numpy formulation
CASES = [
    ("pixel_shuffle x4 (CRD)", "DepthToSpace",
     dict(block_size=4, data_format="NCHW", mode="CRD"), np.float32, (1, 48, 270, 480),
     lambda x, o: d2s_crd(x, o, 4)),
    ("DepthToSpace NHWC b2", "DepthToSpace", dict(block_size=2), np.float32, (8, 64, 64, 256),
     lambda x, o: d2s_nhwc(x, o, 2)),
    ("DepthToSpace NHWC f16", "DepthToSpace", dict(block_size=2), np.float16, (1, 540, 960, 12),
     lambda x, o: d2s_nhwc(x, o, 2)),
    ("SpaceToDepth YOLO focus", "SpaceToDepth", dict(block_size=2, data_format="NCHW"),
     np.float32, (8, 3, 640, 640), lambda x, o: s2d_nchw(x, o, 2)),
    ("SpaceToDepth NHWC b2", "SpaceToDepth", dict(block_size=2), np.float32, (8, 128, 128, 64),
     lambda x, o: s2d_nhwc(x, o, 2)),
    ("SpaceToBatchND DeepLab", "SpaceToBatchND",
     dict(block_shape=[2, 2], paddings=[[1, 2], [1, 2]]), np.float32, (4, 129, 129, 256),
     lambda x, o: s2b_nd(x, o, (2, 2), [[1, 2], [1, 2]])),
    ("Col2Im conv3x3", "Col2Im", dict(image_shape=[64, 64], block_shape=[3, 3], pads=[1, 1, 1, 1]),
     np.float32, (4, 576, 4096), lambda x, o: col2im_3x3(x, o, 1)),
    ("SpaceToDepth tiny", "SpaceToDepth", dict(block_size=2), np.float32, (1, 8, 8, 4),
     lambda x, o: s2d_nhwc(x, o, 2)),
]


def timed(f, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds per case instead of 15")
    parser.add_argument("--threads", type=int, default=1, help="threads for relayout")
    args = parser.parse_args()
    rounds = 3 if args.quick else 15
    rng = np.random.default_rng(0)

    print(f"relayout (threads={args.threads}) vs numpy, median of {rounds} interleaved rounds")
    print(f"{'case':<26}{'MB':>8}{'relayout':>12}{'numpy':>12}{'speedup':>9}")
    for name, op, attrs, dtype, shape, numpy_op in CASES:
        x = rng.standard_normal(shape).astype(dtype)
        if op == "Col2Im":
            x = rng.integers(-8, 8, size=shape).astype(dtype)  # exact sums in any order
        k = relayout.compile(op, shape=shape, dtype=dtype, **attrs)
        ours = np.empty(k.output_shape, dtype)
        theirs = np.empty(k.output_shape, dtype)
        k(x, out=ours, threads=args.threads)
        numpy_op(x, theirs)
        if not np.array_equal(ours, theirs):
            raise SystemExit(f"{name}: relayout and numpy disagree")
        # Tiny kernels are timed over many calls per round.
        calls = max(1, int(2e6 // max(x.nbytes, 1))) if x.nbytes < 1 << 20 else 1
        run_ours = lambda: k(x, out=ours, threads=args.threads)  # noqa: E731
        run_theirs = lambda: numpy_op(x, theirs)  # noqa: E731
        t_ours, t_theirs = [], []
        for _ in range(rounds):
            t_ours.append(timed(run_ours, calls))
            t_theirs.append(timed(run_theirs, calls))
        a, b = statistics.median(t_ours), statistics.median(t_theirs)
        unit, scale = ("us", 1e6) if b < 1e-3 else ("ms", 1e3)
        print(f"{name:<26}{x.nbytes / 1e6:>8.1f}{a * scale:>9.3f} {unit}{b * scale:>9.3f} {unit}"
              f"{b / a:>8.1f}x")


if __name__ == "__main__":
    main()

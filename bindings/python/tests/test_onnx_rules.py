"""The six ops around the seeds against a numpy oracle written from the conformance format's rules.

The oracle below is an independent reading of FORMAT.md (Pad's crops-first rule and mode limits,
the ONNX text's Slice clamping, Tile, Reshape's 0 and -1, Im2Col's block positions), in plain
numpy. Random attributes (valid and invalid, with empty dims, negative pads and the int64
extremes) on random shapes and dtypes: a valid op must give the oracle's bytes, an invalid one
an `OpError` with the rule's category.
"""

import itertools
import random

import numpy as np
import pytest

import relayout

CASES_PER_OP = 300


class Bad(Exception):
    def __init__(s, cat): s.cat = cat

def pad_ref(x, pads, mode, cv, axes):
    r = x.ndim
    if axes is None: axes = list(range(r))
    if len(pads) != 2*len(axes): raise Bad("bad_pads")
    ax = []
    for a in axes:
        if a < -r or a > r-1: raise Bad("bad_pads")
        a = a + r if a < 0 else a
        if a in ax: raise Bad("bad_pads")
        ax.append(a)
    b = [0]*r; e = [0]*r
    for i, a in enumerate(ax): b[a] = pads[i]; e[a] = pads[len(ax)+i]
    for i in range(r):
        if x.shape[i] + b[i] + e[i] < 0: raise Bad("bad_pads")
    if mode == "constant":
        out_shape = [x.shape[i]+b[i]+e[i] for i in range(r)]
        out = np.full(out_shape, cv, dtype=x.dtype)
        idx = np.indices(out_shape) if out.size else None
        if out.size:
            ok = np.ones(out_shape, bool); srcs = []
            for i in range(r):
                j = idx[i] - b[i]; ok &= (j >= 0) & (j < x.shape[i]); srcs.append(np.clip(j, 0, max(x.shape[i]-1, 0)))
            if x.size:
                out[ok] = x[tuple(s[ok] for s in srcs)]
        return out
    if mode == "wrap" and 0 in x.shape: raise Bad("bad_pads")
    # crops first
    sl = tuple(slice(max(-b[i], 0), x.shape[i]-max(-e[i], 0)) for i in range(r))
    y = x[sl]
    for i in range(r):
        c = y.shape[i]; pb = max(b[i], 0); pe = max(e[i], 0)
        if (b[i] != 0 or e[i] != 0) and c < 1: raise Bad("bad_pads")
        if mode == "reflect" and (pb > c-1 or pe > c-1) and (pb or pe): raise Bad("bad_pads")
        if mode == "wrap" and (pb > c or pe > c): raise Bad("bad_pads")
    out_shape = [y.shape[i] + max(b[i], 0) + max(e[i], 0) for i in range(r)]
    if 0 in out_shape: return np.zeros(out_shape, x.dtype)
    idx = np.indices(out_shape); srcs = []
    for i in range(r):
        c = y.shape[i]; j = idx[i] - max(b[i], 0)
        if mode == "edge": j = np.clip(j, 0, c-1)
        elif mode == "reflect":
            j = np.where(j < 0, -j, j); j = np.where(j > c-1, 2*(c-1)-j, j)
        elif mode == "wrap": j = np.mod(j, c)
        else: raise Bad("bad_mode")
        srcs.append(j)
    return y[tuple(srcs)]

def slice_ref(x, starts, ends, axes, steps):
    r = x.ndim
    if axes is None: axes = list(range(len(starts)))
    if steps is None: steps = [1]*len(starts)
    if not (len(starts) == len(ends) == len(axes) == len(steps)): raise Bad("bad_slice")
    ax = []
    for a in axes:
        if a < -r or a > r-1: raise Bad("bad_slice")
        a = a + r if a < 0 else a
        if a in ax: raise Bad("bad_slice")
        ax.append(a)
    if 0 in steps: raise Bad("bad_slice")
    idx = [np.arange(d) for d in x.shape]
    for a, s, e, k in zip(ax, starts, ends, steps):
        d = x.shape[a]
        if s < 0: s += d
        if e < 0: e += d
        if k > 0: s = min(max(s, 0), d); e = min(max(e, 0), d)
        else: s = min(max(s, 0), d-1); e = min(max(e, -1), d-1)
        vals = []
        i = s
        if k > 0:
            while i < e: vals.append(i); i += k
        else:
            while i > e: vals.append(i); i += k
        idx[a] = np.array(vals, dtype=np.int64)
    return x[np.ix_(*idx)] if r else x

def tile_ref(x, reps):
    if len(reps) != x.ndim or any(k < 0 for k in reps): raise Bad("bad_repeats")
    return np.tile(x, reps) if x.ndim else x.copy()

def reshape_ref(x, shape, allowzero):
    n = x.size; res = []
    if sum(1 for s in shape if s == -1) > 1 or any(s < -1 for s in shape): raise Bad("bad_shape")
    if allowzero and -1 in shape and 0 in shape: raise Bad("bad_shape")
    for i, s in enumerate(shape):
        if s == 0 and not allowzero:
            if i >= x.ndim: raise Bad("bad_shape")
            res.append(x.shape[i])
        else: res.append(s)
    if -1 in res:
        p = 1
        for s in res:
            if s != -1: p *= s
        if p == 0 or n % p: raise Bad("bad_shape")
        res[res.index(-1)] = n // p
    p = 1
    for s in res: p *= s
    if p != n: raise Bad("bad_shape")
    return x.reshape(res)

def transpose_ref(x, perm):
    if perm is None: perm = list(range(x.ndim))[::-1]
    if sorted(perm) != list(range(x.ndim)): raise Bad("bad_perm")
    return np.transpose(x, perm)

def im2col_ref(x, k, dil, pads, strides):
    if x.ndim < 3 or len(k) != x.ndim-2: raise Bad("bad_rank")
    n = x.ndim-2
    dil = dil or [1]*n; strides = strides or [1]*n; pads = pads or [0]*(2*n)
    if len(dil) != n or len(strides) != n or len(pads) != 2*n: raise Bad("bad_im2col_attrs")
    if any(v <= 0 for v in k+dil+strides) or any(p < 0 for p in pads): raise Bad("bad_im2col_attrs")
    S = x.shape[2:]; B = []
    for i in range(n):
        ext = dil[i]*(k[i]-1)+1; tot = S[i]+pads[i]+pads[n+i]
        if ext > tot: raise Bad("bad_im2col_attrs")
        B.append((tot-ext)//strides[i]+1)
    K = int(np.prod(k)); L = int(np.prod(B))
    N, C = x.shape[:2]
    out = np.zeros((N, C*K, L), x.dtype)
    for q in itertools.product(*[range(v) for v in k]):
        qi = int(np.ravel_multi_index(q, k)) if K else 0
        for l in itertools.product(*[range(v) for v in B]):
            li = int(np.ravel_multi_index(l, B)) if L else 0
            p = [l[i]*strides[i]-pads[i]+q[i]*dil[i] for i in range(n)]
            if all(0 <= p[i] < S[i] for i in range(n)):
                out[:, np.arange(C)*K+qi, li] = x[(slice(None), slice(None)) + tuple(p)]
    return out



def random_case(rng, op):
    """(x, attrs, expected array or error category) for one random case of `op`."""
    dt = rng.choice([np.float32, np.int8, np.float64, np.uint16])
    r = rng.randint(0 if op in ("Reshape", "Transpose", "Tile") else 1, 4)
    lo = 0 if rng.random() < 0.15 else 1
    shape = [rng.randint(lo, 4) for _ in range(r)]
    if op == "Im2Col":
        shape = [rng.randint(0, 2), rng.randint(1, 3)] + [rng.randint(1, 6) for _ in range(rng.randint(1, 2))]
    x = (np.arange(int(np.prod(shape)) if shape else 1) % 100 + 1).astype(dt).reshape(shape)
    attrs = {}
    if op == "Pad":
        axes = rng.sample(range(-r, r), rng.randint(1, r)) if rng.random() < 0.3 else None
        n = len(axes) if axes is not None else r
        pads = [rng.randint(-2, 3) for _ in range(2 * n)]
        mode = rng.choice(["constant", "reflect", "edge", "wrap"])
        cv = rng.choice([0, 1, 7]) if dt in (np.int8, np.uint16) else rng.choice([0.0, 1.5, -0.0])
        attrs = {"pads": pads, "mode": mode}
        if mode == "constant":
            attrs["constant_value"] = cv
        if axes is not None:
            attrs["axes"] = axes
        run = lambda: pad_ref(x, pads, mode, cv if mode == "constant" else 0, axes)
    elif op == "Slice":
        n = rng.randint(1, max(r, 1))
        axes = rng.sample(range(-r, r), n) if r and rng.random() < 0.6 else None
        big = [9223372036854775807, -9223372036854775808]
        pick = lambda: rng.choice([rng.randint(-7, 7), rng.choice(big)])
        starts = [pick() for _ in range(n)]
        ends = [pick() for _ in range(n)]
        steps = [rng.choice([1, 2, 3, -1, -2, -3]) for _ in range(n)] if rng.random() < 0.8 else None
        attrs = {"starts": starts, "ends": ends}
        if axes is not None:
            attrs["axes"] = axes
        if steps is not None:
            attrs["steps"] = steps
        run = lambda: slice_ref(x, starts, ends, axes, steps)
    elif op == "Tile":
        reps = [rng.randint(0, 3) for _ in range(r)]
        if rng.random() < 0.1:
            reps.append(1)
        attrs = {"repeats": reps}
        run = lambda: tile_ref(x, reps)
    elif op == "Reshape":
        n = x.size
        shape_attr = rng.choice([[n], [-1], [1, -1], [0, -1], [-1, 1, 1], list(reversed(shape)),
                                 shape + [1], [0] * r, [2, -1], [], [-1, -1], [0, 0, 0, 0, 0]])
        allowzero = rng.randint(0, 1)
        attrs = {"shape": shape_attr, "allowzero": allowzero}
        run = lambda: reshape_ref(x, shape_attr, allowzero)
    elif op == "Transpose":
        perm = list(range(r))
        rng.shuffle(perm)
        if rng.random() < 0.1 and r:
            perm[0] = perm[-1]
        if rng.random() < 0.2:
            perm = None
        if perm is not None:
            attrs = {"perm": perm}
        run = lambda: transpose_ref(x, perm)
    else:
        n = x.ndim - 2
        k = [rng.randint(1, 3) for _ in range(n)]
        dil = [rng.randint(1, 2) for _ in range(n)]
        pads = [rng.randint(0, 2) for _ in range(2 * n)]
        st = [rng.randint(1, 3) for _ in range(n)]
        attrs = {"block_shape": k, "dilations": dil, "pads": pads, "strides": st}
        run = lambda: im2col_ref(x, k, dil, pads, st)
    try:
        return x, attrs, run()
    except Bad as b:
        return x, attrs, b.cat


OPS = ["Pad", "Slice", "Tile", "Reshape", "Transpose", "Im2Col"]


@pytest.mark.parametrize("op", OPS)
def test_random_cases_agree_with_the_numpy_oracle(op):
    rng = random.Random(OPS.index(op) + 2026)
    errors = 0
    for _ in range(CASES_PER_OP):
        x, attrs, want = random_case(rng, op)
        what = f"{op} {attrs} on {x.dtype}{list(x.shape)}"
        if isinstance(want, str):
            errors += 1
            with pytest.raises(relayout.OpError) as info:
                relayout.apply(op, x, attrs=attrs)
            assert info.value.category == want, f"{what}: {info.value}"
            continue
        got = relayout.apply(op, x, attrs=attrs)
        assert got.shape == want.shape and got.dtype == want.dtype, what
        assert got.tobytes() == want.tobytes(), what
    # Both sides of every op's rules are exercised.
    assert 0 < errors < CASES_PER_OP, f"{op}: {errors} errors"


def test_im2col_feeds_a_chain():
    """PyTorch's unfold(x).transpose(1, 2) as one composed kernel: Im2Col, padded, dilated and
    strided, then a Transpose of the columns into rows."""
    x = (np.arange(2 * 3 * 5 * 6) % 97 + 1).astype(np.float32).reshape(2, 3, 5, 6)
    im2col = {"block_shape": [2, 3], "dilations": [1, 2], "pads": [1, 0, 0, 2], "strides": [1, 2]}
    chain = relayout.compile_chain([("Im2Col", im2col), ("Transpose", {"perm": [0, 2, 1]})],
                                   shape=x.shape, dtype=np.float32)
    want = im2col_ref(x, [2, 3], [1, 2], [1, 0, 0, 2], [1, 2]).transpose(0, 2, 1)
    assert chain.output_shape == want.shape
    np.testing.assert_array_equal(chain(x), want)
    np.testing.assert_array_equal(chain(x, threads=2), want)

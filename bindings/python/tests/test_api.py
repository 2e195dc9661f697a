"""The Python API against numpy formulations of the ops, and its error paths."""

import doctest
import sys
import threading
import time

import numpy as np
import pytest

import relayout
from conftest import assert_same, ml_dtypes

DTYPES = [
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128,
]
if ml_dtypes is not None:
    DTYPES.append(ml_dtypes.bfloat16)


def random_array(rng, shape, dtype):
    """Random values of any dtype: random bytes (NaNs included), or 0/1 for bool."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    n = int(np.prod(shape)) * dtype.itemsize
    return np.frombuffer(rng.bytes(n), dtype=dtype).reshape(shape).copy()


# numpy formulations (reshape and transpose) of the ops, from their documentation.

def space_to_depth(x, b, data_format="NHWC"):
    if data_format == "NHWC":
        n, h, w, c = x.shape
        return (x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5)
                .reshape(n, h // b, w // b, b * b * c))
    n, c, h, w = x.shape
    return (x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
            .reshape(n, b * b * c, h // b, w // b))


def depth_to_space(x, b, data_format="NHWC", mode="DCR"):
    if data_format == "NHWC":
        n, h, w, c = x.shape
        return (x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5)
                .reshape(n, h * b, w * b, c // (b * b)))
    n, c, h, w = x.shape
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:  # CRD: PyTorch's pixel_shuffle
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def space_to_batch_nd(x, block, paddings):
    n, h, w, c = x.shape
    (b0, b1), ((t, bo), (le, r)) = block, paddings
    p = np.zeros((n, h + t + bo, w + le + r, c), dtype=x.dtype)
    p[:, t:t + h, le:le + w] = x
    hp, wp = p.shape[1:3]
    return (p.reshape(n, hp // b0, b0, wp // b1, b1, c).transpose(2, 4, 0, 1, 3, 5)
            .reshape(b0 * b1 * n, hp // b0, wp // b1, c))


def batch_to_space_nd(x, block, crops):
    nb, h, w, c = x.shape
    (b0, b1), ((t, bo), (le, r)) = block, crops
    n = nb // (b0 * b1)
    y = (x.reshape(b0, b1, n, h, w, c).transpose(2, 3, 0, 4, 1, 5)
         .reshape(n, h * b0, w * b1, c))
    return y[:, t:h * b0 - bo, le:w * b1 - r]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_depth_space_against_numpy(dtype):
    rng = np.random.default_rng(1)
    for b in (2, 3):
        for fmt in ("NHWC", "NCHW"):
            shape = (2, 3 * b, 2 * b, 5) if fmt == "NHWC" else (2, 5, 3 * b, 2 * b)
            x = random_array(rng, shape, dtype)
            y = relayout.apply("SpaceToDepth", x, block_size=b, data_format=fmt)
            assert_same(y, space_to_depth(x, b, fmt))
            modes = ("DCR", "CRD") if fmt == "NCHW" else ("DCR",)
            for mode in modes:
                z = relayout.apply("DepthToSpace", y, block_size=b, data_format=fmt, mode=mode)
                assert_same(z, depth_to_space(y, b, fmt, mode))
                if mode == "DCR":
                    assert_same(z, x)  # DCR undoes SpaceToDepth


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128], ids=str)
def test_batch_ops_against_numpy(dtype):
    rng = np.random.default_rng(2)
    x = random_array(rng, (2, 5, 7, 3), dtype)
    block, pads = (2, 3), ((1, 0), (0, 2))
    y = relayout.apply("SpaceToBatchND", x, block_shape=list(block), paddings=pads)
    assert_same(y, space_to_batch_nd(x, block, pads))
    z = relayout.apply("BatchToSpaceND", y, block_shape=block, crops=pads)
    assert_same(z, batch_to_space_nd(y, block, pads))
    assert_same(z, x)


def test_compile_forms_agree():
    text = 'DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x8x4x4xf32>'
    k1 = relayout.compile(text)
    k2 = relayout.compile("DepthToSpace", shape=(1, 8, 4, 4), dtype=np.float32,
                          block_size=2, data_format="NCHW", mode="CRD")
    k3 = relayout.compile('DepthToSpace {block_size = 2, mode = "CRD"}', shape=[1, 8, 4, 4],
                          dtype="float32", data_format="NCHW")
    k4 = relayout.compile("DepthToSpace", shape=(1, 8, 4, 4), dtype="f32", block_size=np.int64(2),
                          data_format="NCHW", mode="CRD")
    assert repr(k1) == repr(k2) == repr(k3) == repr(k4)
    assert k1.op == text
    assert k1.input_shape == (1, 8, 4, 4) and k1.output_shape == (1, 2, 8, 8)
    assert k1.dtype == np.dtype(np.float32)
    assert k1.movement.startswith("permutation: input.reshape(")
    assert k1.movement_kind == "permutation"
    assert relayout.compile("SpaceToDepth {block_size = 2} : tensor<1x2x2x4xf32>").movement_kind == "view"
    assert relayout.compile("SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>").movement_kind == "permutation"
    padded = relayout.compile("SpaceToBatchND {block_shape = [2], paddings = [[1, 1]]} : tensor<1x4x3xf32>")
    assert padded.movement_kind == "gather" and padded.movement.startswith("gather: ")
    steps = relayout.compile("Slice {starts = [0, 0], ends = [8, 8], steps = [2, 2]} : tensor<8x8xf32>")
    assert steps.movement_kind == "strided view"
    assert steps.movement == "strided view: as_strided(input, offset=0, shape=(4, 4), strides=(16, 2)) (in elements)"
    assert k1.bytes_moved == 2 * 128 * 4
    x = np.arange(128, dtype=np.float32).reshape(1, 8, 4, 4)
    for k in (k1, k2, k3, k4):
        assert_same(k(x), depth_to_space(x, 2, "NCHW", "CRD"))


def test_out_and_threads():
    rng = np.random.default_rng(3)
    x = random_array(rng, (4, 64, 64, 16), np.float32)
    k = relayout.compile("SpaceToDepth", shape=x.shape, dtype=x.dtype, block_size=4)
    expected = space_to_depth(x, 4)
    for threads in (1, 2, 3, 7):
        out = np.full(k.output_shape, np.nan, dtype=np.float32)
        assert k(x, out=out, threads=threads) is out
        assert_same(out, expected)
        assert_same(k(x, threads=threads), expected)
    assert_same(relayout.apply("SpaceToDepth", x, block_size=4, threads=2), expected)
    out = np.zeros_like(expected)
    assert relayout.apply("SpaceToDepth", x, out=out, block_size=4) is out
    assert_same(out, expected)


def test_array_likes():
    # A list becomes an array of its own dtype (int64 here), not of the kernel's.
    x = [[[[1], [2]], [[3], [4]]]]
    assert relayout.apply("SpaceToDepth", x, block_size=2).tolist() == [[[[1, 2, 3, 4]]]]
    k = relayout.compile("SpaceToDepth", shape=(1, 2, 2, 1), dtype=np.float32, block_size=2)
    with pytest.raises(TypeError, match="expected dtype float32, got int64"):
        k(x)
    # DLPack: np.from_dlpack views the producer's memory.
    d = np.from_dlpack(np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1))
    assert k(d).tolist() == [[[[0.0, 1.0, 2.0, 3.0]]]]


def test_dlpack_torch():
    torch = pytest.importorskip("torch")
    t = torch.arange(16, dtype=torch.float32).reshape(1, 4, 4, 1)
    y = relayout.apply("SpaceToDepth", np.from_dlpack(t), block_size=2)
    assert_same(y, space_to_depth(t.numpy(), 2))


def test_input_errors():
    k = relayout.compile("SpaceToDepth", shape=(1, 4, 4, 2), dtype=np.float32, block_size=2)
    x = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(TypeError, match=r"input: expected dtype float32, got float64"):
        k(x.astype(np.float64))
    with pytest.raises(ValueError, match=r"input: expected shape \(1, 4, 4, 2\), got \(1, 4, 2, 4\)"):
        k(x.reshape(1, 4, 2, 4))
    with pytest.raises(ValueError, match="C-contiguous"):
        k(np.zeros((1, 4, 4, 4), np.float32)[..., ::2])
    with pytest.raises(ValueError, match="C-contiguous"):
        k(np.asfortranarray(np.zeros((2, 4, 4, 2), np.float32))[:1])
    with pytest.raises(ValueError, match="threads must be at least 1, got 0"):
        k(x, threads=0)
    with pytest.raises(ValueError, match="threads must be at least 1, got -1"):
        k(x, threads=-1)
    with pytest.raises(TypeError, match="no element type for dtype object"):
        relayout.apply("SpaceToDepth", np.zeros((1, 2, 2, 1), dtype=object), block_size=2)
    with pytest.raises(TypeError, match="byte order"):
        relayout.apply("SpaceToDepth", np.zeros((1, 2, 2, 1), dtype=">f4"), block_size=2)


def test_out_errors():
    k = relayout.compile("SpaceToDepth", shape=(1, 4, 4, 2), dtype=np.float32, block_size=2)
    x = np.zeros((1, 4, 4, 2), np.float32)
    with pytest.raises(TypeError, match=r"out: expected dtype float32, got int32"):
        k(x, out=np.zeros((1, 2, 2, 8), np.int32))
    with pytest.raises(ValueError, match=r"out: expected shape \(1, 2, 2, 8\), got \(1, 2, 2, 4\)"):
        k(x, out=np.zeros((1, 2, 2, 4), np.float32))
    with pytest.raises(ValueError, match="out: expected a C-contiguous array"):
        k(x, out=np.zeros((1, 2, 2, 16), np.float32)[..., ::2])
    ro = np.zeros((1, 2, 2, 8), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        k(x, out=ro)
    with pytest.raises(TypeError, match="out: expected a numpy array, got list"):
        k(x, out=[0.0] * 32)
    # The same bytes as input and output.
    with pytest.raises(ValueError, match="shares memory"):
        k(x, out=x.reshape(1, 2, 2, 8))


def test_op_errors():
    with pytest.raises(relayout.OpError) as e:
        relayout.compile("SpaceToDepth", shape=(1, 5, 4, 1), dtype=np.float32, block_size=2)
    assert e.value.category == "not_divisible" and "5" in str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(relayout.OpError) as e:
        relayout.compile("SpaceToDepthh : tensor<1x4x4x1xf32>")
    assert e.value.category == "unknown_op"
    with pytest.raises(relayout.OpError) as e:
        relayout.compile('DepthToSpace {block_size = 2, mode = "CRD"} : tensor<1x8x3x3xf32>')
    assert e.value.category == "bad_mode"
    assert relayout.OpError("raised by hand").category is None
    with pytest.raises(ValueError, match="op syntax: column"):
        relayout.compile("SpaceToDepth {block_size 2} : tensor<1x4x4x1xf32>")
    with pytest.raises(ValueError, match="give the input type"):
        relayout.compile("SpaceToDepth", block_size=2)
    with pytest.raises(ValueError, match="go together"):
        relayout.compile("SpaceToDepth", shape=(1, 4, 4, 1), block_size=2)
    with pytest.raises(ValueError, match="one way only"):
        relayout.compile("SpaceToDepth : tensor<1x4x4x1xf32>", shape=(1, 4, 4, 1), dtype="f32")
    with pytest.raises(ValueError, match="given both"):
        relayout.compile("SpaceToDepth {block_size = 2}", shape=(1, 4, 4, 1), dtype="f32", block_size=2)
    # A float is an attribute value (Pad's constant_value), but not a block size.
    with pytest.raises(relayout.OpError, match="block_size") as e:
        relayout.compile("SpaceToDepth", shape=(1, 4, 4, 1), dtype="f32", block_size=2.0)
    assert e.value.category == "bad_attribute"
    with pytest.raises(TypeError, match="attribute block_size"):
        relayout.compile("SpaceToDepth", shape=(1, 4, 4, 1), dtype="f32", block_size=object())
    with pytest.raises(TypeError, match="shape"):
        relayout.compile("SpaceToDepth", shape=(1, -4, 4, 1), dtype="f32", block_size=2)
    with pytest.raises(TypeError, match="dtype"):
        relayout.compile("SpaceToDepth", shape=(1, 4, 4, 1), dtype="float99", block_size=2)


def test_chain():
    f = relayout.compile_chain([("DepthToSpace", {"block_size": 2}), ("SpaceToDepth", {"block_size": 2})],
                               shape=(1, 4, 4, 8), dtype=np.float32)
    assert "view" in f.movement and f.output_shape == (1, 4, 4, 8)
    x = np.arange(128, dtype=np.float32).reshape(1, 4, 4, 8)
    assert_same(f(x), x)
    g = relayout.compile_chain(['SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 1], [1, 1]]}',
                                ("SpaceToDepth", {"block_size": 2})], shape=(1, 6, 6, 1), dtype=np.uint8)
    assert g.output_shape == (4, 2, 2, 4)
    x = np.arange(1, 37, dtype=np.uint8).reshape(1, 6, 6, 1)
    expected = space_to_depth(space_to_batch_nd(x, (2, 2), ((1, 1), (1, 1))), 2)
    assert_same(g(x, threads=2), expected)
    assert g.op.startswith("SpaceToBatchND {block_shape = [2, 2]")
    with pytest.raises(relayout.OpError) as e:
        relayout.compile_chain([("SpaceToDepth", {"block_size": 3})], shape=(1, 4, 4, 1), dtype="f32")
    assert e.value.category == "not_divisible" and "op 0" in str(e.value)
    with pytest.raises(ValueError, match="empty"):
        relayout.compile_chain([], shape=(1, 4, 4, 1), dtype="f32")
    with pytest.raises(ValueError, match="cannot be composed"):
        relayout.compile_chain([("Col2Im", {"image_shape": [2, 2], "block_shape": [1, 1]})],
                               shape=(1, 1, 4), dtype="f32")
    with pytest.raises(TypeError, match=r"ops\[0\]"):
        relayout.compile_chain([3], shape=(1, 4, 4, 1), dtype="f32")
    # Three reflect Pads of four dims compose into too many statements: the message says
    # where the chain splits into two that compose.
    reflect = 'Pad {pads = [1, 1, 1, 1, 1, 1, 1, 1], mode = "reflect"}'
    with pytest.raises(relayout.ChainTooLarge, match=r"more than \d+: .* \(ops\[\.\.1\] and ops\[1\.\.\]\)") as e:
        relayout.compile_chain([reflect] * 3, shape=(3, 4, 5, 6), dtype="f32")
    assert isinstance(e.value, ValueError) and 1 <= e.value.index < 3
    assert e.value.statements > e.value.limit > 0
    # The parts compose, and run one after the other they give the three Pads' result.
    x = np.random.default_rng(3).standard_normal((3, 4, 5, 6)).astype(np.float32)
    front = relayout.compile_chain([reflect] * e.value.index, shape=x.shape, dtype=x.dtype)
    mid = front(x)
    rest = [reflect] * (3 - e.value.index)
    try:
        y = relayout.compile_chain(rest, shape=mid.shape, dtype=mid.dtype)(mid)
    except relayout.ChainTooLarge:
        y = mid
        for op in rest:
            y = relayout.compile_chain([op], shape=y.shape, dtype=y.dtype)(y)
    want = x
    for _ in range(3):
        want = np.pad(want, 1, mode="reflect")
    assert_same(y, want)


def test_ir_stages():
    k = relayout.compile("SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>")
    assert "floordiv" in k.ir("lowered")
    assert "floordiv" not in k.ir("optimized")
    assert k.ir("loops").startswith("loops @space_to_depth")
    assert "function %space_to_depth(" in k.ir("clif")
    assert "ret" in k.ir("vcode")
    try:
        assert "ret" in k.ir("asm")
    except RuntimeError as e:
        assert "disas" in str(e)
    with pytest.raises(ValueError, match="lowered, optimized"):
        k.ir("machine")
    assert relayout.STAGES == ("lowered", "optimized", "loops", "clif", "vcode", "asm")


def test_every_dtype_name():
    for name in relayout.DTYPES:
        if name == "bfloat16" and ml_dtypes is None:
            with pytest.raises(TypeError, match="ml_dtypes"):
                relayout.compile("SpaceToDepth", shape=(1, 2, 2, 1), dtype=name, block_size=2)
            continue
        k = relayout.compile("SpaceToDepth", shape=(1, 2, 2, 1), dtype=name, block_size=2)
        assert k.dtype.name == name
        assert k(np.zeros((1, 2, 2, 1), dtype=k.dtype)).dtype == k.dtype


def test_empty_tensor():
    x = np.zeros((0, 4, 4, 3), np.float32)
    y = relayout.apply("SpaceToDepth", x, block_size=2)
    assert y.shape == (0, 2, 2, 12)


def test_four_threads_share_a_kernel():
    k = relayout.compile("DepthToSpace", shape=(2, 16, 32, 32), dtype=np.float32,
                         block_size=2, data_format="NCHW", mode="CRD")
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for i in range(40):
                x = random_array(rng, k.input_shape, np.float32)
                assert_same(k(x, threads=1 + i % 2), depth_to_space(x, 2, "NCHW", "CRD"))
        except Exception as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_gil_is_released():
    """Another Python thread makes progress while one large kernel runs."""
    k = relayout.compile("SpaceToDepth", shape=(8, 1024, 1024, 4), dtype=np.float32, block_size=2)
    x = np.ones(k.input_shape, np.float32)  # 128 MiB
    out = np.zeros(k.output_shape, np.float32)
    k(x, out=out)  # the output's pages are mapped before the timed run
    span = []

    def run():
        t0 = time.perf_counter()
        k(x, out=out)
        span.extend([t0, time.perf_counter()])

    ticks = []
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        worker = threading.Thread(target=run)
        worker.start()
        while worker.is_alive():
            ticks.append(time.perf_counter())
        worker.join()
    finally:
        sys.setswitchinterval(old)
    t0, t1 = span
    third = (t1 - t0) / 3
    # With the GIL held, this thread could only run before the kernel started (a switch
    # interval at most), never in the middle third of the run.
    middle = [t for t in ticks if t0 + third < t < t1 - third]
    assert t1 - t0 > 0.005, f"the kernel ran too briefly ({t1 - t0:.4f} s) to tell"
    assert len(middle) > 10, f"{len(middle)} ticks during the middle of a {t1 - t0:.3f} s run"


def test_docstring_examples():
    import relayout._relayout as native

    for module in (relayout, native):
        failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert failed == 0
    assert relayout.compile.__doc__ and "Example" in relayout.compile.__doc__
    for name in ("apply", "compile_chain", "Kernel", "OpError", "ChainTooLarge", "op_names"):
        assert getattr(relayout, name).__doc__, name
    for name in ("input_shape", "output_shape", "dtype", "movement", "movement_kind", "bytes_moved", "op", "ir",
                 "explain_svg"):
        assert getattr(relayout.Kernel, name).__doc__, name


def test_stubs_match_the_module():
    """The .pyi stub declares exactly the public names, and the Kernel members, of the module."""
    import ast
    import pathlib

    stub = pathlib.Path(relayout.__file__).with_name("__init__.pyi")
    if not stub.exists():
        pytest.skip("the stub is not installed next to the package")
    tree = ast.parse(stub.read_text())
    names = set()
    kernel_members = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        if isinstance(node, ast.ClassDef) and node.name == "Kernel":
            kernel_members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    assert names == set(relayout.__all__)
    public = {n for n in dir(relayout.Kernel) if not n.startswith("_")} | {"__call__", "_repr_svg_"}
    assert kernel_members == public


def test_explain_svg():
    k = relayout.compile('DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x8x2x2xf32>')
    svg = k.explain_svg()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert k._repr_svg_() == svg
    # Output element 1 of pixel_shuffle comes from input element 4 (channel 1, pixel 0).
    assert svg.count("<rect x=") == 2 * 32
    pad = relayout.compile("SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 0], [0, 1]]} : tensor<1x3x3x1xu8>")
    assert pad.explain_svg().count(">pad</text>") == 7
    col2im = relayout.compile("Col2Im {image_shape = [3, 3], block_shape = [2, 2]} : tensor<1x4x4xf32>")
    assert ">4</text>" in col2im.explain_svg()
    chain = relayout.compile_chain(["DepthToSpace {block_size = 2}", "SpaceToDepth {block_size = 2}"],
                                   shape=(1, 2, 2, 4), dtype="f32")
    assert "DepthToSpace then SpaceToDepth" in chain.explain_svg()
    big = relayout.compile("SpaceToDepth", shape=(1, 64, 64, 4), dtype=np.float32, block_size=2)
    with pytest.raises(ValueError, match="too many to draw"):
        big.explain_svg()
    assert big._repr_svg_() is None


@pytest.mark.parametrize("shape", [(2, 8, 8, 4), (4, 128, 256, 16)], ids=["small", "16MiB"])
def test_unaligned_buffers(shape):
    """Arrays need not be aligned to their element size (numpy allows it; so does relayout),
    also for outputs large enough for streaming stores."""
    rng = np.random.default_rng(4)
    x0 = random_array(rng, shape, np.float64)
    expected = space_to_depth(x0, 2)
    raw_in, raw_out = bytearray(x0.nbytes + 3), bytearray(x0.nbytes + 5)
    x = np.frombuffer(raw_in, dtype=np.float64, count=x0.size, offset=3).reshape(x0.shape)
    x[...] = x0
    out = np.frombuffer(raw_out, dtype=np.float64, count=x0.size, offset=5).reshape(expected.shape)
    assert not x.flags.aligned and not out.flags.aligned
    k = relayout.compile("SpaceToDepth", shape=x.shape, dtype=x.dtype, block_size=2)
    for threads in (1, 2):
        out[...] = 0
        k(x, out=out, threads=threads)
        assert_same(out, expected)

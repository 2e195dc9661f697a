"""Shared helpers: where the repository's conformance cases are, and how to read their tensors."""

import json
import math
import pathlib

import numpy as np
import pytest

try:
    import ml_dtypes
except ImportError:  # bfloat16 cases are skipped without it
    ml_dtypes = None

# bindings/python/tests -> the repository root.
REPO = pathlib.Path(__file__).resolve().parents[3]
CONFORMANCE = REPO / "tests" / "conformance"


def conformance_files():
    return sorted(CONFORMANCE.glob("*/*.json"))


def np_dtype(name):
    """The numpy dtype of a conformance dtype name, or None (bfloat16 without ml_dtypes)."""
    if name == "bfloat16":
        return None if ml_dtypes is None else np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _float(v):
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]
    return float(v)


def tensor(t):
    """A conformance tensor as a numpy array (None when its dtype is unavailable)."""
    dtype = np_dtype(t["dtype"])
    if dtype is None:
        return None
    data = t["data"]
    if dtype.kind == "c":
        values = [complex(_float(re), _float(im)) for re, im in data]
    elif dtype.kind == "f" or t["dtype"] == "bfloat16":
        values = [_float(v) for v in data]
    else:
        values = data
    return np.array(values, dtype=dtype).reshape(t["shape"])


def load_case(path):
    with open(path) as f:
        return json.load(f)


def assert_same(got, expected, tolerance=None):
    """Exact equality as the format defines it (NaN matches NaN, -0.0 differs from 0.0), or
    |got - exp| <= atol + rtol * |exp| element-wise with a tolerance."""
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if tolerance is not None:
        g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
        e = expected.astype(g.dtype)
        nan = np.isnan(e)
        assert np.array_equal(np.isnan(g), nan)
        ok = np.abs(g - e) <= tolerance["atol"] + tolerance["rtol"] * np.abs(e)
        assert np.all(ok | nan), f"{np.count_nonzero(~(ok | nan))} elements out of tolerance"
        return
    # Compare bits, except that any NaN matches any NaN.
    g, e = _parts(got), _parts(expected)
    if g.dtype.kind in "fV":
        nan_g = np.isnan(g.astype(np.float32) if g.dtype.kind == "V" else g)
        nan_e = np.isnan(e.astype(np.float32) if e.dtype.kind == "V" else e)
        assert np.array_equal(nan_g, nan_e)
        bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[g.dtype.itemsize]
        assert np.array_equal(g.view(bits)[~nan_g], e.view(bits)[~nan_e])
    else:
        assert np.array_equal(g, e)


def _parts(a):
    """Complex arrays as arrays of their float parts (each part compares on its own)."""
    if a.dtype.kind == "c":
        return a.view(np.float32 if a.dtype == np.complex64 else np.float64)
    return a


@pytest.fixture(scope="session")
def cases():
    files = conformance_files()
    if not files:
        pytest.skip(f"no conformance cases under {CONFORMANCE} (not run from a checkout)")
    return files


def pytest_terminal_summary(terminalreporter):
    """One line on the conformance cases: how many ran, how many were skipped and why."""
    import test_conformance as tc  # noqa: the module's own record of what it skipped

    ran = len(tc.RAN)
    if ran or tc.SKIPPED_UNKNOWN or tc.SKIPPED_BF16:
        terminalreporter.write_line(
            f"conformance through Python: {ran} cases run, {len(tc.SKIPPED_UNKNOWN)} skipped "
            f"(op unknown to this build: {', '.join(sorted({n.split('/')[0] for n in tc.SKIPPED_UNKNOWN})) or 'none'}), "
            f"{len(tc.SKIPPED_BF16)} skipped (bfloat16 without ml_dtypes)"
        )

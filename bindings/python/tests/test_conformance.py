"""Every public conformance case through the Python API.

Valid cases run through `relayout.apply` and through a compiled kernel with `out=` (an output
full of garbage first) on 2 threads; invalid ones must raise `relayout.OpError` with the case's
category. A case whose op this build does not know (`unknown_op`) is skipped and counted.
"""

import numpy as np
import pytest

import relayout
from conftest import assert_same, conformance_files, load_case, tensor

FILES = conformance_files()
RAN = []
SKIPPED_UNKNOWN = []  # "Op/case" of each case whose op this build does not know
SKIPPED_BF16 = []


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_case(path):
    case = load_case(path)
    x = tensor(case["input"])
    if x is None:
        SKIPPED_BF16.append(path.stem)
        pytest.skip("bfloat16 needs ml_dtypes")
    op, attrs = case["op"], case["attrs"]
    if "error" in case:
        with pytest.raises(relayout.OpError) as info:
            relayout.apply(op, x, attrs=attrs)
        if info.value.category == "unknown_op" and case["error"] != "unknown_op":
            SKIPPED_UNKNOWN.append(f"{op}/{path.stem}")
            pytest.skip(f"op {op} is not known to this build")
        assert info.value.category == case["error"], str(info.value)
        RAN.append(path.stem)
        return
    try:
        got = relayout.apply(op, x, attrs=attrs)
    except relayout.OpError as e:
        if e.category == "unknown_op":
            SKIPPED_UNKNOWN.append(f"{op}/{path.stem}")
            pytest.skip(f"op {op} is not known to this build")
        raise
    expected = tensor(case["output"])
    tolerance = case.get("tolerance")
    assert_same(got, expected, tolerance)

    # The same through a compiled kernel, into an output that starts as garbage, on 2 threads.
    k = relayout.compile(op, shape=x.shape, dtype=x.dtype, attrs=attrs)
    assert k.input_shape == x.shape and k.output_shape == expected.shape
    assert k.dtype == x.dtype
    out = np.empty_like(expected)
    out.reshape(-1).view(np.uint8)[:] = 0xA5  # reshape first: a 0-d array has no byte view
    assert k(x, out=out, threads=2) is out
    assert_same(out, expected, tolerance)
    RAN.append(path.stem)


def test_known_ops_have_cases():
    """Every op of this build has conformance cases, and they were not all skipped."""
    if not FILES:
        pytest.skip("not run from a checkout: no conformance cases")
    ops = {p.parent.name for p in FILES}
    for name in relayout.op_names():
        assert name in ops, f"no conformance case for {name}"

"""relayout: tensor relayout ops compiled to machine code for numpy arrays.

relayout compiles TensorFlow's and ONNX's relayout ops (SpaceToDepth, DepthToSpace,
SpaceToBatchND, BatchToSpaceND, SpaceToBatch, BatchToSpace, Col2Im) into machine code
specialised for one input shape and dtype, and runs it on numpy arrays without copying them.

    >>> import numpy as np, relayout
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    >>> k = relayout.compile("SpaceToDepth", shape=x.shape, dtype=x.dtype, block_size=2)
    >>> y = k(x)                      # a new (1, 2, 2, 4) array
    >>> k(x, out=y) is y              # into an existing array
    True
    >>> relayout.apply("SpaceToDepth", x, block_size=2).shape   # compile (cached) and run
    (1, 2, 2, 4)

See :func:`compile`, :func:`apply`, :func:`compile_chain` and :class:`Kernel`.
"""

from ._relayout import (
    DTYPES,
    STAGES,
    ChainTooLarge,
    Kernel,
    OpError,
    apply,
    compile,
    compile_chain,
    op_names,
)

__all__ = [
    "DTYPES",
    "STAGES",
    "ChainTooLarge",
    "Kernel",
    "OpError",
    "apply",
    "compile",
    "compile_chain",
    "op_names",
]

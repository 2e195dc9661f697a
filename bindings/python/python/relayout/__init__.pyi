"""Type stubs of relayout: tensor relayout ops compiled to machine code for numpy arrays."""

from typing import Any, Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

# An attribute value: an int, a str, or a (nested) list or tuple of them.
AttrValue = Union[int, float, bool, str, Sequence[Any]]
# One op of a chain: a name, "Name {attrs}", or a (name, attributes) pair.
ChainOp = Union[str, Tuple[str, Mapping[str, AttrValue]]]

DTYPES: Tuple[str, ...]
"""The element types relayout compiles for (the conformance format's names)."""

STAGES: Tuple[str, ...]
"""The stage names `Kernel.ir` takes."""

class OpError(ValueError):
    """An invalid op description; `category` is the rule broken (`not_divisible`, ...)."""

    category: Optional[str]

class ChainTooLarge(ValueError):
    """A chain whose composed kernel would have too many statements: `ops[:index]` and
    `ops[index:]` compose (each may split again); `statements` is how many the kernel would
    have, `limit` the limit they pass."""

    index: int
    statements: int
    limit: int

class Kernel:
    """An op (or composed chain) compiled to machine code for one input shape and dtype."""

    def __call__(
        self,
        x: npt.ArrayLike,
        /,
        out: Optional[np.ndarray] = None,
        *,
        threads: int = 1,
    ) -> np.ndarray:
        """Runs the kernel on `x`: a new array, or `out` (C-contiguous, writable, exact
        shape and dtype) when given; `threads` splits the run over that many threads."""
    @property
    def input_shape(self) -> Tuple[int, ...]:
        """The input shape this kernel was compiled for."""
    @property
    def output_shape(self) -> Tuple[int, ...]:
        """The output shape."""
    @property
    def dtype(self) -> np.dtype:
        """The element type of input and output."""
    @property
    def movement(self) -> str:
        """What the kernel does with the bytes, in words ("permutation: input.reshape(...)...")."""
    @property
    def movement_kind(self) -> str:
        """"view", "contiguous copy", "permutation", "strided view" or "gather"."""
    @property
    def bytes_moved(self) -> int:
        """The bytes one run reads and writes."""
    @property
    def op(self) -> str:
        """The op in the op syntax, with its input type."""
    def ir(self, stage: str) -> str:
        """The text of one stage: lowered, optimized, loops, clif, vcode or asm."""
    def explain_svg(self) -> str:
        """An SVG picture of where each output element comes from (small shapes only)."""
    def _repr_svg_(self) -> Optional[str]:
        """The picture of `explain_svg` for Jupyter, or None for shapes too large to draw."""

def compile(
    op: str,
    /,
    shape: Optional[Union[int, Sequence[int]]] = None,
    dtype: Optional[npt.DTypeLike] = None,
    *,
    attrs: Optional[dict[str, AttrValue]] = None,
    **kwargs: AttrValue,
) -> Kernel:
    """Compiles an op for one input shape and dtype (cached)."""

def apply(
    op: str,
    x: npt.ArrayLike,
    /,
    *,
    out: Optional[np.ndarray] = None,
    threads: int = 1,
    attrs: Optional[dict[str, AttrValue]] = None,
    **kwargs: AttrValue,
) -> np.ndarray:
    """Compiles `op` (cached) for the shape and dtype of `x` and runs it."""

def compile_chain(
    ops: Iterable[ChainOp],
    /,
    shape: Union[int, Sequence[int]],
    dtype: npt.DTypeLike,
) -> Kernel:
    """Composes ops applied one after another into one kernel and compiles it.

    Raises OpError for an op invalid for the type the chain gives it, ChainTooLarge (a
    ValueError) for a chain whose composed kernel would be too large (its `index` is where
    to split it into two chains), and ValueError for an empty chain or an op that cannot be
    composed (Col2Im)."""

def op_names() -> list[str]:
    """The op names relayout knows."""

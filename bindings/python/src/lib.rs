//! The Python extension module `relayout._relayout`: relayout's compiler on numpy arrays.
//!
//! A [`Kernel`] is one compiled op (or composed chain) for one input shape and dtype. Calling it
//! checks the arrays (dtype, shape, C order, writability, no overlap), then runs the machine
//! code directly on their buffers with the GIL released: no copy on the way in or out.
//!
//! Everything that is not about arrays (op syntax, attribute defaults, validation, the kernel
//! cache) is the `relayout` facade crate's; this file only translates between Python objects
//! and its types. All `unsafe` is in [`ArrayRef`] and [`new_array`].

use numpy::npyffi::{npy_intp, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use relayout::ir::{DType, TensorType};
use relayout::{AttrValue, Attrs, CompiledChain, CompiledOp, Movement, Op, Stages};

/// Compiles allocate and free thousands of small IR nodes; see Cargo.toml.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

pyo3::create_exception!(
    relayout,
    OpError,
    PyValueError,
    "An invalid op description: the op refuses this input type or these attributes.\n\n\
     `category` is the conformance format's category string (`not_divisible`, `bad_rank`, \
     `unknown_op`, ...), `str(e)` names the rule and the values that break it."
);

pyo3::create_exception!(
    relayout,
    ChainTooLarge,
    PyValueError,
    "A chain whose composed kernel would have too many statements (piecewise Pads multiply \
     the pieces of what they read).\n\n\
     `index` is the op where the chain splits into two that compose (`ops[:index]` and \
     `ops[index:]`, each of which may split again), `statements` how many the kernel would \
     have, `limit` the limit they pass."
);

/// The `ChainTooLarge` error for a chain refused as too large, with its attributes.
fn chain_too_large(
    py: Python<'_>,
    message: String,
    index: usize,
    statements: usize,
    limit: usize,
) -> PyErr {
    let err = ChainTooLarge::new_err(message);
    let value = err.value(py);
    let set = value
        .setattr("index", index)
        .and_then(|()| value.setattr("statements", statements))
        .and_then(|()| value.setattr("limit", limit));
    match set {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// The `OpError` for an error of the facade with a category, a `RuntimeError` for the others
/// (which are bugs in relayout, never in the input).
fn op_error(py: Python<'_>, message: String, category: Option<&str>) -> PyErr {
    match category {
        Some(category) => {
            let err = OpError::new_err(message);
            if let Err(e) = err.value(py).setattr("category", category) {
                return e;
            }
            err
        }
        None => PyRuntimeError::new_err(message),
    }
}

fn compile_error(py: Python<'_>, e: relayout::Error) -> PyErr {
    op_error(py, e.to_string(), e.category())
}

// ---------------------------------------------------------------------------------------------
// dtypes

/// numpy's module, imported once.
fn numpy_module(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static NUMPY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    NUMPY
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("numpy")?.into_any().unbind())
        })
        .map(|m| m.bind(py))
}

/// The numpy dtype of an element type (looked up once per type). bfloat16 is ml_dtypes' (numpy
/// has none).
fn numpy_dtype(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    static DTYPES: [PyOnceLock<Py<PyArrayDescr>>; DType::ALL.len()] =
        [const { PyOnceLock::new() }; DType::ALL.len()];
    let index = DType::ALL.iter().position(|&d| d == dtype).unwrap_or(0);
    DTYPES[index]
        .get_or_try_init(py, || {
            let descr = if dtype == DType::BF16 {
                let ml = py.import("ml_dtypes").map_err(|_| {
                    PyTypeError::new_err(
                        "bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes), \
                         whose bfloat16 dtype numpy arrays of bfloat16 use",
                    )
                })?;
                PyArrayDescr::new(py, ml.getattr("bfloat16")?)?
            } else {
                PyArrayDescr::new(py, dtype.name())?
            };
            Ok::<_, PyErr>(descr.unbind())
        })
        .map(|d| d.bind(py).clone())
}

/// The element type of a numpy dtype: by kind and size, so that every spelling of a type
/// (`np.int64`, `"i8"`, `np.dtype("q")`) maps to the same one.
fn element_type(descr: &Bound<'_, PyArrayDescr>) -> PyResult<DType> {
    if descr.is_native_byteorder() == Some(false) {
        return Err(PyTypeError::new_err(format!(
            "dtype {} is not in the machine's byte order; convert with .astype(x.dtype.newbyteorder('='))",
            describe(descr)
        )));
    }
    let found = match (descr.kind(), descr.itemsize()) {
        (b'b', 1) => Some(DType::Bool),
        (b'i', 1) => Some(DType::I8),
        (b'i', 2) => Some(DType::I16),
        (b'i', 4) => Some(DType::I32),
        (b'i', 8) => Some(DType::I64),
        (b'u', 1) => Some(DType::U8),
        (b'u', 2) => Some(DType::U16),
        (b'u', 4) => Some(DType::U32),
        (b'u', 8) => Some(DType::U64),
        (b'f', 2) => Some(DType::F16),
        (b'f', 4) => Some(DType::F32),
        (b'f', 8) => Some(DType::F64),
        (b'c', 8) => Some(DType::C64),
        (b'c', 16) => Some(DType::C128),
        (_, 2) if descr.typeobj().name()? == "bfloat16" => Some(DType::BF16),
        _ => None,
    };
    found.ok_or_else(|| {
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        PyTypeError::new_err(format!(
            "relayout has no element type for dtype {}; the element types are {} (bfloat16 \
             through ml_dtypes)",
            describe(descr),
            names.join(", ")
        ))
    })
}

/// A dtype given to `compile`: anything `np.dtype` accepts, and the names of the conformance
/// format and of the IR (`"bfloat16"`, `"bf16"`, `"f32"`).
fn dtype_arg(py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(name) = dtype.cast::<PyString>() {
        if let Some(d) = DType::from_name(&name.to_cow()?) {
            return Ok(d);
        }
    }
    let descr = PyArrayDescr::new(py, dtype)
        .map_err(|e| PyTypeError::new_err(format!("dtype={dtype}: not a dtype ({e})")))?;
    element_type(&descr)
}

fn describe(descr: &Bound<'_, PyArrayDescr>) -> String {
    descr
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "?".into())
}

// ---------------------------------------------------------------------------------------------
// arrays

/// A checked view of one numpy array's buffer.
struct ArrayRef {
    addr: usize,
    len: usize,
}

impl ArrayRef {
    /// Checks that `array` is a C-contiguous array of exactly `shape` and `dtype` (and, for an
    /// output, writable), naming expected and actual values otherwise.
    fn check(
        array: &Bound<'_, PyUntypedArray>,
        dtype: &Bound<'_, PyArrayDescr>,
        shape: &[usize],
        len: usize,
        what: &str,
        writable: bool,
    ) -> PyResult<ArrayRef> {
        let actual = array.dtype();
        if !actual.is(dtype) && !actual.is_equiv_to(dtype) {
            return Err(PyTypeError::new_err(format!(
                "{what}: expected dtype {}, got {}; the kernel was compiled for {} (convert with \
                 .astype, or compile for the other dtype)",
                describe(dtype),
                describe(&actual),
                describe(dtype)
            )));
        }
        if array.shape() != shape {
            return Err(PyValueError::new_err(format!(
                "{what}: expected shape {}, got {}",
                shape_text(shape),
                shape_text(array.shape())
            )));
        }
        if !array.is_c_contiguous() {
            return Err(PyValueError::new_err(format!(
                "{what}: expected a C-contiguous array, got one with strides {} (pass \
                 np.ascontiguousarray(...) to copy it into C order)",
                shape_text(array.strides())
            )));
        }
        // SAFETY: `as_array_ptr` points to the live array object that `array` holds a
        // reference to; reading its flags and data pointer has no precondition.
        let (flags, data) = unsafe {
            let raw = array.as_array_ptr();
            ((*raw).fields.flags, (*raw).fields.data)
        };
        if writable && flags & NPY_ARRAY_WRITEABLE == 0 {
            return Err(PyValueError::new_err(format!(
                "{what}: the array is read-only"
            )));
        }
        Ok(ArrayRef {
            addr: data as usize,
            len,
        })
    }

    fn overlaps(&self, other: &ArrayRef) -> bool {
        self.len > 0
            && other.len > 0
            && self.addr < other.addr + other.len
            && other.addr < self.addr + self.len
    }
}

/// A new C-ordered array of `shape` and `dtype`, uninitialised (the kernel writes every byte).
fn new_array<'py>(
    py: Python<'py>,
    dtype: &Bound<'py, PyArrayDescr>,
    shape: &[npy_intp],
) -> PyResult<Bound<'py, PyUntypedArray>> {
    // SAFETY: PyArray_Empty steals a reference to the descriptor, so we give it a new one;
    // `shape` outlives the call, and a null result is an error set by numpy.
    unsafe {
        let descr = dtype.clone().into_dtype_ptr();
        let ptr = PY_ARRAY_API.PyArray_Empty(
            py,
            shape.len() as std::os::raw::c_int,
            shape.as_ptr() as *mut npy_intp,
            descr,
            0,
        );
        Bound::from_owned_ptr_or_err(py, ptr).map(|a| a.cast_into_unchecked())
    }
}

fn shape_text(shape: &[impl std::fmt::Display]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `x` as an ndarray: itself, or `np.asarray(x)` for other array-likes (lists, objects with
/// `__array__` or the buffer protocol). asarray keeps the values' own dtype, so the dtype
/// check that follows still refuses a list of floats for an int kernel.
fn as_ndarray<'py>(x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = x.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let converted = numpy_module(x.py())?.call_method1("asarray", (x,))?;
    converted
        .cast_into::<PyUntypedArray>()
        .map_err(|e| PyTypeError::new_err(format!("expected an array, got {}", e.into_inner())))
}

// ---------------------------------------------------------------------------------------------
// kernels

/// A compiled op or composed chain: the two facade types with the same methods.
enum Compiled {
    Op(CompiledOp),
    Chain(CompiledChain),
}

impl Compiled {
    fn input_type(&self) -> &TensorType {
        match self {
            Compiled::Op(k) => k.input_type(),
            Compiled::Chain(k) => k.input_type(),
        }
    }
    fn output_type(&self) -> &TensorType {
        match self {
            Compiled::Op(k) => k.output_type(),
            Compiled::Chain(k) => k.output_type(),
        }
    }
    fn stages(&self) -> &Stages {
        match self {
            Compiled::Op(k) => k.stages(),
            Compiled::Chain(k) => k.stages(),
        }
    }
    fn movement(&self) -> Movement {
        match self {
            Compiled::Op(k) => k.movement(),
            Compiled::Chain(k) => k.movement(),
        }
    }
    fn bytes_moved(&self) -> u64 {
        match self {
            Compiled::Op(k) => k.bytes_moved(),
            Compiled::Chain(k) => k.bytes_moved(),
        }
    }
    fn run(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), relayout::Error> {
        match (self, threads) {
            (Compiled::Op(k), 1) => k.run(src, dst),
            (Compiled::Op(k), n) => k.run_threaded(src, dst, n),
            (Compiled::Chain(k), 1) => k.run(src, dst),
            (Compiled::Chain(k), n) => k.run_threaded(src, dst, n),
        }
    }
}

/// How the kernel was asked for, for `repr`: one op's name and attributes, or a chain of them.
enum Description {
    Op(String, Attrs),
    Chain(Vec<(String, Attrs)>),
}

fn op_text(name: &str, attrs: &Attrs) -> String {
    if attrs.is_empty() {
        return name.to_string();
    }
    let items: Vec<String> = attrs.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!("{name} {{{}}}", items.join(", "))
}

/// A relayout op (or composed chain of ops) compiled to machine code for one input shape and
/// dtype.
///
/// Call it on an array: ``k(x)`` returns a new array of ``k.output_shape`` and ``k.dtype``;
/// ``k(x, out=y)`` writes into ``y`` (C-contiguous, writable, exact shape and dtype) and
/// returns it; ``k(x, threads=2)`` splits the run over 2 threads. The input must be a
/// C-contiguous array of exactly ``k.input_shape`` and ``k.dtype``: anything else raises
/// ``ValueError`` (shape, order) or ``TypeError`` (dtype), never a silent copy. The GIL is
/// released while the machine code runs, and one kernel may be called from many threads at
/// once.
///
/// Example::
///
///     >>> import numpy as np, relayout
///     >>> k = relayout.compile("SpaceToDepth", shape=(1, 4, 4, 1), dtype=np.float32, block_size=2)
///     >>> k.output_shape
///     (1, 2, 2, 4)
///     >>> k(np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1))[0, 0, 0]
///     array([0., 1., 4., 5.], dtype=float32)
#[pyclass(module = "relayout", name = "Kernel", frozen)]
struct Kernel {
    compiled: Compiled,
    description: Description,
    dtype: Py<PyArrayDescr>,
    input_shape: Vec<usize>,
    output_shape: Vec<npy_intp>,
    input_len: usize,
    output_len: usize,
}

impl Kernel {
    fn new(py: Python<'_>, compiled: Compiled, description: Description) -> PyResult<Kernel> {
        let input = compiled.input_type();
        let output = compiled.output_type();
        let dtype = numpy_dtype(py, input.dtype)?.unbind();
        let size = |t: &TensorType| -> PyResult<usize> {
            t.size_bytes()
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| PyValueError::new_err(format!("{t} does not fit in memory")))
        };
        let to_usize = |d: &u64| usize::try_from(*d).unwrap_or(usize::MAX);
        Ok(Kernel {
            input_shape: input.shape.iter().map(to_usize).collect(),
            output_shape: output.shape.iter().map(|&d| d as npy_intp).collect(),
            input_len: size(input)?,
            output_len: size(output)?,
            compiled,
            description,
            dtype,
        })
    }

    fn run_on<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        threads: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let threads = usize::try_from(threads)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| {
                PyValueError::new_err(format!("threads must be at least 1, got {threads}"))
            })?;
        let dtype = self.dtype.bind(py);
        let x = as_ndarray(x)?;
        let src = ArrayRef::check(&x, dtype, &self.input_shape, self.input_len, "input", false)?;
        let out = match out {
            Some(o) => o.cast::<PyUntypedArray>().cloned().map_err(|_| {
                PyTypeError::new_err(format!(
                    "out: expected a numpy array, got {}",
                    o.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?,
            None => new_array(py, dtype, &self.output_shape)?,
        };
        let out_shape: Vec<usize> = self.output_shape.iter().map(|&d| d as usize).collect();
        let dst = ArrayRef::check(&out, dtype, &out_shape, self.output_len, "out", true)?;
        if src.overlaps(&dst) {
            return Err(PyValueError::new_err(
                "out shares memory with the input: relayout cannot run in place; pass a \
                 separate output array",
            ));
        }
        let compiled = &self.compiled;
        // Small kernels keep the GIL: releasing and taking it back costs more than they run.
        let result = if self.output_len < RELEASE_GIL_BYTES && threads == 1 {
            run_raw(compiled, &src, &dst, threads)
        } else {
            py.detach(|| run_raw(compiled, &src, &dst, threads))
        };
        result.map_err(|e| compile_error(py, e))?;
        Ok(out.into_any())
    }

    fn stages(&self) -> &Stages {
        self.compiled.stages()
    }
}

/// Outputs below this size run without releasing the GIL. Such a kernel holds it for a few
/// microseconds at most, far below the interpreter's 5 ms switch interval, so no other thread
/// notices; releasing and taking it back would add about 50 ns, a fifth of a tiny call.
const RELEASE_GIL_BYTES: usize = 64 * 1024;

/// Runs the kernel on two checked buffers.
fn run_raw(
    compiled: &Compiled,
    src: &ArrayRef,
    dst: &ArrayRef,
    threads: usize,
) -> Result<(), relayout::Error> {
    // SAFETY: both buffers were checked to be C-contiguous arrays of exactly `len` bytes
    // (`dst` writable), which do not overlap; the caller holds references to both array
    // objects for the whole call, so neither buffer is freed meanwhile. Another Python thread
    // may write to them while the GIL is released, as with any numpy function that releases
    // it; the kernel then reads or writes racing bytes, but never outside the buffers.
    let (src, dst) = unsafe {
        let src: &[u8] = if src.len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(src.addr as *const u8, src.len)
        };
        let dst: &mut [u8] = if dst.len == 0 {
            &mut []
        } else {
            std::slice::from_raw_parts_mut(dst.addr as *mut u8, dst.len)
        };
        (src, dst)
    };
    compiled.run(src, dst, threads)
}

const STAGES: [&str; 6] = ["lowered", "optimized", "loops", "clif", "vcode", "asm"];

#[pymethods]
impl Kernel {
    /// Runs the kernel on ``x`` and returns the result: a new array, or ``out`` when given.
    #[pyo3(signature = (x, /, out=None, *, threads=1))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        out: Option<&Bound<'py, PyAny>>,
        threads: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.run_on(py, x, out, threads)
    }

    /// The input shape this kernel was compiled for, a tuple of ints.
    #[getter]
    fn input_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.input_shape)
    }

    /// The output shape, a tuple of ints.
    #[getter]
    fn output_shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.output_shape)
    }

    /// The element type of input and output, a numpy dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> Bound<'py, PyArrayDescr> {
        self.dtype.bind(py).clone()
    }

    /// What the kernel does with the bytes, as a graph optimizer asks it, in words:
    /// ``"no movement: ... (a view)"``, ``"contiguous copy: output[a..b] = input[c..d] ..."``,
    /// ``"permutation: input.reshape(...).transpose(...)"``, ``"strided view:
    /// as_strided(input, offset=..., shape=(...), strides=(...)) (in elements)"`` or ``"gather:
    /// N loop statements ..."``. :attr:`movement_kind` is the kind alone.
    #[getter]
    fn movement(&self) -> String {
        self.compiled.movement().to_string()
    }

    /// The kind of :attr:`movement`, to branch on: ``"view"``, ``"contiguous copy"``,
    /// ``"permutation"``, ``"strided view"`` or ``"gather"``.
    #[getter]
    fn movement_kind(&self) -> &'static str {
        self.compiled.movement().kind()
    }

    /// The bytes the kernel reads and writes in one run.
    #[getter]
    fn bytes_moved(&self) -> u64 {
        self.compiled.bytes_moved()
    }

    /// The op's description in the op syntax (``Name {attr = value} : tensor<...>``); a
    /// chain's ops joined by ``" ; "``.
    #[getter]
    fn op(&self) -> String {
        let input = self.compiled.input_type();
        match &self.description {
            Description::Op(name, attrs) => format!("{} : {input}", op_text(name, attrs)),
            Description::Chain(ops) => {
                let texts: Vec<String> = ops.iter().map(|(n, a)| op_text(n, a)).collect();
                format!("{} : {input}", texts.join(" ; "))
            }
        }
    }

    /// The text of one compilation stage: ``"lowered"`` (the op's index-map IR as lowered),
    /// ``"optimized"`` (after the index-level passes), ``"loops"`` (the loop IR that is
    /// compiled), ``"clif"`` (Cranelift IR), ``"vcode"`` (the machine instructions) or
    /// ``"asm"`` (their disassembly, in builds with the ``disas`` feature only).
    fn ir(&self, stage: &str) -> PyResult<String> {
        let stages = self.stages();
        let text = match stage {
            "lowered" => Ok(stages.lowered.to_string()),
            "optimized" => Ok(stages.optimized.to_string()),
            "loops" => Ok(stages.loops.to_string()),
            "clif" => relayout::clif_text(&stages.loops),
            "vcode" => relayout::vcode_text(&stages.loops),
            "asm" => relayout::asm_text(&stages.loops),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown stage {other:?}; the stages are {}",
                    STAGES.join(", ")
                )))
            }
        };
        text.map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// An SVG picture of what the kernel does on its input shape: the input and the output as
    /// grids of elements (a 4-D tensor as a grid of 2-D planes), each output element coloured
    /// and labelled by the input element it comes from (padding in grey), or for Col2Im by how
    /// many input elements are summed into it. Raises ``ValueError`` for shapes of more than
    /// 2048 elements: compile the op for a small shape of the same kind to draw it.
    ///
    /// Example::
    ///
    ///     >>> import relayout
    ///     >>> k = relayout.compile("SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf32>")
    ///     >>> k.explain_svg().startswith("<svg")
    ///     True
    fn explain_svg(&self) -> PyResult<String> {
        let ops = match &self.compiled {
            Compiled::Op(k) => vec![k.op().clone()],
            Compiled::Chain(k) => k.ops().to_vec(),
        };
        relayout::explain_svg(&ops, self.compiled.input_type())
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The picture of :meth:`explain_svg`, for Jupyter; ``None`` (the text repr instead) for
    /// shapes too large to draw.
    fn _repr_svg_(&self) -> Option<String> {
        self.explain_svg().ok()
    }

    fn __repr__(&self) -> String {
        format!(
            "<relayout.Kernel {} -> {}>",
            self.op(),
            self.compiled.output_type()
        )
    }
}

// ---------------------------------------------------------------------------------------------
// compile, apply, compile_chain

/// One attribute value from Python: an int (or anything with ``__index__``), a str, a bool or
/// a float (Pad's ``constant_value``), or a list or tuple of them.
fn attr_value(key: &str, v: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(AttrValue::Str(s.to_cow()?.into_owned()));
    }
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(AttrValue::Bool(v.extract::<bool>()?));
    }
    if v.is_instance_of::<pyo3::types::PyFloat>() {
        return Ok(AttrValue::Float(v.extract::<f64>()?));
    }
    if let Ok(list) = v.cast::<PyList>() {
        return list
            .iter()
            .map(|i| attr_value(key, &i))
            .collect::<PyResult<_>>()
            .map(AttrValue::List);
    }
    if let Ok(tuple) = v.cast::<PyTuple>() {
        return tuple
            .iter()
            .map(|i| attr_value(key, &i))
            .collect::<PyResult<_>>()
            .map(AttrValue::List);
    }
    if let Ok(index) = v.call_method0("__index__") {
        if let Ok(i) = index.extract::<i64>() {
            return Ok(AttrValue::Int(i));
        }
        // A uint64 constant_value above 2^63 - 1.
        return index.extract::<u64>().map(AttrValue::UInt).map_err(|_| {
            PyValueError::new_err(format!(
                "attribute {key}: {index} does not fit in a 64-bit integer"
            ))
        });
    }
    if let Ok(arr) = v.cast::<PyUntypedArray>() {
        return attr_value(key, &arr.call_method0("tolist")?);
    }
    if let Ok(x) = v.call_method0("__float__") {
        // numpy float scalars and the like.
        return Ok(AttrValue::Float(x.extract::<f64>()?));
    }
    Err(PyTypeError::new_err(format!(
        "attribute {key}: expected an int, a float, a bool, a str or a list of them, got {}",
        v.repr().map(|r| r.to_string()).unwrap_or_default()
    )))
}

/// The attributes given as ``attrs={...}`` (for names that are also keywords of the call, such
/// as Reshape's ``shape``) and as keywords, in one dict; a name given both ways is an error.
fn merged_attrs<'py>(
    py: Python<'py>,
    attrs: Option<&Bound<'py, PyDict>>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    match (attrs, kwargs) {
        (None, None) => Ok(None),
        (Some(a), None) => Ok(Some(a.clone())),
        (None, Some(k)) => Ok(Some(k.clone())),
        (Some(a), Some(k)) => {
            let all = PyDict::new(py);
            for (key, value) in a.iter().chain(k.iter()) {
                if all.contains(&key)? {
                    return Err(PyValueError::new_err(format!(
                        "attribute {key} is given both in attrs= and as a keyword"
                    )));
                }
                all.set_item(key, value)?;
            }
            Ok(Some(all))
        }
    }
}

fn attrs_from_kwargs(kwargs: Option<&Bound<'_, PyDict>>, attrs: &mut Attrs) -> PyResult<()> {
    if let Some(kwargs) = kwargs {
        for (k, v) in kwargs.iter() {
            let key: String = k.extract()?;
            let value = attr_value(&key, &v)?;
            if attrs.insert(key.clone(), value).is_some() {
                return Err(PyValueError::new_err(format!(
                    "attribute {key} is given both in the op text and as a keyword"
                )));
            }
        }
    }
    Ok(())
}

/// `Name` or `Name {attrs}` without a type: the name and the attributes written.
fn parse_untyped(text: &str) -> PyResult<(String, Attrs)> {
    // A bare name needs no parsing (the common case of `apply`, which runs on every call).
    if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok((text.to_string(), Attrs::new()));
    }
    if text.contains(':') {
        return Err(PyValueError::new_err(format!(
            "{text:?} has an input type (after ':') and shape=/dtype= are given too: give the \
             input type one way only"
        )));
    }
    relayout::parse_chained_op(text)
        .map_err(|e| PyValueError::new_err(format!("op syntax: {e} in {text:?}")))
}

fn shape_arg(shape: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if let Ok(n) = shape.extract::<u64>() {
        return Ok(vec![n]);
    }
    shape.extract::<Vec<u64>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "shape: expected a tuple of non-negative ints, got {}",
            shape.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })
}

fn compile_op(py: Python<'_>, name: String, attrs: Attrs, input: &TensorType) -> PyResult<Kernel> {
    let op = Op::from_attrs(&name, &attrs)
        .map_err(|e| op_error(py, e.to_string(), Some(e.category())))?;
    let compiled = relayout::compile(&op, input).map_err(|e| compile_error(py, e))?;
    Kernel::new(py, Compiled::Op(compiled), Description::Op(name, attrs))
}

/// Compiles an op for one input shape and dtype and returns a :class:`Kernel`.
///
/// Either the whole op in the op syntax (the ``relayout`` command line's), or an op name (or
/// ``"Name {attrs}"``) with ``shape=``, ``dtype=`` and the attributes as keywords, with
/// TensorFlow's and ONNX's names and defaults. Compiling the same op for the same input again
/// returns the cached machine code (about a microsecond).
///
/// Raises :class:`OpError` (a ``ValueError``) when the op refuses the input, with
/// ``e.category`` the rule broken (``"not_divisible"``, ...).
///
/// Example::
///
///     >>> import numpy as np, relayout
///     >>> k = relayout.compile('DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x8x4x4xf32>')
///     >>> k2 = relayout.compile("DepthToSpace", shape=(1, 8, 4, 4), dtype=np.float32,
///     ...                       block_size=2, data_format="NCHW", mode="CRD")
///     >>> k2.output_shape
///     (1, 2, 8, 8)
///     >>> y = k(np.random.rand(1, 8, 4, 4).astype(np.float32))
#[pyfunction]
#[pyo3(signature = (op, /, shape=None, dtype=None, *, attrs=None, **kwargs))]
fn compile(
    py: Python<'_>,
    op: &str,
    shape: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    attrs: Option<&Bound<'_, PyDict>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Kernel> {
    let attrs = merged_attrs(py, attrs, kwargs)?;
    let attrs = attrs.as_ref();
    match (shape, dtype) {
        (None, None) => {
            if attrs.is_some_and(|a| !a.is_empty()) || !op.contains(':') {
                return Err(PyValueError::new_err(format!(
                    "compile({op:?}, ...): give the input type, either in the text \
                     (\"{op} : tensor<1x4x4x1xf32>\") or as shape= and dtype="
                )));
            }
            let spec = relayout::parse_op_spec(op)
                .map_err(|e| PyValueError::new_err(format!("op syntax: {e} in {op:?}")))?;
            compile_op(py, spec.name, spec.attrs, &spec.input)
        }
        (Some(shape), Some(dtype)) => {
            let (name, mut all) = parse_untyped(op)?;
            attrs_from_kwargs(attrs, &mut all)?;
            let input = TensorType::new(dtype_arg(py, dtype)?, shape_arg(shape)?);
            compile_op(py, name, all, &input)
        }
        _ => Err(PyValueError::new_err(
            "compile: shape= and dtype= go together (give both, or an op text with its \
             tensor type)",
        )),
    }
}

/// Compiles ``op`` (cached) for the shape and dtype of ``x`` and runs it: the same as
/// ``compile(op, shape=x.shape, dtype=x.dtype, **attrs)(x, out=out, threads=threads)``.
///
/// Example::
///
///     >>> import numpy as np, relayout
///     >>> x = np.arange(16, dtype=np.int32).reshape(1, 4, 4, 1)
///     >>> relayout.apply("SpaceToDepth", x, block_size=2).shape
///     (1, 2, 2, 4)
#[pyfunction]
#[pyo3(signature = (op, x, /, *, out=None, threads=1, attrs=None, **kwargs))]
fn apply<'py>(
    py: Python<'py>,
    op: &str,
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    threads: i64,
    attrs: Option<&Bound<'py, PyDict>>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let attrs = merged_attrs(py, attrs, kwargs)?;
    let attrs = attrs.as_ref();
    let array = as_ndarray(x)?;
    let dtype = element_type(&array.dtype())?;
    let input = TensorType::new(
        dtype,
        array.shape().iter().map(|&d| d as u64).collect::<Vec<_>>(),
    );
    let (name, mut all) = parse_untyped(op)?;
    attrs_from_kwargs(attrs, &mut all)?;
    let kernel = compile_op(py, name, all, &input)?;
    kernel.run_on(py, array.as_any(), out, threads)
}

/// Composes ops applied one after another into one kernel and compiles it: one pass over the
/// data, no intermediate array. ``ops`` is a list of ``(name, {attrs})`` pairs, op names, or
/// ``"Name {attrs}"`` texts. Every op but Col2Im can be in a chain. Returns a :class:`Kernel`.
///
/// Example::
///
///     >>> import numpy as np, relayout
///     >>> f = relayout.compile_chain([("DepthToSpace", {"block_size": 2}),
///     ...                             ("SpaceToDepth", {"block_size": 2})],
///     ...                            shape=(1, 4, 4, 8), dtype=np.float32)
///     >>> f.movement.endswith("(a view)")   # the two ops cancel out
///     True
#[pyfunction]
#[pyo3(signature = (ops, /, shape, dtype))]
fn compile_chain(
    py: Python<'_>,
    ops: &Bound<'_, PyAny>,
    shape: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
) -> PyResult<Kernel> {
    let input = TensorType::new(dtype_arg(py, dtype)?, shape_arg(shape)?);
    let mut described = Vec::new();
    let mut chain = Vec::new();
    for (index, item) in ops.try_iter()?.enumerate() {
        let item = item?;
        let (name, attrs) = if let Ok(text) = item.cast::<PyString>() {
            parse_untyped(&text.to_cow()?)?
        } else {
            let (name, dict): (String, Option<Bound<'_, PyDict>>) =
                item.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "ops[{index}]: expected an op name, \"Name {{attrs}}\" or a (name, \
                         attrs dict) pair, got {}",
                        item.repr().map(|r| r.to_string()).unwrap_or_default()
                    ))
                })?;
            let (name, mut attrs) = parse_untyped(&name)?;
            attrs_from_kwargs(dict.as_ref(), &mut attrs)?;
            (name, attrs)
        };
        let op = Op::from_attrs(&name, &attrs).map_err(|e| {
            op_error(
                py,
                format!("op {index} of the chain: {e}"),
                Some(e.category()),
            )
        })?;
        chain.push(op);
        described.push((name, attrs));
    }
    let compiled = relayout::compile_chain(&chain, &input).map_err(|e| match e.category() {
        Some(category) => op_error(py, e.to_string(), Some(category)),
        None => match e {
            relayout::Error::Chain(relayout::ChainError::TooLarge {
                index,
                statements,
                limit,
                ..
            }) => chain_too_large(py, e.to_string(), index, statements, limit),
            relayout::Error::Chain(
                relayout::ChainError::EmptyChain | relayout::ChainError::NotComposable { .. },
            ) => PyValueError::new_err(e.to_string()),
            other => PyRuntimeError::new_err(other.to_string()),
        },
    })?;
    Kernel::new(py, Compiled::Chain(compiled), Description::Chain(described))
}

/// The op names relayout knows, as ``compile`` takes them.
#[pyfunction]
fn op_names() -> Vec<&'static str> {
    relayout::OP_NAMES.to_vec()
}

/// The extension module; the `relayout` package re-exports it.
#[pymodule]
fn _relayout(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Kernel>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    m.add_function(wrap_pyfunction!(compile_chain, m)?)?;
    m.add_function(wrap_pyfunction!(op_names, m)?)?;
    let op_error_type = py.get_type::<OpError>();
    // The class attribute is the default for an OpError raised from Python without one.
    op_error_type.setattr("category", py.None())?;
    m.add("OpError", op_error_type)?;
    m.add("ChainTooLarge", py.get_type::<ChainTooLarge>())?;
    let dtypes: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    m.add("DTYPES", PyTuple::new(py, dtypes)?)?;
    m.add("STAGES", PyTuple::new(py, STAGES)?)?;
    Ok(())
}

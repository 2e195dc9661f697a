//! The kernel cache: a second request for the same op and input type returns the same compiled
//! kernel, different op descriptions that simplify to the same loop kernel share machine code,
//! composed chains share code the same way, and a capacity bounds what the cache keeps.

use relayout::ir::{DType, TensorType};
use relayout::{compile, compile_chain, compile_kernel, DataFormat, DepthToSpaceMode, Op};

// One test function, because the cache is process-wide and its capacity is changed here.
#[test]
fn cache_hits_sharing_and_eviction() {
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::Nhwc,
    };
    let ty = TensorType::new(DType::F32, [1, 8, 8, 3]);
    let first = compile(&op, &ty).unwrap();
    let second = compile(&op, &ty).unwrap();
    assert!(
        first.shares_code_with(&second),
        "a second compile of the same op must hit the cache"
    );

    // Two ops that move nothing: both become one contiguous copy of 480 bytes.
    let identity_a = Op::SpaceToBatchNd {
        block_shape: vec![1, 1],
        paddings: vec![vec![0, 0], vec![0, 0]],
    };
    let identity_b = Op::BatchToSpaceNd {
        block_shape: vec![1, 1],
        crops: vec![vec![0, 0], vec![0, 0]],
    };
    let t = TensorType::new(DType::F32, [2, 3, 4, 5]);
    let a = compile(&identity_a, &t).unwrap();
    let b = compile(&identity_b, &t).unwrap();
    assert_eq!(a.stages().loops.stmts, b.stages().loops.stmts);

    // A different shape is a different kernel.
    let other = compile(&op, &TensorType::new(DType::F32, [1, 8, 8, 4])).unwrap();
    assert!(!other.shares_code_with(&first));

    // Composed chains go through the same cache: the same chain twice shares machine code, and
    // so does a clone; a chain that composes to a different kernel does not.
    let d2s = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nhwc,
        mode: DepthToSpaceMode::Dcr,
    };
    let chain = [op.clone(), d2s.clone()];
    let fused_ty = TensorType::new(DType::U8, [1, 4, 6, 3]);
    let fused = compile_chain(&chain, &fused_ty).unwrap();
    let again = compile_chain(&chain, &fused_ty).unwrap();
    assert!(
        fused.shares_code_with(&again),
        "the same chain compiled twice must share code"
    );
    assert!(fused.clone().shares_code_with(&fused));
    let reversed = compile_chain(
        &[d2s, op.clone()],
        &TensorType::new(DType::U8, [1, 4, 6, 12]),
    )
    .unwrap();
    assert!(!reversed.shares_code_with(&fused));
    let before = relayout::cache_len();
    let by_kernel = compile_kernel(fused.stages().lowered.clone()).unwrap();
    assert!(by_kernel.shares_code_with(&fused));
    assert_eq!(relayout::cache_len(), before, "a hit must not add an entry");

    // Capacity 0 keeps nothing: compiling again gives new code, which still runs correctly.
    relayout::set_cache_capacity(0);
    assert_eq!(relayout::cache_len(), (0, 0));
    let third = compile(&op, &ty).unwrap();
    assert!(!third.shares_code_with(&first));
    let src: Vec<f32> = (0..192).map(|i| i as f32).collect();
    let (mut x, mut y) = (vec![0f32; 192], vec![0f32; 192]);
    first.run_typed(&src, &mut x).unwrap();
    third.run_typed(&src, &mut y).unwrap();
    assert_eq!(x, y);

    relayout::set_cache_capacity(2);
    for c in 1..=5u64 {
        compile(&op, &TensorType::new(DType::F32, [1, 2, 2, c])).unwrap();
    }
    let (by_op, by_code) = relayout::cache_len();
    assert!(
        by_op <= 2 && by_code <= 2,
        "capacity 2 exceeded: {by_op} ops, {by_code} kernels"
    );
    relayout::set_cache_capacity(relayout::DEFAULT_CAPACITY);
}

//! The safe API: length and element checks, refusal of unverified kernels, typed runs,
//! thread safety and memory release.

use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
use relayout_jit::{CompiledKernel, JitError, Operand, RunError};

/// `dst[i] = src[n - 1 - i]` over `n` elements of `dtype`.
fn reverse(dtype: DType, n: u64) -> LoopKernel {
    let e = dtype.size() as i64;
    LoopKernel {
        bands: Vec::new(),
        name: "reverse".into(),
        src: TensorType::new(dtype, [n]),
        dst: TensorType::new(dtype, [n]),
        stmts: vec![LoopStmt {
            action: LoopAction::Copy,
            bytes: e as u64,
            src_offset: (n as i64 - 1) * e,
            dst_offset: 0,
            loops: vec![Loop {
                extent: n,
                src_stride: -e,
                dst_stride: e,
            }],
            window: None,
        }],
    }
}

#[test]
fn wrong_buffer_lengths_are_errors() {
    let k = CompiledKernel::compile(&reverse(DType::F32, 4)).unwrap();
    let mut dst = vec![0u8; 16];
    let err = k.run(&[0u8; 15], &mut dst).unwrap_err();
    assert_eq!(
        err,
        RunError::Length {
            kernel: "reverse".into(),
            operand: Operand::Source,
            ty: "tensor<4xf32>".into(),
            got: 15,
            want: 16,
        }
    );
    assert_eq!(
        err.to_string(),
        "the source buffer of kernel @reverse is 15 bytes but tensor<4xf32> is 16 bytes"
    );
    let err = k.run(&[0u8; 16], &mut [0u8; 17]).unwrap_err();
    assert!(matches!(
        err,
        RunError::Length {
            operand: Operand::Destination,
            got: 17,
            ..
        }
    ));
    assert!(k.run_threaded(&[0u8; 16], &mut [0u8; 0], 2).is_err());
    assert!(k.run_typed(&[0f32; 3], &mut [0f32; 4]).is_err());
    // Nothing was written.
    assert_eq!(dst, vec![0u8; 16]);
}

#[test]
fn typed_runs_check_the_element_size() {
    let k = CompiledKernel::compile(&reverse(DType::F32, 4)).unwrap();
    let mut dst = [0f32; 4];
    k.run_typed(&[1.0f32, 2.0, 3.0, 4.0], &mut dst).unwrap();
    assert_eq!(dst, [4.0, 3.0, 2.0, 1.0]);
    let mut dst = [0u32; 4];
    k.run_typed(&[1u32, 2, 3, 4], &mut dst).unwrap();
    assert_eq!(dst, [4, 3, 2, 1]);
    let err = k.run_typed(&[0f64; 2], &mut [0f64; 2]).unwrap_err();
    assert!(
        matches!(
            err,
            RunError::ElementSize {
                dtype_size: 4,
                element_size: 8,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("f64"), "{err}");

    let k = CompiledKernel::compile(&reverse(DType::F16, 3)).unwrap();
    let src = [1.0f32, 2.0, 3.0].map(half::f16::from_f32);
    let mut dst = [half::f16::ZERO; 3];
    k.run_typed(&src, &mut dst).unwrap();
    assert_eq!(dst.map(f32::from), [3.0, 2.0, 1.0]);
}

#[test]
fn out_of_bounds_kernels_are_refused() {
    let mut k = reverse(DType::U8, 8);
    k.stmts[0].src_offset = 8;
    let err = CompiledKernel::compile(&k).unwrap_err();
    assert!(matches!(err, JitError::Verify { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("kernel @reverse was not compiled"),
        "{err}"
    );

    let mut k = reverse(DType::U8, 8);
    k.stmts[0].loops[0].extent = 9;
    assert!(matches!(
        CompiledKernel::compile(&k),
        Err(JitError::Verify { .. })
    ));

    let mut k = reverse(DType::I32, 8);
    k.stmts[0].bytes = 6;
    assert!(matches!(
        CompiledKernel::compile(&k),
        Err(JitError::Verify { .. })
    ));
}

#[test]
fn compiled_kernels_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledKernel>();
    let k = std::sync::Arc::new(CompiledKernel::compile(&reverse(DType::U16, 1000)).unwrap());
    let src: Vec<u16> = (0..1000).collect();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (k, src) = (k.clone(), &src);
            s.spawn(move || {
                let mut dst = vec![0u16; 1000];
                for _ in 0..50 {
                    k.run_typed(src, &mut dst).unwrap();
                }
                assert!(dst.iter().rev().copied().eq(0..1000));
            });
        }
    });
}

#[test]
fn kernels_survive_the_drop_of_others() {
    // Every kernel has its own module; freeing one must not touch another (tests/memory.rs
    // checks that the memory is returned).
    let keep = CompiledKernel::compile(&reverse(DType::U8, 3)).unwrap();
    for n in 1..50 {
        let k = CompiledKernel::compile(&reverse(DType::U8, n)).unwrap();
        let mut dst = vec![0u8; n as usize];
        k.run(&vec![7u8; n as usize], &mut dst).unwrap();
        assert!(dst.iter().all(|&b| b == 7));
    }
    let mut dst = [0u8; 3];
    keep.run(&[1, 2, 3], &mut dst).unwrap();
    assert_eq!(dst, [3, 2, 1]);
    assert_eq!(keep.loop_kernel(), &reverse(DType::U8, 3));
}

#[test]
fn empty_kernels_and_tensors() {
    let k = LoopKernel {
        bands: Vec::new(),
        name: "empty".into(),
        src: TensorType::new(DType::U8, [0]),
        dst: TensorType::new(DType::U8, [0]),
        stmts: vec![],
    };
    let c = CompiledKernel::compile(&k).unwrap();
    c.run(&[], &mut []).unwrap();
    c.run_threaded(&[], &mut [], 4).unwrap();
}

//! Dropping a compiled kernel returns its code memory. In its own test binary, so that no
//! other test allocates while the address space is measured.

use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
use relayout_jit::CompiledKernel;

/// The process's mapped address space in KiB (Linux only).
fn vm_size_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn dropped_kernels_release_their_code() {
    let k = LoopKernel {
        bands: Vec::new(),
        name: "copy".into(),
        src: TensorType::new(DType::U8, [64]),
        dst: TensorType::new(DType::U8, [64]),
        stmts: vec![
            LoopStmt {
                action: LoopAction::Copy,
                bytes: 4,
                src_offset: 0,
                dst_offset: 0,
                loops: vec![Loop {
                    extent: 16,
                    src_stride: 4,
                    dst_stride: 4
                }],
                window: None,
            };
            3
        ],
    };
    let cycle = |n: usize| {
        for _ in 0..n {
            let c = CompiledKernel::compile(&k).unwrap();
            let mut dst = [0u8; 64];
            c.run(&[1; 64], &mut dst).unwrap();
            assert_eq!(dst, [1; 64]);
        }
    };
    // Warm up allocator arenas and lazily initialised state first.
    cycle(100);
    let Some(before) = vm_size_kib() else { return };
    cycle(1000);
    let after = vm_size_kib().unwrap_or(before);
    // Leaked code would take at least a 4 KiB page per kernel: 4 MiB here.
    assert!(
        after < before + 2048,
        "address space grew from {before} KiB to {after} KiB"
    );
}

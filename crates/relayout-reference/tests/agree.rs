//! The two oracles agree: on random valid ops of every family, random shapes (zero-sized dims
//! included) and random bytes of every dtype, `interpret(op.lower(input))` and `reference`
//! produce the same bytes, of the validated output type's size.

#[path = "../../relayout-ops/tests/support/mod.rs"]
mod support;

use proptest::prelude::*;
use relayout_ir::{interpret, DType, TensorType};
use relayout_ops::{ErrorCategory, Op};
use relayout_reference::reference;

/// A valid op with random input bytes.
fn op_and_data() -> impl Strategy<Value = (Op, TensorType, Vec<u8>)> {
    support::valid_op().prop_flat_map(|(op, input)| {
        let len = input.size_bytes().unwrap() as usize;
        (
            Just(op),
            Just(input),
            proptest::collection::vec(any::<u8>(), len),
        )
    })
}

fn interpreted(op: &Op, input: &TensorType, src: &[u8]) -> Vec<u8> {
    let kernel = op.lower(input).unwrap();
    // Garbage in the destination: the kernel must define every byte it owns.
    let mut dst = vec![0xA5; kernel.dst.size_bytes().unwrap() as usize];
    interpret(&kernel, src, &mut dst).unwrap_or_else(|e| panic!("{e}\n{kernel}"));
    dst
}

/// On any op and input, the reference returns an error or the interpreted bytes; it never
/// panics. Inputs too large to materialise get an empty buffer (a `buffer_length` error);
/// valid ops with outputs too large to materialise are not run, since the reference would
/// rightly try to allocate them.
fn reference_is_total(op: &Op, input: &TensorType) {
    let small = |n: u64| n <= 1 << 16;
    if let Ok(out) = op.output_type(input) {
        if !out.size_bytes().is_ok_and(small) {
            return;
        }
    }
    let len = input.size_bytes().ok().filter(|&n| small(n));
    let src = vec![0x3Cu8; len.unwrap_or(0) as usize];
    match reference(op, input, &src) {
        Ok(got) => prop_assert_eq_bytes(&got, &interpreted(op, input, &src)),
        Err(e) => {
            let refused = op.output_type(input).err();
            let short = e.category == ErrorCategory::BufferLength && len.is_none();
            assert!(
                refused.as_ref() == Some(&e) || short,
                "{op:?} on {input}: {e}"
            );
        }
    }
}

fn prop_assert_eq_bytes(got: &[u8], want: &[u8]) {
    assert!(got == want, "reference {got:?}\ninterpreted {want:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn the_reference_never_panics(op in support::any_op(), input in support::input()) {
        reference_is_total(&op, &input);
    }

    #[test]
    fn the_reference_never_panics_near_valid_ops(
        (op, input) in support::valid_op(),
        at in any::<prop::sample::Index>(),
        value in support::extreme_u64(),
    ) {
        let mut input = input;
        if !input.shape.is_empty() {
            let i = at.index(input.shape.len());
            input.shape[i] = value;
        }
        reference_is_total(&op, &input);
    }

    #[test]
    fn interpreter_and_reference_agree((op, input, src) in op_and_data()) {
        let out = op.output_type(&input).unwrap();
        let want = reference(&op, &input, &src).unwrap();
        prop_assert_eq!(want.len() as u64, out.size_bytes().unwrap());
        let got = interpreted(&op, &input, &src);
        prop_assert!(got == want, "{:?} on {}:\ninterpreted {:?}\nreference   {:?}", op, input, got, want);
    }
}

#[test]
fn buffers_of_the_wrong_length_are_refused() {
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: relayout_ops::DataFormat::Nhwc,
    };
    let input = TensorType::new(DType::I16, [1, 2, 2, 1]);
    assert_eq!(reference(&op, &input, &[0; 8]).unwrap(), vec![0; 8]);
    let e = reference(&op, &input, &[0; 7]).unwrap_err();
    assert_eq!(e.category, ErrorCategory::BufferLength);
    assert!(e.message.contains("7 bytes"), "{e}");
    // An invalid op is refused with its own category before the buffer is looked at.
    let bad = Op::SpaceToDepth {
        block_size: 1,
        data_format: relayout_ops::DataFormat::Nhwc,
    };
    assert_eq!(
        reference(&bad, &input, &[]).unwrap_err().category,
        ErrorCategory::BlockSizeTooSmall
    );
}

#[test]
fn zero_sized_tensors_run() {
    let f32s = |s: &[u64]| TensorType::new(DType::F32, s.to_vec());
    // SpaceToBatch of an empty spatial dim with padding: all zeros.
    let op = Op::SpaceToBatchNd {
        block_shape: vec![2],
        paddings: vec![vec![1, 1]],
    };
    let input = f32s(&[2, 0, 3]);
    assert_eq!(op.output_type(&input).unwrap(), f32s(&[4, 1, 3]));
    assert_eq!(reference(&op, &input, &[]).unwrap(), vec![0; 48]);
    assert_eq!(interpreted(&op, &input, &[]), vec![0; 48]);
    // Empty outputs.
    for (op, shape) in [
        (op.clone(), vec![0, 2, 3]),
        (
            Op::BatchToSpaceNd {
                block_shape: vec![2],
                crops: vec![vec![2, 2]],
            },
            vec![2, 2, 3],
        ),
        (
            Op::DepthToSpace {
                block_size: 2,
                data_format: relayout_ops::DataFormat::Nchw,
                mode: relayout_ops::DepthToSpaceMode::Crd,
            },
            vec![1, 0, 2, 2],
        ),
        (
            Op::Col2Im {
                image_shape: vec![0, 2],
                block_shape: vec![2, 1],
                dilations: vec![1, 1],
                pads: vec![1, 0, 1, 0],
                strides: vec![1, 1],
            },
            vec![1, 2, 2],
        ),
    ] {
        let input = f32s(&shape);
        let len = input.size_bytes().unwrap() as usize;
        let out = op.output_type(&input).unwrap();
        assert_eq!(out.num_elements(), Ok(0), "{op:?}");
        assert_eq!(
            reference(&op, &input, &vec![1; len]).unwrap(),
            Vec::<u8>::new()
        );
        assert_eq!(interpreted(&op, &input, &vec![1; len]), Vec::<u8>::new());
    }
}

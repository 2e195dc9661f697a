//! Fuzzing of attribute parsing and validation: arbitrary attributes, attribute values and
//! shapes (negative, `i64::MAX`, `u64::MAX`, zero) must give an op or a typed error, never a
//! panic or an overflow; and whatever validates must lower to a kernel of the validated type
//! that the interpreter runs without an out-of-bounds access.

mod support;

use proptest::prelude::*;
use relayout_ir::{interpret, TensorType};
use relayout_ops::Op;

/// `output_type` and `lower` agree, and a kernel small enough to run runs cleanly.
fn validate_and_lower(op: &Op, input: &TensorType) {
    let ty = op.output_type(input);
    let kernel = op.lower(input);
    match (&ty, &kernel) {
        (Ok(ty), Ok(k)) => {
            assert_eq!(&k.dst, ty);
            assert_eq!(&k.src, input);
            let small = |t: &TensorType| t.size_bytes().is_ok_and(|n| n <= 1 << 16);
            if small(input) && small(ty) {
                let src = vec![0u8; input.size_bytes().unwrap() as usize];
                let mut dst = vec![0u8; ty.size_bytes().unwrap() as usize];
                interpret(k, &src, &mut dst).unwrap_or_else(|e| panic!("{e}\n{k}"));
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("output_type {ty:?} but lower {kernel:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn arbitrary_attributes_never_panic(name in support::op_name(), attrs in support::attrs(), input in support::input()) {
        if let Ok(op) = Op::from_attrs(&name, &attrs) {
            validate_and_lower(&op, &input);
        }
    }

    #[test]
    fn arbitrary_values_never_panic(op in support::any_op(), input in support::input()) {
        validate_and_lower(&op, &input);
    }

    /// Near-valid inputs reach the deeper checks: a valid op on a shape with one dim changed.
    #[test]
    fn perturbed_valid_ops_never_panic(
        (op, input) in support::valid_op(),
        at in any::<prop::sample::Index>(),
        value in support::extreme_u64(),
    ) {
        let mut input = input;
        if !input.shape.is_empty() {
            let i = at.index(input.shape.len());
            input.shape[i] = value;
        }
        validate_and_lower(&op, &input);
    }
}

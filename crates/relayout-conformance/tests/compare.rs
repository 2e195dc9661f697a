//! `compare`: exact equality with the format's two exceptions (NaN matches NaN; -0.0 is not
//! 0.0, inside complex numbers too), and the per-element (per-part) tolerance.

use relayout_conformance::{compare, Mismatch};
use relayout_ir::{DType, TensorType};

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn ty(dtype: DType, n: u64) -> TensorType {
    TensorType::new(dtype, [n])
}

#[test]
fn exact_floats() {
    let t = ty(DType::F32, 3);
    let exp = f32s(&[1.0, f32::NAN, 0.0]);
    assert_eq!(
        compare(&t, &exp, &f32s(&[1.0, -f32::NAN, 0.0]), None),
        Ok(())
    );
    assert_eq!(
        compare(&t, &exp, &f32s(&[1.0, f32::NAN, -0.0]), None),
        Err(Mismatch::Element {
            index: 2,
            expected: "0.0".into(),
            got: "-0.0".into()
        })
    );
    let e = compare(&t, &exp, &f32s(&[1.0000001, f32::NAN, 0.0]), None).unwrap_err();
    assert_eq!(e.to_string(), "element 0: expected 1.0, got 1.0000001");
    assert!(compare(&t, &exp, &f32s(&[1.0, 5.0, 0.0]), None).is_err());
}

#[test]
fn complex_parts_and_signed_zeros() {
    let t = ty(DType::C64, 1);
    let exp = f32s(&[1.0, 0.0]);
    assert_eq!(compare(&t, &exp, &f32s(&[1.0, 0.0]), None), Ok(()));
    let e = compare(&t, &exp, &f32s(&[1.0, -0.0]), None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "element 0: expected [1.0, 0.0], got [1.0, -0.0]"
    );
    let t = ty(DType::C128, 1);
    let exp: Vec<u8> = [f64::NAN, 2.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(compare(&t, &exp, &exp, None), Ok(()));
    let got: Vec<u8> = [f64::NAN, 2.5]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert!(compare(&t, &exp, &got, Some((0.1, 0.0))).is_err());
    assert_eq!(compare(&t, &exp, &got, Some((0.25, 0.0))), Ok(()));
}

#[test]
fn tolerance_is_atol_plus_rtol_times_expected() {
    let t = ty(DType::F32, 2);
    let exp = f32s(&[100.0, f32::INFINITY]);
    let tol = Some((1e-3, 1e-2));
    // |got - exp| <= 0.01 + 0.001 * 100 = 0.11
    assert_eq!(
        compare(&t, &exp, &f32s(&[100.1, f32::INFINITY]), tol),
        Ok(())
    );
    assert!(compare(&t, &exp, &f32s(&[100.2, f32::INFINITY]), tol).is_err());
    assert!(compare(&t, &exp, &f32s(&[100.0, f32::MAX]), tol).is_err());
    assert!(compare(&t, &exp, &f32s(&[100.0, f32::NAN]), tol).is_err());
    // Under a tolerance the two zeros are numerically equal.
    assert_eq!(
        compare(&ty(DType::F32, 1), &f32s(&[0.0]), &f32s(&[-0.0]), tol),
        Ok(())
    );
    // f16 and bf16 compare their own values.
    let h = |x: f32| half::f16::from_f32(x).to_le_bytes().to_vec();
    assert_eq!(
        compare(
            &ty(DType::F16, 1),
            &h(1.0),
            &h(1.0 + 2f32.powi(-10)),
            Some((1e-3, 1e-3))
        ),
        Ok(())
    );
    assert!(compare(&ty(DType::F16, 1), &h(1.0), &h(1.0 + 2f32.powi(-10)), None).is_err());
}

#[test]
fn integers_are_always_exact() {
    let t = ty(DType::I64, 2);
    let exp: Vec<u8> = [i64::MIN, 5].iter().flat_map(|x| x.to_le_bytes()).collect();
    let got: Vec<u8> = [i64::MIN, 6].iter().flat_map(|x| x.to_le_bytes()).collect();
    assert_eq!(
        compare(&t, &exp, &got, Some((1.0, 1.0))),
        Err(Mismatch::Element {
            index: 1,
            expected: "5".into(),
            got: "6".into()
        })
    );
    assert!(compare(&ty(DType::Bool, 1), &[1], &[0], None).is_err());
}

#[test]
fn lengths_must_match() {
    let t = ty(DType::F32, 2);
    assert_eq!(
        compare(&t, &f32s(&[1.0, 2.0]), &f32s(&[1.0]), None),
        Err(Mismatch::Length {
            expected: 8,
            got: 4
        })
    );
    // Expected bytes that do not fit the type are a length mismatch too.
    assert!(compare(&t, &f32s(&[1.0]), &f32s(&[1.0]), None).is_err());
}

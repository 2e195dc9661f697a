//! An op name, attributes and input type of any value: `Op::from_attrs` and `relayout::lower`
//! return Ok or a typed error, never panic; small valid ops are interpreted against the reference.

#![no_main]

#[path = "../../tests/support/fuzz_bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::op_validation_bytes(data));

//! A small valid op: the JIT (in guarded buffers), the interpreter at every stage and the
//! reference implementation agree byte for byte.

#![no_main]

#[path = "../../tests/support/fuzz_bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::differential_bytes(data));

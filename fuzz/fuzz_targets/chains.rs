//! A chain of small ops composed into one kernel: the JIT (in guarded buffers), the interpreter
//! at every stage and the reference run op by op agree byte for byte.

#![no_main]

#[path = "../../tests/support/fuzz_bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::chain_differential_bytes(data));

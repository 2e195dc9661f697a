//! A random loop kernel whose accesses touch the first and last byte of each buffer: it verifies,
//! and the JIT, run in buffers flush against guard pages, matches the interpreter.

#![no_main]

#[path = "../../tests/support/fuzz_bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::tight_loops_bytes(data));

//! Any bytes, as UTF-8 text, into the IR parser: no panic, and a kernel that parses prints
//! back to itself (and, if it verifies, survives the default pipeline and the JIT).

#![no_main]

#[path = "../../tests/support/fuzz_bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::parse_ir_bytes(data));

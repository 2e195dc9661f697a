//! A random loop kernel (sometimes with a shared outer loop, sometimes with translated copies
//! of a statement): every loop pass alone, the loop part of the default pipeline, and forced
//! fusion followed by `reroll` keep it verified and keep its result, in the interpreter and in
//! the JIT in guarded buffers.

#![no_main]

#[path = "../../tests/support/fuzz_bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::loop_passes_bytes(data));

//! A printed stage of a small valid op with a few edits: text close enough to valid IR to get
//! past the lexer into the parser, the verifier and the passes.

#![no_main]

#[path = "../../tests/support/fuzz_bodies.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::parse_mutated_bytes(data));

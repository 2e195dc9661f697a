//! What code generation makes of a statement, in words, without building any code: the
//! decisions the emitters take (shuffle blocks, streaming stores, vector runs, libc calls),
//! so that a listing can say why a `copy 4 bytes` statement runs at memory speed.
//!
//! The answers come from the same decision functions the emitters call (`shuffle::plan`,
//! `function::streams_in`, the run-length thresholds of `copy.rs`, `alike::shared_with`), and
//! a test checks every answer against the CLIF that is actually generated.

use crate::copy::{self, CALL_MIN, INLINE_MAX};
use crate::shuffle;
use relayout_ir::{DType, LoopAction, LoopKernel};

/// One line on how statement `index` of `k` is compiled, e.g. `16-byte shuffle blocks: runs
/// of 4 bytes interleaved in registers, whole vectors loaded and stored`; `None` for an index
/// out of range.
///
/// ```
/// use relayout_ir::parse_loop_kernel;
///
/// let k = parse_loop_kernel(
///     "loops @k(%src: tensor<64xf32>) -> (%dst: tensor<64xf32>) {\n\
///        copy 256 bytes %dst[0] = %src[0]\n\
///      }\n",
/// )
/// .unwrap();
/// assert!(relayout_codegen::describe(&k, 0).unwrap().starts_with("a vector loop"));
/// ```
pub fn describe(k: &LoopKernel, index: usize) -> Option<String> {
    let what = describe_run(k, index)?;
    Some(match crate::alike::shared_with(k, index) {
        Some(run) => {
            let names: Vec<String> = run.iter().map(|i| i.to_string()).collect();
            format!(
                "{what}; one body for statements {} of the band (alike: only their offsets \
                 and counts differ), run for each in turn with its addresses and counts",
                names.join(", ")
            )
        }
        None => what,
    })
}

/// What [`describe`] says of one statement's runs, whether or not it shares its body.
fn describe_run(k: &LoopKernel, index: usize) -> Option<String> {
    let stmt = k.stmts.get(index)?;
    let bytes = stmt.bytes;
    if stmt.loops.iter().any(|l| l.extent == 0) {
        return Some("nothing: an empty loop".into());
    }
    let dtype = k.dst.dtype;
    if let Ok(Some(runs)) = crate::function::helper_kernel(k) {
        match runs.get(index) {
            Some(crate::HelperRuns::Sum(sums)) => {
                let terms = sums.terms(stmt).len();
                let rows = match sums.row.map(|r| r.phase_src.is_some()) {
                    Some(true) => {
                        " in rows of every other element, the two phases' vectors \
                                   interleaved"
                    }
                    Some(false) => " in rows of every other element, stored one by one",
                    None => "",
                };
                return Some(format!(
                    "sums{} of {terms} contribution{} per {} element, eight at a time in \
                     f32{rows}, each addition rounded to {}, by the JIT's sum helper over the \
                     loop nest (CLIF has no half-precision arithmetic: the code below, for \
                     object files, adds one element per helper call); every statement of the \
                     kernel runs in a helper, so the JIT compiles no code",
                    if sums.from_zero { " from +0.0" } else { "" },
                    if terms == 1 { "" } else { "s" },
                    dtype.name(),
                    dtype.name()
                ));
            }
            Some(runs @ (crate::HelperRuns::Move | crate::HelperRuns::Fill(_))) => {
                let what = if *runs == crate::HelperRuns::Move {
                    "copies"
                } else {
                    "fills"
                };
                return Some(format!(
                    "{what} of runs of {bytes} bytes with ordinary stores, by the JIT's nest \
                     helper over the loop nest: a kernel of many statements ({} or more) runs \
                     every statement in a helper and compiles no code",
                    crate::MANY_STATEMENTS
                ));
            }
            Some(crate::HelperRuns::Clear) => {
                return Some(format!(
                    "zeroes of runs of {bytes} bytes with ordinary stores (kept in cache for the \
                     sums that follow), by a helper of the JIT over the loop nest; every statement \
                     of the kernel runs in a helper, so the JIT compiles no code"
                ));
            }
            _ => {}
        }
    }
    if let Some(split) = crate::sum::reduction_split(stmt) {
        let terms = crate::sum::terms(&stmt.loops[split..]).map_or(0, |t| t.len());
        if let Some(row) = crate::phases::row(stmt, split, dtype) {
            if row.phase_src.is_none() {
                return Some(format!(
                    "sums from +0.0 of {terms} contributions of every other element: summed as \
                     whole source vectors, each lane stored on its own, never loaded"
                ));
            }
            return Some(format!(
                "sums from +0.0 of {terms} contributions over two interleaved phases: each \
                 phase summed as whole source vectors, the two interleaved by unpack shuffles \
                 and stored as whole vectors, never loaded"
            ));
        }
        // A sum of one term per single run moves like a copy (see `Body::takes_blocks`).
        if stmt.is_one_term_sum() {
            let (nest, proven) = crate::function::nest_in_band(k, index, stmt);
            if let Some(plan) = shuffle::plan(&nest, proven) {
                return Some(format!(
                    "{}, each vector added to +0.0 before it is stored (a sum from +0.0 of one \
                     term per run: -0.0 becomes +0.0)",
                    shuffle_blocks(&plan, bytes)
                ));
            }
            if matches!(dtype, DType::F16 | DType::BF16) {
                return Some(format!(
                    "sums from +0.0 of 1 contribution per {} element by bit operations (-0.0 \
                     becomes +0.0, a signalling NaN quiet), whole vectors where they fit, each \
                     run of {bytes} bytes stored once, never loaded",
                    dtype.name()
                ));
            }
        }
        if stmt.window.is_some() {
            let (from, stored) = match stmt.action {
                LoopAction::Sum => ("from +0.0 ", "stored once, never loaded"),
                _ => ("", "loaded once and stored once"),
            };
            return Some(match dtype {
                DType::F16 | DType::BF16 => format!(
                    "sums {from}of {terms} contributions per {} element (helper calls), each \
                     element only of the contributions whose windows hold it, each run of \
                     {bytes} bytes {stored}",
                    dtype.name()
                ),
                _ => format!(
                    "sums {from}of {terms} contributions in registers, each only over its window \
                     of the run (a vector the window covers in part loaded inside the window and \
                     completed by a shuffle with {}), each run of {bytes} bytes {stored}",
                    if dtype.is_integer() || dtype == DType::Bool {
                        "zeros"
                    } else {
                        "-0.0, which changes no sum"
                    }
                ),
            });
        }
        if stmt.action == LoopAction::Sum {
            return Some(match dtype {
                DType::F16 | DType::BF16 => format!(
                    "sums from +0.0 of {terms} contributions per {} element (helper calls), each \
                     run of {bytes} bytes stored once, never loaded",
                    dtype.name()
                ),
                _ => format!(
                    "sums from +0.0 of {terms} contributions in registers, each run of {bytes} \
                     bytes stored once, never loaded"
                ),
            });
        }
        return Some(match dtype {
            DType::F16 | DType::BF16 => format!(
                "sums of {terms} contributions per {} element (helper calls), each run of {bytes} \
                 bytes stored once",
                dtype.name()
            ),
            _ => format!(
                "sums of {terms} contributions in registers, each run of {bytes} bytes loaded \
                 once and stored once"
            ),
        });
    }
    if stmt.action == LoopAction::Accumulate {
        return Some(match dtype {
            DType::F16 | DType::BF16 => format!(
                "adds of {} runs of {bytes} bytes, one helper call per element",
                dtype.name()
            ),
            _ => format!("16-byte vector adds over runs of {bytes} bytes"),
        });
    }
    if let Ok(Some(runs)) = crate::function::helper_kernel(k) {
        if let Some(crate::HelperRuns::EveryOther(rows)) = runs.get(index) {
            let ahead = match rows.prefetch_rows(stmt) {
                Some(ahead) => format!(", the source prefetched {ahead} rows ahead"),
                None => String::new(),
            };
            return Some(format!(
                "rows of {count} elements gathered from every other source element by 16-byte \
                 shuffles (two source vectors loaded per destination vector) with streaming \
                 (non-temporal) stores{ahead}, one helper call for the whole loop nest: the \
                 output is too large to stay in cache; every statement of the kernel is such a \
                 call, so the JIT makes the calls itself and compiles no code",
                count = rows.count
            ));
        }
        if let Some(crate::HelperRuns::Deinterleave(rows)) = runs.get(index) {
            return Some(format!(
                "rows of {count} pixels of three byte channels into three planes {plane} bytes \
                 apart, by 32-byte shuffles (three source vectors a step, one shuffle each per \
                 plane, AVX2 where the processor has it), one helper call for the whole loop \
                 nest; every statement of the kernel is such a call, so the JIT makes the calls \
                 itself and compiles no code",
                count = rows.count,
                plane = rows.plane
            ));
        }
        if let Some(crate::HelperRuns::Interleave(rows)) = runs.get(index) {
            return Some(format!(
                "rows of {count} pixels of three byte channels from three planes {plane} bytes \
                 apart, by 32-byte shuffles (three plane vectors a step, one shuffle each per \
                 pixel vector, AVX2 where the processor has it), one helper call for the whole \
                 loop nest; every statement of the kernel is such a call, so the JIT makes the \
                 calls itself and compiles no code",
                count = rows.count,
                plane = rows.plane
            ));
        }
        if let Some(crate::HelperRuns::Transpose(blocks)) = runs.get(index) {
            return Some(format!(
                "{n}x{n} register transposes of {bytes}-byte elements ({n} source rows {} bytes \
                 apart, {n} destination rows {} bytes apart) with streaming (non-temporal) \
                 stores, one helper call for the whole loop nest: the output is too large to \
                 stay in cache; every statement of the kernel is such a call, so the JIT makes \
                 the calls itself and compiles no code",
                blocks.src_row,
                blocks.dst_row,
                n = blocks.n
            ));
        }
    }
    if streams(k, index) {
        let without_code = matches!(crate::function::helper_kernel(k), Ok(Some(_)));
        let ahead = match copy::prefetch_runs(bytes, stmt.trip_count()) {
            Some(ahead) if stmt.action == LoopAction::Copy => {
                format!(" (the source prefetched {ahead} runs ahead)")
            }
            _ => String::new(),
        };
        return Some(format!(
            "streaming (non-temporal) stores of runs of {bytes} bytes{ahead}, one helper call \
             for the whole loop nest: the output is too large to stay in cache{}",
            if without_code {
                "; every statement of the kernel is such a call, so the JIT makes the calls \
                 itself and compiles no code"
            } else {
                ""
            }
        ));
    }
    let (nest, proven) = crate::function::nest_in_band(k, index, stmt);
    if let Some(plan) = shuffle::plan(&nest, proven) {
        return Some(shuffle_blocks(&plan, bytes));
    }
    let (verb, callable) = match stmt.action {
        LoopAction::Fill { value } => {
            let pattern = copy::fill_pattern(value, dtype).to_le_bytes();
            ("stores", pattern.iter().all(|&b| b == pattern[0]))
        }
        _ => ("moves", true),
    };
    Some(if bytes >= CALL_MIN && callable {
        let call = if stmt.action == LoopAction::Copy {
            "memcpy"
        } else {
            "memset"
        };
        format!("a {call} call per run of {bytes} bytes")
    } else if bytes > INLINE_MAX {
        format!("a vector loop of 64 bytes a step per run of {bytes} bytes")
    } else if bytes >= 16 {
        format!("16-byte vector {verb} per run of {bytes} bytes")
    } else {
        format!("scalar {verb} of {bytes} bytes per run (runs shorter than a vector)")
    })
}

/// Whether statement `index` writes with streaming stores: the rule of `translate_stmt`.
fn streams(k: &LoopKernel, index: usize) -> bool {
    let stmt = &k.stmts[index];
    // Fills of a non-zero value never stream: the helper writes zeros only.
    let zero_or_copy = match stmt.action {
        LoopAction::Fill { value } => value.is_zero(),
        _ => true,
    };
    zero_or_copy && crate::function::streams_in(k, index, stmt).unwrap_or(false)
}

/// The words for a statement run as shuffle blocks by `plan`.
fn shuffle_blocks(plan: &shuffle::Plan, bytes: u64) -> String {
    if plan.reads_skipped_bytes() {
        format!(
            "16-byte shuffle blocks: runs of {bytes} bytes gathered from whole vectors loaded \
             with the skipped bytes (every load proven inside the source), packed in registers \
             and stored as whole vectors"
        )
    } else {
        format!(
            "16-byte shuffle blocks: runs of {bytes} bytes interleaved in registers, whole \
             vectors loaded and stored"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{text_target_config, translate_stmt, TextImports};
    use relayout_ir::parse_loop_kernel;

    /// Every statement's description against its generated CLIF.
    fn check(text: &str) -> Vec<String> {
        let k = parse_loop_kernel(text).unwrap();
        (0..k.stmts.len())
            .map(|i| {
                let what = describe(&k, i).unwrap();
                let func = translate_stmt(&k, i, text_target_config(), &mut TextImports).unwrap();
                let clif = func.display().to_string();
                assert_eq!(
                    what.contains("shuffle"),
                    clif.contains(" shuffle "),
                    "{what}\n{clif}"
                );
                assert_eq!(
                    what.contains("streaming"),
                    clif.contains("call "),
                    "{what}\n{clif}"
                );
                what
            })
            .collect()
    }

    #[test]
    fn descriptions_match_the_generated_code() {
        // SpaceToDepth's 8-byte runs: shuffle blocks.
        let s2d = check(
            "loops @s2d(%src: tensor<1x4x4x1xf32>) -> (%dst: tensor<1x2x2x4xf32>) {\n\
               copy 8 bytes %dst[0 + 32 * i0 + 16 * i1 + 8 * i2] = %src[0 + 32 * i0 + 8 * i1 + 16 * i2]\n\
                 for i0 in 0 to 2, i1 in 0 to 2, i2 in 0 to 2\n\
             }\n",
        );
        assert!(s2d[0].starts_with("16-byte shuffle blocks"), "{s2d:?}");
        // A 16 MiB output written in 256-byte rows: streaming stores.
        let big = check(
            "loops @big(%src: tensor<4194304xf32>) -> (%dst: tensor<4194304xf32>) {\n\
               copy 256 bytes %dst[0 + 256 * i0] = %src[0 + 256 * i0]\n\
                 for i0 in 0 to 65536\n\
             }\n",
        );
        assert!(big[0].starts_with("streaming"), "{big:?}");
        // A reversal: whole vectors, their lanes reversed.
        let reverse = check(
            "loops @reverse(%src: tensor<64xf32>) -> (%dst: tensor<64xf32>) {\n\
               copy 4 bytes %dst[0 + 4 * i0] = %src[252 - 4 * i0]\n\
                 for i0 in 0 to 64\n\
             }\n",
        );
        assert!(reverse[0].starts_with("16-byte shuffle blocks: runs of 4 bytes interleaved"));
        // A stride-2 Slice: vectors loaded with the skipped elements.
        let slice = check(
            "loops @slice(%src: tensor<4x32xf32>) -> (%dst: tensor<4x16xf32>) {\n\
               copy 4 bytes %dst[0 + 64 * i0 + 4 * i1] = %src[4 + 128 * i0 + 8 * i1]\n\
                 for i0 in 0 to 4, i1 in 0 to 16\n\
             }\n",
        );
        assert!(
            slice[0].contains("gathered from whole vectors"),
            "{slice:?}"
        );
        // Short runs written with gaps (a scatter): no whole destination vectors.
        let small = check(
            "loops @small(%src: tensor<64xf32>) -> (%dst: tensor<128xf32>) {\n\
               copy 4 bytes %dst[0 + 8 * i0] = %src[0 + 4 * i0]\n\
                 for i0 in 0 to 64\n\
             }\n",
        );
        assert!(small[0].starts_with("scalar moves of 4 bytes"), "{small:?}");
        // The even and odd columns of a stride-2 Col2Im, paired by `pair-phases`; one phase
        // alone is summed as vectors too, its lanes stored one by one.
        let paired = check(
            "loops @c(%src: tensor<4x2x4x8xf32>) -> (%dst: tensor<4x16xf32>) {\n\
               accumulate 4 bytes %dst[0 + 64 * i0 + 8 * i1 + 4 * i2] = 0 + %src[0 + 32 * i0 + 4 * i1 + 128 * i2 + 256 * i3]\n\
                 for i0 in 0 to 4, i1 in 0 to 8, i2 in 0 to 2, i3 in 0 to 2\n\
               accumulate 4 bytes %dst[0 + 64 * i0 + 8 * i1] = 0 + %src[0 + 32 * i0 + 4 * i1 + 256 * i2]\n\
                 for i0 in 0 to 4, i1 in 0 to 8, i2 in 0 to 2\n\
             }\n",
        );
        assert!(paired[0].contains("two interleaved phases"), "{paired:?}");
        assert!(paired[1].contains("every other element"), "{paired:?}");
    }
}

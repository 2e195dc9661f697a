//! `fuse-nests` on random multi-statement kernels built to share outer loops, and `reroll`
//! on the fused kernels with translated copies of their statements added: the result
//! verifies, the interpreter gives the same bytes as for the kernel before (bit for bit, float
//! accumulations included), and the JIT-compiled result, whole and forced into 2, 3 and 7
//! pieces, gives them too. Fusion is forced (`FuseNests::always`) so that these small kernels
//! fuse; the counts at the end of each test check that both outcomes occur (fused and
//! refused, merged and kept apart).

#[path = "support/fuzz_bodies.rs"]
mod bodies;

use bodies::{assert_split, random_bytes, PIECES};
use relayout::ir::{
    interpret_loops, verify_loop_kernel, AnyKernel, Band, DType, Loop, LoopAction, LoopKernel,
    LoopStmt, TensorType,
};
use relayout::Split;
use relayout_passes::{FuseNests, GroupAlike, LongRunsFirst, Pass, Reroll};

/// splitmix64, so a failing seed reproduces its kernel.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn signed(&mut self, magnitude: i64) -> i64 {
        self.below(2 * magnitude as u64 + 1) as i64 - magnitude
    }
}

/// Lowest and highest offset a nest reaches from offset 0 along `stride`.
fn reach(loops: &[Loop], stride: impl Fn(&Loop) -> i64) -> (i64, i64) {
    loops.iter().fold((0, 0), |(lo, hi), l| {
        let r = stride(l) * (l.extent as i64 - 1);
        (lo + r.min(0), hi + r.max(0))
    })
}

/// A random kernel of 2 to 5 statements, most of them starting with one shared outer loop
/// (extent `e`, destination stride `plane`), some loopless whole-range fills or copies.
fn random_kernel(rng: &mut Rng) -> LoopKernel {
    let dtype = [DType::U8, DType::F32, DType::I16, DType::F64][rng.below(4) as usize];
    let es = dtype.size() as i64;
    let e = 1 + rng.below(5);
    let plane = es * (1 + rng.below(12) as i64);
    let dst_len = (e as i64 * plane + es * rng.below(8) as i64) as u64;
    let src_len = 4096u64;
    let mut stmts = Vec::new();
    for _ in 0..2 + rng.below(4) {
        let action = [
            LoopAction::ZERO_FILL,
            LoopAction::Copy,
            LoopAction::Accumulate,
        ][rng.below(3) as usize];
        if action != LoopAction::Accumulate && rng.below(5) == 0 {
            // A whole-range run, which fusion may cut along the shared loop.
            let bytes = e * plane as u64;
            stmts.push(LoopStmt {
                action,
                bytes,
                src_offset: if action == LoopAction::Copy {
                    es * rng.below(8) as i64
                } else {
                    0
                },
                dst_offset: 0,
                loops: vec![],
                window: None,
            });
            continue;
        }
        let bytes = (es * (1 + rng.below(3) as i64)) as u64;
        let mut loops = vec![Loop {
            extent: e,
            src_stride: es * rng.signed(40),
            // Usually the shared plane stride; sometimes another, which cannot join.
            dst_stride: if rng.below(6) == 0 {
                es * rng.signed(3)
            } else {
                plane
            },
        }];
        for _ in 0..rng.below(3) {
            loops.push(Loop {
                extent: 1 + rng.below(3),
                src_stride: es * rng.signed(8),
                dst_stride: es * rng.signed(3),
            });
        }
        if action.is_fill() {
            for l in &mut loops {
                l.src_stride = 0;
            }
        }
        // Offsets that keep the nest inside both tensors when they can; a kernel that still
        // leaves them fails verification and is skipped.
        let (dlo, dhi) = reach(&loops, |l| l.dst_stride);
        let room = dst_len as i64 - (dhi - dlo) - bytes as i64;
        let dst_offset = -dlo
            + if room > 0 {
                es * rng.below((room / es + 1) as u64) as i64
            } else {
                0
            };
        let (slo, _) = reach(&loops, |l| l.src_stride);
        let src_offset = if action.is_fill() {
            0
        } else {
            -slo + es * rng.below(16) as i64
        };
        stmts.push(LoopStmt {
            action,
            bytes,
            src_offset,
            dst_offset,
            loops,
            window: None,
        });
    }
    LoopKernel {
        name: "random".into(),
        src: TensorType::new(dtype, [src_len / dtype.size()]),
        dst: TensorType::new(dtype, [dst_len / dtype.size()]),
        stmts,
        bands: vec![],
    }
}

fn fuse(k: &LoopKernel) -> LoopKernel {
    match FuseNests::always().run(AnyKernel::Loops(k.clone())) {
        Ok(AnyKernel::Loops(f)) => f,
        other => panic!("fuse-nests on\n{k}\ngave {other:?}"),
    }
}

fn reroll(k: &LoopKernel) -> LoopKernel {
    match Reroll.run(AnyKernel::Loops(k.clone())) {
        Ok(AnyKernel::Loops(f)) => f,
        other => panic!("reroll on\n{k}\ngave {other:?}"),
    }
}

fn long_runs_first(k: &LoopKernel) -> LoopKernel {
    match LongRunsFirst.run(AnyKernel::Loops(k.clone())) {
        Ok(AnyKernel::Loops(f)) => f,
        other => panic!("long-runs-first on\n{k}\ngave {other:?}"),
    }
}

/// Fuses `k` (a verified kernel) and checks the fused kernel (see [`check_pass`]). Returns
/// the fused kernel.
fn check_fused(seed: u64, k: &LoopKernel) -> LoopKernel {
    check_pass(seed, k, fuse, "fuse-nests")
}

/// Runs `pass` on `k` (a verified kernel) and checks the result: it verifies, and the
/// interpreter and the JIT, whole and forced into pieces, give the bytes `k` gives. Returns
/// the result.
fn check_pass(
    seed: u64,
    k: &LoopKernel,
    pass: fn(&LoopKernel) -> LoopKernel,
    name: &str,
) -> LoopKernel {
    let f = pass(k);
    verify_loop_kernel(&f)
        .unwrap_or_else(|e| panic!("seed {seed}: {name} made a kernel that fails:\n{e}"));
    let src = random_bytes(k.src.size_bytes().unwrap() as usize, seed);
    let dst0 = random_bytes(k.dst.size_bytes().unwrap() as usize, !seed);
    let mut want = dst0.clone();
    interpret_loops(k, &src, &mut want).unwrap();
    let mut got = dst0.clone();
    interpret_loops(&f, &src, &mut got).unwrap();
    assert!(
        got == want,
        "seed {seed}: {name} changed the result of\n{k}\ninto\n{f}"
    );
    let compiled = relayout_jit::CompiledKernel::compile(&f)
        .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{f}"));
    for pieces in PIECES {
        let mut jit = dst0.clone();
        let report = compiled
            .run_split(&src, &mut jit, Split::Pieces(pieces))
            .unwrap();
        assert_split(&report, pieces, &f);
        assert!(
            jit == want,
            "seed {seed}: JIT in {pieces} pieces differs on\n{f}"
        );
    }
    f
}

#[test]
fn fused_random_kernels_compute_what_they_computed() {
    let (mut checked, mut fused_kernels, mut refused) = (0, 0, 0);
    for seed in 0..3000u64 {
        let k = random_kernel(&mut Rng(seed));
        if verify_loop_kernel(&k).is_err() {
            continue;
        }
        checked += 1;
        let f = check_fused(seed, &k);
        if f.bands.is_empty() {
            // Not one pair fused although the statements mostly share their outer loop: the
            // analysis refused (or the loops differ).
            refused += 1;
        } else {
            fused_kernels += 1;
        }
    }
    println!("{checked} kernels verified: {fused_kernels} fused, {refused} without a band");
    assert!(checked >= 1000, "only {checked} random kernels verified");
    assert!(
        fused_kernels * 4 >= checked,
        "only {fused_kernels} of {checked} kernels fused"
    );
    assert!(
        refused * 20 >= checked,
        "only {refused} of {checked} kernels had no band"
    );
}

/// A random kernel shaped like a padded plane: a loop over `e` planes in every statement; a
/// run of two or three statements that also loop over `r` rows of the plane (the rows'
/// pieces), with one to three statements around it that loop over planes only (the top and
/// bottom rows), in half the kernels one of them between two of the rows' pieces; actions,
/// runs and offsets random, so the pieces around the rows sometimes overlap them and
/// sometimes not. Kernels that do not verify are skipped by the caller.
fn random_rows_kernel(rng: &mut Rng) -> LoopKernel {
    let dtype = [DType::U8, DType::F32, DType::I16, DType::F64][rng.below(4) as usize];
    let es = dtype.size() as i64;
    let e = 1 + rng.below(4);
    let r = 2 + rng.below(6);
    let row = es * (4 + rng.below(6) as i64);
    let plane = row * (r as i64 + 2);
    let dst_len = (e as i64 * plane) as u64;
    let src_len = 4096u64;
    let piece = |rng: &mut Rng, in_rows: bool| {
        let action = [
            LoopAction::ZERO_FILL,
            LoopAction::Copy,
            LoopAction::Accumulate,
        ][rng.below(3) as usize];
        let bytes = (es * (1 + rng.below(3) as i64)) as u64;
        let reads = !action.is_fill();
        let mut loops = vec![Loop {
            extent: e,
            src_stride: if reads { es * 64 } else { 0 },
            dst_stride: plane,
        }];
        if in_rows {
            loops.push(Loop {
                extent: r,
                src_stride: if reads { es * 8 } else { 0 },
                dst_stride: row,
            });
        } else if rng.below(2) == 0 {
            // Two rows at once (a pad of two: its top rows), a loop inside the band.
            loops.push(Loop {
                extent: 2,
                src_stride: if reads { es * 8 } else { 0 },
                dst_stride: row,
            });
        }
        // Rows start one row into the plane; the pieces around them anywhere in the plane
        // (the first or last row usually, inside the rows sometimes).
        let within = if in_rows {
            row + es * rng.below((row / es - bytes as i64 / es + 1) as u64) as i64
        } else {
            match rng.below(3) {
                0 => es * rng.below(4) as i64,
                1 => plane - row + es * rng.below(4) as i64,
                _ => es * rng.below(((plane - bytes as i64) / es) as u64) as i64,
            }
        };
        LoopStmt {
            action,
            bytes,
            src_offset: if reads { es * rng.below(8) as i64 } else { 0 },
            dst_offset: within,
            loops,
            window: None,
        }
    };
    let before = rng.below(3) as usize;
    let after = 1 + rng.below(2) as usize - usize::from(before == 2);
    let mut stmts = Vec::new();
    for _ in 0..before {
        stmts.push(piece(rng, false));
    }
    let rows = 2 + rng.below(2) as usize;
    for _ in 0..rows {
        stmts.push(piece(rng, true));
    }
    for _ in 0..after {
        stmts.push(piece(rng, false));
    }
    if rng.below(2) == 0 {
        // One piece around the rows comes between two of the rows' pieces (as a Col2Im's top
        // row comes between its rows' bodies and edges).
        let moved = stmts.pop().expect("at least one piece after the rows");
        stmts.insert(before + 1 + rng.below(rows as u64 - 1) as usize, moved);
    }
    LoopKernel {
        name: "rows".into(),
        src: TensorType::new(dtype, [src_len / dtype.size()]),
        dst: TensorType::new(dtype, [dst_len / dtype.size()]),
        stmts,
        bands: vec![],
    }
}

/// `fuse-nests` on random padded-plane kernels: where the rows' pieces become a band over
/// planes and rows (nested in the band over planes, or after a band of the others when those
/// only fill; pieces moved before the rows only when they write apart from them), the result
/// is what the unfused kernel computes, in the interpreter and in the JIT, whole and in
/// pieces. Checks that every outcome occurs: deeper bands made, nested and apart (also of
/// rows' pieces that a piece around them kept apart), and pieces that overlap the rows kept
/// after them.
#[test]
fn fused_rows_compute_what_they_computed() {
    let (mut checked, mut deeper, mut kept, mut between, mut nested, mut heavy) =
        (0, 0, 0, 0, 0, 0);
    for seed in 0..2000u64 {
        let k = random_rows_kernel(&mut Rng(seed ^ 0xfeed));
        if verify_loop_kernel(&k).is_err() {
            continue;
        }
        checked += 1;
        let f = check_fused(seed, &k);
        if f.bands
            .iter()
            .any(|b| b.depth >= 2 && b.len < f.stmts.len())
        {
            deeper += 1;
            let inner = f
                .bands
                .iter()
                .find(|b| f.bands.iter().any(|outer| outer.contains(**b)));
            if let Some(inner) = inner {
                nested += 1;
                // A member beside the nested band with a loop of its own inside the band.
                if (0..f.stmts.len())
                    .any(|i| !inner.members().contains(&i) && f.stmts[i].loops.len() >= 2)
                {
                    heavy += 1;
                }
            }
            // The rows' pieces were not consecutive: a piece around them came between.
            let in_rows: Vec<usize> = (0..k.stmts.len())
                .filter(|&i| k.stmts[i].loops.len() == 2)
                .collect();
            if in_rows.windows(2).any(|w| w[1] != w[0] + 1) {
                between += 1;
            }
        } else if f.bands.iter().any(|b| b.len == f.stmts.len()) {
            kept += 1;
        }
    }
    println!(
        "{checked} kernels verified: {deeper} with a deeper band ({nested} nested in the band \
         over planes, {heavy} of them beside members with loops of their own, {between} of \
         whose rows' pieces were apart), {kept} kept whole"
    );
    assert!(
        heavy * 20 >= nested,
        "only {heavy} of {nested} nested bands beside members with loops"
    );
    assert!(
        nested * 10 >= deeper && (deeper - nested) * 10 >= deeper,
        "{nested} of {deeper} deeper bands nested: both kinds should be common"
    );
    assert!(
        between * 4 >= deeper,
        "only {between} of {deeper} deeper bands gathered pieces that were apart"
    );
    assert!(checked >= 500, "only {checked} random kernels verified");
    assert!(
        deeper * 10 >= checked,
        "only {deeper} of {checked} got a deeper band"
    );
    assert!(
        kept * 20 >= checked,
        "only {kept} of {checked} kept one band"
    );
}

/// `k` with translated copies of some statements inserted after them, a few statements on:
/// the same statement moved by a random destination step (a few elements, so that copies
/// sometimes overlap their original or the statements between) and source step. Bands are
/// dropped; the caller fuses again.
fn with_translates(rng: &mut Rng, k: &LoopKernel) -> LoopKernel {
    let es = k.dtype().size() as i64;
    let mut stmts = k.stmts.clone();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(stmts.len() as u64) as usize;
        let base = stmts[at].clone();
        let step = (es * rng.signed(6), es * rng.signed(16));
        let mut to = at + 1;
        for j in 1..2 + rng.below(3) as i64 {
            to = (to + rng.below(2) as usize).min(stmts.len());
            let copy = LoopStmt {
                dst_offset: base.dst_offset + j * step.0,
                src_offset: if base.action.is_fill() {
                    base.src_offset
                } else {
                    base.src_offset + j * step.1
                },
                ..base.clone()
            };
            stmts.insert(to, copy);
            to += 1;
        }
    }
    LoopKernel {
        stmts,
        bands: vec![],
        ..k.clone()
    }
}

/// `long-runs-first` on fused random kernels (with translated statements, so that bands hold
/// runs of several lengths that often commute): where members move in front of shorter runs
/// (only past members that write no common byte within a band iteration, never past an
/// accumulation), the result is what the kernel before computes, in the interpreter and in
/// the JIT, whole and in pieces. Checks that both outcomes occur: members reordered, and
/// bands left as they were.
#[test]
fn reordered_random_bands_compute_what_they_computed() {
    let (mut checked, mut moved, mut kept) = (0, 0, 0);
    for seed in 0..12000u64 {
        let mut rng = Rng(seed ^ 0x10f7);
        let base = random_kernel(&mut rng);
        let k = with_translates(&mut rng, &base);
        if verify_loop_kernel(&k).is_err() {
            continue;
        }
        let fused = fuse(&k);
        if fused.bands.is_empty() {
            continue;
        }
        checked += 1;
        let sorted = check_pass(seed, &fused, long_runs_first, "long-runs-first");
        assert_eq!(sorted.bands, fused.bands, "seed {seed}: bands changed");
        if sorted.stmts != fused.stmts {
            moved += 1;
        } else {
            kept += 1;
        }
    }
    println!("{checked} banded kernels verified: {moved} with members moved, {kept} without");
    assert!(
        checked >= 500,
        "only {checked} random banded kernels verified"
    );
    assert!(
        moved * 20 >= checked,
        "only {moved} of {checked} moved members"
    );
    assert!(
        kept * 10 >= checked,
        "only {kept} of {checked} kept their order"
    );
}

/// `reroll` on fused random kernels with translated statements: where runs of translates
/// become one statement (their later members moved in front of statements only when no byte
/// is written by both within a band iteration), the result is what the kernel before
/// computes, in the interpreter and in the JIT, whole and in pieces. Checks that both
/// outcomes occur: statements merged, and translates kept apart.
#[test]
fn rerolled_random_kernels_compute_what_they_computed() {
    let (mut checked, mut merged, mut kept) = (0, 0, 0);
    // Most translated copies leave the small destination and fail verification.
    for seed in 0..12000u64 {
        let mut rng = Rng(seed ^ 0x5eed);
        let base = random_kernel(&mut rng);
        let k = with_translates(&mut rng, &base);
        if verify_loop_kernel(&k).is_err() {
            continue;
        }
        checked += 1;
        let fused = fuse(&k);
        let rolled = check_pass(seed, &fused, reroll, "reroll");
        if rolled.stmts.len() < fused.stmts.len() {
            merged += 1;
        } else {
            kept += 1;
        }
    }
    println!("{checked} kernels verified: {merged} with statements merged, {kept} without");
    assert!(checked >= 1000, "only {checked} random kernels verified");
    assert!(
        merged * 4 >= checked,
        "only {merged} of {checked} merged statements"
    );
    assert!(
        kept * 20 >= checked,
        "only {kept} of {checked} kept every statement"
    );
}

fn group_alike(k: &LoopKernel) -> LoopKernel {
    match GroupAlike.run(AnyKernel::Loops(k.clone())) {
        Ok(AnyKernel::Loops(f)) => f,
        other => panic!("group-alike on\n{k}\ngave {other:?}"),
    }
}

/// A random band shaped like a 3-D Col2Im's: over `e` planes, sometimes a fill of the whole
/// plane first, then three to seven sums (`accumulate`, or sums from +0.0) of two kinds in
/// random order. Members of one kind are alike ([`LoopStmt::alike`]): the same run, strides
/// and reduction loops, with their own offsets and their own extents of the loops outside
/// the reductions, so they sometimes overlap the members between them and sometimes not.
fn random_alike_band(rng: &mut Rng) -> LoopKernel {
    let dtype = [DType::I32, DType::F32, DType::I16, DType::F64][rng.below(4) as usize];
    let es = dtype.size() as i64;
    let e = 1 + rng.below(3);
    let plane = es * (40 + rng.below(40) as i64);
    let src_len = 8192u64;
    // Per kind, its largest member at offset 0: the shared loop, its own loops, its
    // reduction loops.
    let kinds: Vec<LoopStmt> = (0..2)
        .map(|_| {
            let mut loops = vec![Loop {
                extent: e,
                src_stride: es * rng.below(64) as i64,
                dst_stride: plane,
            }];
            for _ in 0..1 + rng.below(2) {
                loops.push(Loop {
                    extent: 2 + rng.below(5),
                    src_stride: es * rng.signed(12),
                    dst_stride: es * (1 + rng.below(12) as i64),
                });
            }
            for _ in 0..1 + rng.below(2) {
                loops.push(Loop {
                    extent: 2 + rng.below(2),
                    src_stride: es * rng.signed(24),
                    dst_stride: 0,
                });
            }
            LoopStmt {
                action: [LoopAction::Accumulate, LoopAction::Sum][rng.below(2) as usize],
                bytes: (es * (1 + rng.below(4) as i64)) as u64,
                src_offset: 0,
                dst_offset: 0,
                loops,
                window: None,
            }
        })
        .collect();
    let mut stmts = Vec::new();
    if rng.below(2) == 0 {
        stmts.push(LoopStmt {
            action: LoopAction::ZERO_FILL,
            bytes: plane as u64,
            src_offset: 0,
            dst_offset: 0,
            loops: vec![Loop {
                extent: e,
                src_stride: 0,
                dst_stride: plane,
            }],
            window: None,
        });
    }
    for _ in 0..3 + rng.below(5) {
        let mut m = kinds[rng.below(2) as usize].clone();
        for l in m.loops[1..].iter_mut().filter(|l| l.dst_stride != 0) {
            l.extent = 1 + rng.below(l.extent);
        }
        // Offsets that keep a member inside its plane and the source when they can; a kernel
        // that still leaves them fails verification and is skipped.
        let (_, dhi) = reach(&m.loops[1..], |l| l.dst_stride);
        let room = plane - dhi - m.bytes as i64;
        if room > 0 {
            m.dst_offset = es * rng.below((room / es + 1) as u64) as i64;
        }
        let (slo, _) = reach(&m.loops, |l| l.src_stride);
        m.src_offset = -slo + es * rng.below(64) as i64;
        stmts.push(m);
    }
    let len = stmts.len();
    LoopKernel {
        name: "alike".into(),
        src: TensorType::new(dtype, [src_len / dtype.size()]),
        dst: TensorType::new(dtype, [e * plane as u64 / dtype.size()]),
        stmts,
        bands: vec![Band {
            first: 0,
            len,
            depth: 1,
        }],
    }
}

/// `group-alike` on random bands of alike sums, and code generation's shared bodies on the
/// result: where members move next to an alike one (only past members that write no common
/// byte within a band iteration) and where runs of alike members go through one body with
/// their own addresses and counts, the result is what the kernel before computes, bit for
/// bit, in the interpreter and in the JIT: whole and in 2, 3 and 7 pieces, and with both
/// buffers against guard pages. Checks that every outcome occurs: members moved, bands left
/// as they were, bodies shared and not.
#[test]
fn grouped_alike_members_compute_what_they_computed() {
    let (mut checked, mut moved, mut kept, mut shared, mut apart) = (0, 0, 0, 0, 0);
    for seed in 0..3000u64 {
        let k = random_alike_band(&mut Rng(seed ^ 0xa11e));
        if verify_loop_kernel(&k).is_err() {
            continue;
        }
        checked += 1;
        let grouped = check_pass(seed, &k, group_alike, "group-alike");
        assert_eq!(grouped.bands, k.bands, "seed {seed}: bands changed");
        if grouped.stmts != k.stmts {
            moved += 1;
        } else {
            kept += 1;
        }
        let shares = (0..grouped.stmts.len()).any(|i| {
            relayout_codegen::describe(&grouped, i).is_some_and(|d| d.contains("one body"))
        });
        if shares {
            shared += 1;
            let src = random_bytes(k.src.size_bytes().unwrap() as usize, seed);
            let dst0 = random_bytes(k.dst.size_bytes().unwrap() as usize, !seed);
            let mut want = dst0.clone();
            interpret_loops(&k, &src, &mut want).unwrap();
            bodies::check_jit(&grouped, &src, dst0, &want);
        } else {
            apart += 1;
        }
    }
    println!(
        "{checked} bands verified: {moved} with members moved, {kept} without; \
         {shared} sharing a body, {apart} not"
    );
    assert!(checked >= 1000, "only {checked} random bands verified");
    for (count, what) in [
        (moved, "moved members"),
        (kept, "kept their order"),
        (shared, "shared a body"),
        (apart, "shared no body"),
    ] {
        assert!(count * 10 >= checked, "only {count} of {checked} {what}");
    }
}

//! The upscaling step of a super-resolution network (ESPCN, Real-ESRGAN's x4 head):
//! PyTorch's `pixel_shuffle`, which is ONNX DepthToSpace in CRD mode, on a 480x270 feature map
//! of 48 channels becoming a 1920x1080 image of 3. The time per call is compared with a memcpy
//! of the same bytes, the practical limit of any relayout.
//!
//! ```text
//! cargo run --release --example pixel_shuffle
//! ```

use relayout::ir::{DType, TensorType};
use relayout::{compile, DataFormat, DepthToSpaceMode, Op};
use std::time::{Duration, Instant};

const RUNS: usize = 20;

fn main() -> Result<(), relayout::Error> {
    let op = Op::DepthToSpace {
        block_size: 4,
        data_format: DataFormat::Nchw,
        mode: DepthToSpaceMode::Crd,
    };
    let input = TensorType::new(DType::F32, [1, 48, 270, 480]);
    let start = Instant::now();
    let kernel = compile(&op, &input)?;
    let compile_time = start.elapsed();
    println!("{} on {input} -> {}", op.name(), kernel.output_type());
    println!("compiled in {:.2} ms", ms(compile_time));
    println!("loop IR:\n{}", kernel.stages().loops);

    let src: Vec<f32> = (0..48 * 270 * 480).map(|i| i as f32).collect();
    let mut dst = vec![0.0f32; src.len()];
    // The first run pays for the page faults of `dst`; it is not counted.
    kernel.run_typed(&src, &mut dst)?;
    let per_call = best_of(|| kernel.run_typed(&src, &mut dst).map(|_| ()))?;

    // Spot check against the definition: output (c, y, x) is input channel
    // c * 16 + (y % 4) * 4 + x % 4 at (y / 4, x / 4).
    let (c, y, x) = (2, 1001, 1503);
    let want = src[((c * 16 + (y % 4) * 4 + x % 4) * 270 + y / 4) * 480 + x / 4];
    assert_eq!(dst[(c * 1080 + y) * 1920 + x], want);

    let mut copy = vec![0.0f32; src.len()];
    copy.copy_from_slice(&src);
    // black_box on both ends, or an optimised build sees a copy nobody reads and drops it.
    let memcpy = best_of(|| {
        std::hint::black_box(&mut copy[..]).copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&copy);
        Ok(())
    })?;

    let mb = (src.len() * 4) as f64 / 1e6;
    println!("{mb:.1} MB in, {mb:.1} MB out; best of {RUNS} runs:");
    println!(
        "  kernel {:>7.3} ms per call ({:.1} GB/s read + write)",
        ms(per_call),
        2.0 * mb / 1e3 / per_call.as_secs_f64()
    );
    println!(
        "  memcpy {:>7.3} ms for the same bytes ({:.1} GB/s)",
        ms(memcpy),
        2.0 * mb / 1e3 / memcpy.as_secs_f64()
    );
    println!(
        "  kernel / memcpy = {:.2}",
        per_call.as_secs_f64() / memcpy.as_secs_f64()
    );
    Ok(())
}

/// The fastest of `RUNS` calls: the least disturbed by the rest of the machine.
fn best_of(
    mut f: impl FnMut() -> Result<(), relayout::Error>,
) -> Result<Duration, relayout::Error> {
    let mut best = Duration::MAX;
    for _ in 0..RUNS {
        let start = Instant::now();
        f()?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

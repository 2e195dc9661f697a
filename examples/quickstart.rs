//! Compile one op for one input type, run it, and print the IR of every stage.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use relayout::ir::{DType, TensorType};
use relayout::{compile, DataFormat, DepthToSpaceMode, Op};

fn main() -> Result<(), relayout::Error> {
    // PyTorch's pixel_shuffle: DepthToSpace in NCHW with the column-row-depth channel order.
    let op = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nchw,
        mode: DepthToSpaceMode::Crd,
    };
    let input = TensorType::new(DType::F32, [1, 8, 2, 3]);
    let kernel = compile(&op, &input)?;
    println!("{} on {input} -> {}\n", op.name(), kernel.output_type());

    let src: Vec<f32> = (0..48).map(|i| i as f32).collect();
    let mut dst = vec![0.0f32; 48];
    kernel.run_typed(&src, &mut dst)?;
    println!(
        "input channels 0..4 at pixel (0, 0): {:?}",
        [src[0], src[6], src[12], src[18]]
    );
    println!("output channel 0, rows 0 and 1:");
    println!("  {:?}", &dst[0..6]);
    println!("  {:?}\n", &dst[6..12]);

    let stages = kernel.stages();
    println!(
        "// ----- lowered: the op's definition ----- //\n{}",
        stages.lowered
    );
    println!(
        "// ----- after the index-map passes ----- //\n{}",
        stages.optimized
    );
    println!(
        "// ----- loop IR: what is compiled ----- //\n{}",
        stages.loops
    );
    println!("movement: {}", kernel.movement());
    Ok(())
}

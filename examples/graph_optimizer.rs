//! What a graph optimizer asks relayout about a chain of layout ops: what each op does with
//! the bytes (a view? a slice? a transpose? a gather?), and what composing the chain saves.
//!
//! ```text
//! cargo run --example graph_optimizer
//! ```

use relayout::ir::{DType, TensorType};
use relayout::{compile, compile_chain, DataFormat, DepthToSpaceMode, Movement, Op};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let image = TensorType::new(DType::F32, [1, 62, 62, 32]);
    let pads = vec![vec![1, 1], vec![1, 1]];
    let s2b = Op::SpaceToBatchNd {
        block_shape: vec![2, 2],
        paddings: pads.clone(),
    };
    let s2d = Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::Nhwc,
    };
    let d2s = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nhwc,
        mode: DepthToSpaceMode::Dcr,
    };
    let b2s = Op::BatchToSpaceNd {
        block_shape: vec![2, 2],
        crops: pads,
    };

    // The space-to-batch trick of dilated convolutions (DeepLab) with the convolution taken
    // out, as a graph looks once other passes have removed what sat between the ops: every
    // op undoes the one before it.
    optimize(
        "a round trip that cancels out",
        &[s2b.clone(), s2d.clone(), d2s, b2s],
        &image,
    )?;
    // Pad and split the image into a batch of blocks, then fold each block's pixels into
    // channels: two gathers that become one.
    optimize("space-to-batch, then space-to-depth", &[s2b, s2d], &image)?;
    Ok(())
}

/// Asks what each op of `chain` does, composes it into one kernel, and compares the traffic.
fn optimize(
    title: &str,
    chain: &[Op],
    input: &TensorType,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("== {title}");
    let mut ty = input.clone();
    let mut one_by_one = 0u64;
    for op in chain {
        let kernel = compile(op, &ty)?;
        println!("  {:<15} {ty} -> {}", op.name(), kernel.output_type());
        println!("  {:<15} {}", "", describe(&kernel.movement()));
        one_by_one += kernel.bytes_moved();
        ty = kernel.output_type().clone();
    }
    let composed = compile_chain(chain, input)?;
    println!("  composed        {input} -> {}", composed.output_type());
    println!("  {:<15} {}", "", describe(&composed.movement()));
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "  bytes moved:    {:.2} MB one op at a time, {:.2} MB composed ({:.1}x less){}\n",
        mb(one_by_one),
        mb(composed.bytes_moved()),
        one_by_one as f64 / composed.bytes_moved().max(1) as f64,
        if composed.movement() == Movement::NoMovement {
            ", and 0 MB as a view"
        } else {
            ""
        }
    );
    Ok(())
}

/// One line a graph pass could act on.
fn describe(m: &Movement) -> String {
    match m {
        Movement::NoMovement => "moves nothing: replace it by a reshape (a view)".into(),
        Movement::ContiguousCopy {
            src_offset,
            dst_offset,
            bytes,
        } => format!("copies {bytes} contiguous bytes from offset {src_offset} to {dst_offset}"),
        Movement::Permutation { shape, perm } => {
            format!("a transpose: reshape to {shape:?}, transpose {perm:?}")
        }
        Movement::StridedView {
            offset,
            shape,
            strides,
        } => format!(
            "a strided view: as_strided(input, offset {offset}, shape {shape:?}, strides \
             {strides:?}), no copy where strided views exist"
        ),
        Movement::Gather {
            statements, fills, ..
        } => format!("a gather: {statements} loop nests, {fills} of them fills"),
        other => other.to_string(),
    }
}

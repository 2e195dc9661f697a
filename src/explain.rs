//! Pictures of what an op does: [`explain_svg`] draws the input and the output of an op (or a
//! fused chain of ops) on a small shape as grids of elements, each output element coloured and
//! labelled by the input element it comes from.
//!
//! The picture is computed, not derived from the IR: the op is compiled for the same shape
//! with 32-bit unsigned elements and run on an input whose elements are their own flat index
//! plus one, so every output element holds the index of its source (0 for padding). Copies do
//! not depend on the element type, so this is exactly what the op does to any dtype. Col2Im
//! sums overlapping blocks instead, so it is run on an input of ones, and each output element
//! shows how many input elements were added into it, as a heat map.
//!
//! It does not draw large tensors: shapes beyond [`MAX_DRAWN_ELEMENTS`] elements are refused
//! with an error that says so, since a picture of thousands of cells explains nothing.

use crate::{compile, compile_chain, Error, Op};
use relayout_ir::{DType, TensorType};
use std::fmt::Write;

/// The most elements of one tensor (input or output) [`explain_svg`] draws.
pub const MAX_DRAWN_ELEMENTS: u64 = 2048;

/// Side of one element's square, in pixels.
const CELL: u64 = 30;
/// Space between two planes, and the height of a plane's caption.
const GAP: u64 = 16;
/// Margin around the picture and above each tensor's title.
const MARGIN: u64 = 20;
/// Width of one character of the 10-pixel monospace captions (6 pixels in common fonts; a
/// little more, so that text never runs into the next plane).
const CHAR_WIDTH: u64 = 7;

/// An SVG picture of what `ops`, applied one after another to a tensor of type `input`, do
/// with its elements (one op is a chain of one). Each tensor is drawn as a grid of 2-D planes
/// (its last two dims; the leading dims index the planes, a 4-D tensor's first dim down and
/// second dim across). Every input element has its own colour and is labelled with its flat
/// index; every output element takes the colour and label of the input element it comes
/// from, or is grey and labelled `pad` where the op writes padding. For Col2Im, output
/// elements are labelled and shaded by how many input elements are summed into them.
///
/// Refuses tensors of more than [`MAX_DRAWN_ELEMENTS`] elements, and chains that
/// [`compile_chain`] refuses.
///
/// ```
/// use relayout::ir::{DType, TensorType};
/// use relayout::{explain_svg, DataFormat, Op};
///
/// let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let svg = explain_svg(&[op], &TensorType::new(DType::F32, [1, 2, 2, 1]))?;
/// assert!(svg.starts_with("<svg"));
/// // Output element 1 comes from input element 1 (flat index, row-major).
/// assert!(svg.contains(">1</text>"));
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn explain_svg(ops: &[Op], input: &TensorType) -> Result<String, Error> {
    let name = ops
        .iter()
        .map(|op| op.name())
        .collect::<Vec<_>>()
        .join(" then ");
    let indexed = TensorType::new(DType::U32, input.shape.clone());
    let too_large = |what: &str, ty: &TensorType| -> Result<usize, Error> {
        let n = ty
            .num_elements()
            .map_err(|e| Error::Options(e.to_string()))?;
        if n > MAX_DRAWN_ELEMENTS {
            return Err(Error::Options(format!(
                "{name} on {input}: the {what} ({ty}) has {n} elements, too many to draw (at \
                 most {MAX_DRAWN_ELEMENTS}); explain the op on a smaller shape"
            )));
        }
        Ok(n as usize)
    };
    let n_in = too_large("input", &indexed)?;
    let col2im = matches!(ops, [Op::Col2Im { .. }]);
    let src: Vec<u8> = (0..n_in as u32)
        .flat_map(|i| if col2im { 1 } else { i + 1 }.to_le_bytes())
        .collect();
    let (output, bytes) = match ops {
        [op] => {
            let kernel = compile(op, &indexed)?;
            let out = kernel.output_type().clone();
            too_large("output", &out)?;
            (out, kernel.run_to_vec(&src)?)
        }
        _ => {
            let kernel = compile_chain(ops, &indexed)?;
            let out = kernel.output_type().clone();
            too_large("output", &out)?;
            (out, kernel.run_to_vec(&src)?)
        }
    };
    let values: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let in_shown = TensorType::new(input.dtype, input.shape.clone());
    let out_shown = TensorType::new(input.dtype, output.shape.clone());
    Ok(render(&name, &in_shown, &out_shown, &values, n_in, col2im))
}

/// Where the planes of one tensor go: `rows` x `cols` planes of `h` x `w` cells.
struct Layout {
    shape: Vec<u64>,
    rows: u64,
    cols: u64,
    h: u64,
    w: u64,
}

impl Layout {
    fn of(shape: &[u64]) -> Layout {
        let r = shape.len();
        let (h, w) = match r {
            0 => (1, 1),
            1 => (1, shape[0]),
            _ => (shape[r - 2], shape[r - 1]),
        };
        let lead = &shape[..r.saturating_sub(2)];
        let (rows, cols) = match lead {
            [] => (1, 1),
            [.., last] => (lead[..lead.len() - 1].iter().product(), *last),
        };
        Layout {
            shape: shape.to_vec(),
            rows,
            cols,
            h,
            w,
        }
    }

    /// A plane's slot: its cells, or its caption where that is wider (a plane of one column).
    fn plane_width(&self) -> u64 {
        let last = (self.rows * self.cols).saturating_sub(1);
        let caption = self.plane_caption(last).len() as u64 * CHAR_WIDTH + 4;
        (self.w * CELL).max(caption)
    }

    fn plane_height(&self) -> u64 {
        GAP + self.h * CELL
    }

    fn width(&self) -> u64 {
        self.cols * self.plane_width() + self.cols.saturating_sub(1) * GAP
    }

    fn height(&self) -> u64 {
        self.rows * self.plane_height() + self.rows.saturating_sub(1) * GAP
    }

    /// The caption of plane `p` (row-major over the leading dims): its index, `[0, 1, :, :]`.
    fn plane_caption(&self, p: u64) -> String {
        let r = self.shape.len();
        let lead = &self.shape[..r.saturating_sub(2)];
        let mut index = vec![0u64; lead.len()];
        let mut rest = p;
        for (i, &d) in lead.iter().enumerate().rev() {
            index[i] = rest % d.max(1);
            rest /= d.max(1);
        }
        let mut parts: Vec<String> = index.iter().map(|i| i.to_string()).collect();
        parts.extend(std::iter::repeat_n(":".to_string(), r.min(2)));
        format!("[{}]", parts.join(", "))
    }
}

/// A colour of its own for each input element: hues a golden angle apart, so that neighbours
/// differ clearly.
fn element_colour(index: u64) -> String {
    let hue = (index as f64 * 137.507_764) % 360.0;
    format!("hsl({hue:.0},70%,78%)")
}

/// Light (few contributions) to dark orange (the most).
fn heat_colour(count: u32, max: u32) -> String {
    let t = if max == 0 {
        0.0
    } else {
        count as f64 / max as f64
    };
    format!("hsl(25,90%,{:.0}%)", 96.0 - 46.0 * t)
}

fn render(
    name: &str,
    input: &TensorType,
    output: &TensorType,
    values: &[u32],
    n_in: usize,
    col2im: bool,
) -> String {
    let lin = Layout::of(&input.shape);
    let lout = Layout::of(&output.shape);
    let title_h = 20;
    let caption = if col2im {
        "each output element: how many input elements are summed into it"
    } else {
        "each output element: the flat index of the input element it comes from"
    };
    let text_width = caption.len().max(name.len() * 2) as u64 * CHAR_WIDTH;
    let width = 2 * MARGIN + lin.width().max(lout.width()).max(text_width);
    let in_top = MARGIN + 2 * title_h;
    let out_top = in_top + lin.height() + MARGIN + title_h;
    let height = out_top + lout.height() + MARGIN;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"monospace\" font-size=\"10\">\n\
         <title>{name}: {input} -> {output}</title>\n\
         <rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>\n\
         <text x=\"{MARGIN}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{name}</text>\n\
         <text x=\"{MARGIN}\" y=\"{}\" fill=\"#555\">{caption}</text>\n",
        MARGIN + 4,
        MARGIN + title_h,
        input = xml(&input.to_string()),
        output = xml(&output.to_string()),
    );
    let max = values.iter().copied().max().unwrap_or(0);
    draw(&mut svg, "input", input, &lin, in_top, |i| {
        (element_colour(i), i.to_string())
    });
    draw(&mut svg, "output", output, &lout, out_top, |i| {
        let v = values[i as usize];
        if col2im {
            (heat_colour(v, max), v.to_string())
        } else if v == 0 || v as usize > n_in {
            ("#d9d9d9".to_string(), "pad".to_string())
        } else {
            (element_colour(u64::from(v - 1)), (v - 1).to_string())
        }
    });
    svg.push_str("</svg>\n");
    svg
}

/// One tensor's title and planes, from `top`; `cell(i)` is the fill and label of flat index i.
fn draw(
    svg: &mut String,
    what: &str,
    ty: &TensorType,
    layout: &Layout,
    top: u64,
    cell: impl Fn(u64) -> (String, String),
) {
    let _ = writeln!(
        svg,
        "<g id=\"{what}\">\n<text x=\"{MARGIN}\" y=\"{}\" font-size=\"12\">{what}: {}</text>",
        top - 6,
        xml(&ty.to_string())
    );
    let per_plane = layout.h * layout.w;
    for p in 0..layout.rows * layout.cols {
        let x0 = MARGIN + (p % layout.cols) * (layout.plane_width() + GAP);
        let y0 = top + (p / layout.cols) * (layout.plane_height() + GAP);
        let _ = writeln!(
            svg,
            "<text x=\"{x0}\" y=\"{}\" fill=\"#555\">{}</text>",
            y0 + GAP - 4,
            layout.plane_caption(p)
        );
        for e in 0..per_plane {
            let (r, c) = (e / layout.w, e % layout.w);
            let (x, y) = (x0 + c * CELL, y0 + GAP + r * CELL);
            let (fill, label) = cell(p * per_plane + e);
            let _ = writeln!(
                svg,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{CELL}\" height=\"{CELL}\" fill=\"{fill}\" \
                 stroke=\"#888\" stroke-width=\"0.5\"/><text x=\"{}\" y=\"{}\" \
                 text-anchor=\"middle\">{label}</text>",
                x + CELL / 2,
                y + CELL / 2 + 4
            );
        }
    }
    svg.push_str("</g>\n");
}

/// Escapes the characters XML gives a meaning (tensor types contain `<` and `>`).
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

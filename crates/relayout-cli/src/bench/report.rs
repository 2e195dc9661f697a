//! Formatting results: the table, the JSON lines and the notes under the table.

use super::measure::{Order, Timing};
use std::time::Duration;

/// Everything measured for one case.
pub struct CaseResult {
    pub name: String,
    /// Col2Im reads far more than it writes, so its throughput counts input bytes too.
    pub counts_input: bool,
    pub in_bytes: u64,
    pub out_bytes: u64,
    pub compile: CompileTimes,
    pub timing: Timing,
}

/// `relayout::compile` of a case (op -> callable).
pub struct CompileTimes {
    /// The median of several compiles, each with an empty kernel cache.
    pub median: Duration,
    /// The first of them, right after the previous case's kernel ran.
    pub first: Duration,
    /// The same call once more without emptying the cache (a hit).
    pub hit: Duration,
}

impl CaseResult {
    /// Kernel time over the time memcpy takes to move as many bytes. For most ops that is
    /// memcpy of the output bytes, timed beside the kernel. Col2Im reads far more than it
    /// writes (`block_shape` times over), so its kernel is compared with memcpy moving the bytes
    /// it reads and writes at the measured memcpy rate: 1.00 means memcpy's speed either way.
    fn ratio(&self) -> f64 {
        if self.counts_input {
            // memcpy reads and writes `out_bytes` in `memcpy_ns`: 2 * out_bytes moved.
            let memcpy_ns_for_bytes_moved = self.timing.memcpy_ns
                * (self.in_bytes + self.out_bytes) as f64
                / (2 * self.out_bytes.max(1)) as f64;
            self.timing.kernel_ns / memcpy_ns_for_bytes_moved
        } else {
            self.timing.kernel_ns / self.timing.memcpy_ns
        }
    }

    /// GB/s of the bytes the case counts (bytes per nanosecond is GB/s).
    fn gb_per_s(&self) -> f64 {
        let bytes = self.out_bytes + if self.counts_input { self.in_bytes } else { 0 };
        bytes as f64 / self.timing.kernel_ns
    }
}

/// The narrowest case column; a longer name widens it (see [`case_width`]).
const CASE_WIDTH: usize = 26;

/// The width of the case column for these names: the longest of them, at least
/// [`CASE_WIDTH`], so that every row of one table lines up.
pub fn case_width<'a>(names: impl IntoIterator<Item = &'a str>) -> usize {
    names
        .into_iter()
        .map(|n| n.chars().count())
        .fold(CASE_WIDTH, usize::max)
}

pub fn header(width: usize) -> String {
    format!(
        "{:<width$} {:>10} {:>10} {:>8} {:>8} {:>10} {:>10} {:>10} {:>6}",
        "case", "kernel", "memcpy", "ratio", "GB/s", "compile", "first", "again", "reps"
    )
}

pub fn row(r: &CaseResult, width: usize) -> String {
    let mark = if r.counts_input { "*" } else { "" };
    format!(
        "{:<width$} {:>10} {:>10} {:>8} {:>8} {:>10} {:>10} {:>10} {:>6}",
        r.name,
        duration(r.timing.kernel_ns),
        duration(r.timing.memcpy_ns),
        format!("{:.2}{mark}", r.ratio()),
        format!("{:.2}{mark}", r.gb_per_s()),
        duration(r.compile.median.as_nanos() as f64),
        duration(r.compile.first.as_nanos() as f64),
        duration(r.compile.hit.as_nanos() as f64),
        r.timing.reps,
    )
}

/// The machine-readable line; the key order is part of the format (new keys go at the end).
pub fn json_line(r: &CaseResult, threads: usize) -> String {
    format!(
        "{{\"case\": {}, \"median_ns\": {}, \"compile_ns\": {}, \"memcpy_ns\": {}, \
         \"threads\": {threads}, \"reps\": {}, \"ratio\": {:.4}, \"compile_first_ns\": {}}}",
        serde_json::Value::String(r.name.clone()),
        r.timing.kernel_ns.round() as u64,
        r.compile.median.as_nanos(),
        r.timing.memcpy_ns.round() as u64,
        r.timing.reps,
        r.ratio(),
        r.compile.first.as_nanos(),
    )
}

/// The explanations printed under the table.
pub fn notes(results: &[CaseResult], threads: usize, order: Order) -> Vec<String> {
    let order = match order {
        Order::Interleaved => "interleaved",
        Order::BackToBack => "each timed back to back (--back-to-back)",
    };
    let mut notes = vec![
        format!("ratio = kernel time / memcpy time of the same output bytes (1.00 = memcpy speed; lower is better); both on {threads} thread(s), {order}."),
        format!("compile = relayout::compile of the case (op -> callable) with an empty kernel cache, the median of {} such compiles; first = the first of them, right after the previous case's kernel filled the CPU caches with its data; again = the same call once more without emptying the cache.", crate::bench::COMPILE_MISSES),
    ];
    if results.iter().any(|r| r.counts_input) {
        notes.push("* Col2Im reads more bytes than it writes: its GB/s counts input + output bytes, and its ratio is kernel time / the time memcpy takes to read and write as many bytes at the rate measured beside it.".into());
        notes.extend(
            results
                .iter()
                .filter(|r| r.counts_input)
                .map(bandwidth_note),
        );
    }
    notes.extend(cache_note(results));
    notes.extend(
        results
            .iter()
            .filter(|r| r.timing.inner > 1)
            .map(per_call_note),
    );
    notes
}

/// A Col2Im case's bytes and rates: what its ratio is made of.
fn bandwidth_note(r: &CaseResult) -> String {
    // Bytes read and written per nanosecond (GB/s) by memcpy: it reads and writes out_bytes.
    let memcpy = 2.0 * r.out_bytes as f64 / r.timing.memcpy_ns;
    let kernel = (r.in_bytes + r.out_bytes) as f64 / r.timing.kernel_ns;
    format!(
        "{}: reads {} and writes {} bytes at {:.2} GB/s; memcpy reads and writes at {:.2} GB/s.",
        r.name, r.in_bytes, r.out_bytes, kernel, memcpy
    )
}

/// Whether the repeated compile was a cache hit, judged from the times rather than assumed,
/// so the note stays true if the facade's caching changes.
fn cache_note(results: &[CaseResult]) -> Option<String> {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    if results.is_empty() {
        return None;
    }
    let ratio = median(
        results
            .iter()
            .map(|r| r.compile.hit.as_secs_f64() / r.compile.median.as_secs_f64().max(1e-12))
            .collect(),
    );
    let miss_us = median(
        results
            .iter()
            .map(|r| r.compile.median.as_secs_f64() * 1e6)
            .collect(),
    );
    let again_us = median(
        results
            .iter()
            .map(|r| r.compile.hit.as_secs_f64() * 1e6)
            .collect(),
    );
    Some(if ratio < 0.1 {
        format!("compile cache: a miss took {miss_us:.0} us and a hit {again_us:.1} us (medians over the cases; a hit costs {:.2}% of a miss).", ratio * 100.0)
    } else {
        format!("compile cache: none seen; a repeated compile took {:.0}% of the first (median), so it redid the work and there is no cache-hit time to report.", ratio * 100.0)
    })
}

fn per_call_note(r: &CaseResult) -> String {
    format!(
        "{}: {:.0} ns per call of CompiledOp::run (memcpy of its {} bytes: {:.0} ns), timed in batches of {} calls.",
        r.name, r.timing.kernel_ns, r.out_bytes, r.timing.memcpy_ns, r.timing.inner
    )
}

/// A time in nanoseconds in the unit that reads best (ns, us, ms or s), with three or four
/// significant digits, so both 15 ns and 120 ms read well.
fn duration(ns: f64) -> String {
    let (value, unit) = if !ns.is_finite() || ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "us")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str) -> CaseResult {
        CaseResult {
            name: name.into(),
            counts_input: false,
            in_bytes: 1000,
            out_bytes: 1000,
            compile: CompileTimes {
                median: Duration::from_micros(300),
                first: Duration::from_micros(700),
                hit: Duration::from_micros(250),
            },
            timing: Timing {
                kernel_ns: 2000.4,
                memcpy_ns: 1000.0,
                reps: 5,
                inner: 64,
            },
        }
    }

    #[test]
    fn json_line_is_exact() {
        assert_eq!(
            json_line(&result("a\"b"), 2),
            format!(
                r#"{{"case": "a\"b", "median_ns": 2000, "compile_ns": 300000, "memcpy_ns": 1000, "threads": 2, "reps": {}, "ratio": 2.0004, "compile_first_ns": 700000}}"#,
                result("x").timing.reps
            )
        );
    }

    #[test]
    fn row_and_notes() {
        let r = result("s2d_tiny");
        assert!(row(&r, CASE_WIDTH).contains(" 2.00 "));
        let notes = notes(&[r], 1, Order::Interleaved);
        assert!(notes
            .iter()
            .any(|n| n.starts_with("compile cache: none seen")));
        let mut hit = result("hit");
        hit.compile.hit = Duration::from_micros(2);
        assert!(super::notes(&[hit], 1, Order::Interleaved)
            .iter()
            .any(|n| n.starts_with("compile cache: a miss took 300 us and a hit 2.0 us")));
        assert!(notes
            .iter()
            .any(|n| n.starts_with("s2d_tiny: 2000 ns per call")));
    }

    #[test]
    fn long_names_widen_the_case_column() {
        let long = result("Slice:tensor<8x64x128x128xf32>");
        let width = case_width(["s2d_tiny", long.name.as_str()]);
        assert_eq!(width, long.name.len());
        assert_eq!(case_width(["s2d_tiny"]), CASE_WIDTH);
        // Every column starts at the same offset in the header and in each row.
        let header = header(width);
        let kernel_end = header.find("kernel").unwrap() + "kernel".len();
        for r in [result("s2d_tiny"), long] {
            let row = row(&r, width);
            assert_eq!(row.len(), header.len(), "{header}\n{row}");
            assert_eq!(&row[kernel_end - 3..kernel_end], " us", "{header}\n{row}");
        }
    }

    #[test]
    fn adaptive_units() {
        assert_eq!(duration(15.24), "15.24 ns");
        assert_eq!(duration(1234.5), "1.234 us");
        assert_eq!(duration(3_210_000.0), "3.210 ms");
        assert_eq!(duration(123_456_000.0), "123.5 ms");
        assert_eq!(duration(2.5e9), "2.500 s");
    }

    #[test]
    fn col2im_ratio_is_against_the_bytes_it_moves() {
        // Reads 9 times what it writes: memcpy would take (9 + 1) / 2 = 5 times its time for
        // the output bytes to move as many.
        let mut r = result("col2im");
        r.counts_input = true;
        r.in_bytes = 9000;
        r.timing.kernel_ns = 10_000.0;
        assert!((r.ratio() - 2.0).abs() < 1e-9, "{}", r.ratio());
        assert!(
            row(&r, CASE_WIDTH).contains(" 2.00* "),
            "{}",
            row(&r, CASE_WIDTH)
        );
        let notes = notes(&[r], 1, Order::Interleaved);
        assert!(notes
            .iter()
            .any(|n| n.starts_with("col2im: reads 9000 and writes 1000 bytes")));
    }
}

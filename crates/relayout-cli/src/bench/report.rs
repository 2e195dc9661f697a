//! Formatting results: the table, the JSON lines and the notes under the table.

use super::measure::Timing;
use std::time::Duration;

/// Everything measured for one case.
pub struct CaseResult {
    pub name: String,
    /// Col2Im reads far more than it writes, so its throughput counts input bytes too.
    pub counts_input: bool,
    pub in_bytes: u64,
    pub out_bytes: u64,
    /// The first `relayout::compile` of the case, with an empty kernel cache.
    pub compile: Duration,
    /// The same call once more, right after (a cache hit).
    pub recompile: Duration,
    pub timing: Timing,
}

impl CaseResult {
    fn ratio(&self) -> f64 {
        self.timing.kernel_ns / self.timing.memcpy_ns
    }

    /// GB/s of the bytes the case counts (bytes per nanosecond is GB/s).
    fn gb_per_s(&self) -> f64 {
        let bytes = self.out_bytes + if self.counts_input { self.in_bytes } else { 0 };
        bytes as f64 / self.timing.kernel_ns
    }
}

const CASE_WIDTH: usize = 26;

pub fn header() -> String {
    format!(
        "{:<CASE_WIDTH$} {:>12} {:>12} {:>8} {:>8} {:>11} {:>9} {:>6}",
        "case", "kernel ms", "memcpy ms", "ratio", "GB/s", "compile ms", "again us", "reps"
    )
}

pub fn row(r: &CaseResult) -> String {
    let mark = if r.counts_input { "*" } else { "" };
    format!(
        "{:<CASE_WIDTH$} {:>12} {:>12} {:>8.2} {:>8} {:>11.3} {:>9.1} {:>6}",
        r.name,
        significant(r.timing.kernel_ns / 1e6),
        significant(r.timing.memcpy_ns / 1e6),
        r.ratio(),
        format!("{:.2}{mark}", r.gb_per_s()),
        r.compile.as_secs_f64() * 1e3,
        r.recompile.as_secs_f64() * 1e6,
        r.timing.reps,
    )
}

/// The machine-readable line; the key order is part of the format (new keys go at the end).
pub fn json_line(r: &CaseResult, threads: usize) -> String {
    format!(
        "{{\"case\": {}, \"median_ns\": {}, \"compile_ns\": {}, \"memcpy_ns\": {}, \
         \"threads\": {threads}, \"reps\": {}, \"ratio\": {:.4}}}",
        serde_json::Value::String(r.name.clone()),
        r.timing.kernel_ns.round() as u64,
        r.compile.as_nanos(),
        r.timing.memcpy_ns.round() as u64,
        r.timing.reps,
        r.ratio(),
    )
}

/// The explanations printed under the table.
pub fn notes(results: &[CaseResult], threads: usize) -> Vec<String> {
    let mut notes = vec![
        format!("ratio = kernel time / memcpy time of the same output bytes (1.00 = memcpy speed; lower is better); both on {threads} thread(s), interleaved."),
        "compile = relayout::compile of the case (op -> callable) with an empty kernel cache; again = the same call repeated right after, in microseconds.".to_string(),
    ];
    if results.iter().any(|r| r.counts_input) {
        notes.push("* Col2Im: GB/s counts input + output bytes; its memcpy reference copies only the output bytes, so its ratio is naturally far above 1.".into());
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

/// A Col2Im case's throughput against memcpy's: bytes read and written per second by the
/// kernel over bytes copied per second by memcpy.
fn bandwidth_note(r: &CaseResult) -> String {
    let memcpy = r.out_bytes as f64 / r.timing.memcpy_ns;
    format!(
        "{}: {:.2} GB/s of input + output = {:.2}x memcpy's {:.2} GB/s.",
        r.name,
        r.gb_per_s(),
        r.gb_per_s() / memcpy,
        memcpy
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
            .map(|r| r.recompile.as_secs_f64() / r.compile.as_secs_f64().max(1e-12))
            .collect(),
    );
    let miss_us = median(
        results
            .iter()
            .map(|r| r.compile.as_secs_f64() * 1e6)
            .collect(),
    );
    let again_us = median(
        results
            .iter()
            .map(|r| r.recompile.as_secs_f64() * 1e6)
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

/// Milliseconds with about four significant digits, so both 0.00005 ms and 120 ms read well.
fn significant(ms: f64) -> String {
    let decimals = if !ms.is_finite() || ms >= 100.0 {
        1
    } else if ms >= 1.0 {
        3
    } else {
        (3 - ms.log10().floor() as i64).clamp(4, 9) as usize
    };
    format!("{ms:.decimals$}")
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
            compile: Duration::from_micros(300),
            recompile: Duration::from_micros(250),
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
                r#"{{"case": "a\"b", "median_ns": 2000, "compile_ns": 300000, "memcpy_ns": 1000, "threads": 2, "reps": {}, "ratio": 2.0004}}"#,
                result("x").timing.reps
            )
        );
    }

    #[test]
    fn row_and_notes() {
        let r = result("s2d_tiny");
        assert!(row(&r).contains(" 2.00 "));
        let notes = notes(&[r], 1);
        assert!(notes
            .iter()
            .any(|n| n.starts_with("compile cache: none seen")));
        let mut hit = result("hit");
        hit.recompile = Duration::from_micros(2);
        assert!(super::notes(&[hit], 1)
            .iter()
            .any(|n| n.starts_with("compile cache: a miss took 300 us and a hit 2.0 us")));
        assert!(notes
            .iter()
            .any(|n| n.starts_with("s2d_tiny: 2000 ns per call")));
    }

    #[test]
    fn significant_digits() {
        assert_eq!(significant(123.456), "123.5");
        assert_eq!(significant(1.23456), "1.235");
        assert_eq!(significant(0.0512), "0.05120");
        assert_eq!(significant(0.5), "0.5000");
    }
}

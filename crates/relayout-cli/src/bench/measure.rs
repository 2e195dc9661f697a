//! The timing loop: kernel and memcpy batches, interleaved, with an adaptive repetition count.
//!
//! Why interleave (kernel, memcpy, kernel, memcpy, ...) instead of all kernel runs and then all
//! memcpys: the ratio of the two is the figure that matters, and on a shared 2-core machine
//! the clock, the other core's load and the cache contents drift over a second. Alternating
//! makes both sides of every pair see the same machine state, so drift moves both medians
//! together instead of biasing the ratio.
//!
//! The price: each side evicts the other's buffers from the caches, so a kernel whose working
//! set fits in the last-level cache finds its source in memory at every batch. Harnesses that
//! time other libraries call them back to back (the peers' harness does), so for a comparison
//! of absolute times with them `--back-to-back` times all kernel batches, then all memcpy
//! batches, the same way ([`Order::BackToBack`]).

use std::hint::black_box;
use std::time::{Duration, Instant};

/// A batch of calls must last at least this long to be timed well: `Instant` costs tens of
/// nanoseconds and small kernels take less than that, so they are timed in batches.
const MIN_BATCH: Duration = Duration::from_micros(100);
/// The largest batch; it bounds the calibration of an (unexpectedly) empty kernel.
const MAX_INNER: usize = 1 << 20;
/// At least this many timed pairs, however slow the case, so a median means something.
pub const MIN_REPS: usize = 5;
/// At most this many timed pairs, however fast the case.
const MAX_REPS: usize = 5_000;

/// How long to measure each case, and in which order.
#[derive(Clone, Copy)]
pub struct Plan {
    /// The time to spend on timed kernel and memcpy batches together, per case.
    pub budget: Duration,
    /// A fixed number of timed pairs instead of the budget (`--reps`).
    pub reps: Option<usize>,
    pub order: Order,
}

/// The order of the timed batches (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Order {
    /// Kernel, memcpy, kernel, memcpy, ...: the ratio is robust to drift.
    Interleaved,
    /// Every kernel batch, then every memcpy batch: each side keeps its data in the caches.
    BackToBack,
}

/// Medians per call, in nanoseconds.
pub struct Timing {
    pub kernel_ns: f64,
    pub memcpy_ns: f64,
    /// Timed (kernel batch, memcpy batch) pairs.
    pub reps: usize,
    /// Calls per batch.
    pub inner: usize,
}

/// Times `kernel` and `copy` as described in the module comment. Both run once untimed first,
/// so the JIT's thread pool, the buffers' TLB entries and the caches are warm.
pub fn measure<K, C>(plan: Plan, mut kernel: K, mut copy: C) -> Result<Timing, String>
where
    K: FnMut() -> Result<(), String>,
    C: FnMut() -> Result<(), String>,
{
    kernel()?;
    copy()?;
    let (inner, kernel_batch) = calibrate(&mut kernel)?;
    let copy_batch = time_batch(&mut copy, inner)?;
    let reps = plan
        .reps
        .unwrap_or_else(|| reps_for_budget(plan.budget, kernel_batch + copy_batch));
    let mut kernel_times = Vec::with_capacity(reps);
    let mut copy_times = Vec::with_capacity(reps);
    match plan.order {
        Order::Interleaved => {
            for _ in 0..reps {
                kernel_times.push(time_batch(&mut kernel, inner)?);
                copy_times.push(time_batch(&mut copy, inner)?);
            }
        }
        Order::BackToBack => {
            for _ in 0..reps {
                kernel_times.push(time_batch(&mut kernel, inner)?);
            }
            // The memcpy's first batch would find the kernel's data in the caches: one more,
            // untimed, so that it starts from its own.
            copy()?;
            for _ in 0..reps {
                copy_times.push(time_batch(&mut copy, inner)?);
            }
        }
    }
    Ok(Timing {
        kernel_ns: median_ns(&mut kernel_times) / inner as f64,
        memcpy_ns: median_ns(&mut copy_times) / inner as f64,
        reps,
        inner,
    })
}

/// Doubles the batch size until a batch of kernel calls lasts `MIN_BATCH`; returns the batch
/// size and the last batch's time.
fn calibrate<K: FnMut() -> Result<(), String>>(
    kernel: &mut K,
) -> Result<(usize, Duration), String> {
    let mut inner = 1;
    loop {
        let t = time_batch(kernel, inner)?;
        if t >= MIN_BATCH || inner >= MAX_INNER {
            return Ok((inner, t));
        }
        inner *= 2;
    }
}

fn reps_for_budget(budget: Duration, pair: Duration) -> usize {
    let pair = pair.as_secs_f64().max(1e-9);
    ((budget.as_secs_f64() / pair).ceil() as usize).clamp(MIN_REPS, MAX_REPS)
}

fn time_batch<F: FnMut() -> Result<(), String>>(
    f: &mut F,
    inner: usize,
) -> Result<Duration, String> {
    let start = Instant::now();
    for _ in 0..black_box(inner) {
        f()?;
    }
    Ok(start.elapsed())
}

fn median_ns(times: &mut [Duration]) -> f64 {
    times.sort_unstable();
    let n = times.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => times[n / 2].as_nanos() as f64,
        _ => (times[n / 2 - 1].as_nanos() as f64 + times[n / 2].as_nanos() as f64) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        let ms = Duration::from_millis;
        assert_eq!(median_ns(&mut [ms(3), ms(1), ms(2)]), 2e6);
        assert_eq!(median_ns(&mut [ms(4), ms(1), ms(2), ms(3)]), 2.5e6);
    }

    #[test]
    fn budget_bounds() {
        assert_eq!(
            reps_for_budget(Duration::from_secs(1), Duration::from_secs(2)),
            MIN_REPS
        );
        assert_eq!(
            reps_for_budget(Duration::from_secs(1), Duration::from_millis(10)),
            100
        );
        assert_eq!(
            reps_for_budget(Duration::from_secs(1), Duration::ZERO),
            MAX_REPS
        );
    }

    /// The order of the calls `measure` makes with three timed batches: `k` for a kernel call,
    /// `c` for a memcpy, each slow enough that a batch is one call.
    fn call_order(order: Order) -> String {
        let log = std::cell::RefCell::new(String::new());
        let call = |c: char| {
            std::thread::sleep(MIN_BATCH);
            log.borrow_mut().push(c);
            Ok(())
        };
        let plan = Plan {
            budget: Duration::ZERO,
            reps: Some(3),
            order,
        };
        measure(plan, || call('k'), || call('c')).unwrap();
        log.into_inner()
    }

    #[test]
    fn back_to_back_runs_all_kernel_batches_first() {
        // Warm-up pair, both calibration batches, the kernel batches, an untimed memcpy, the
        // memcpy batches.
        assert_eq!(call_order(Order::BackToBack), "kckckkkcccc");
        assert_eq!(call_order(Order::Interleaved), "kckckckckc");
    }

    #[test]
    fn fixed_reps_and_errors() {
        let plan = Plan {
            budget: Duration::ZERO,
            reps: Some(7),
            order: Order::Interleaved,
        };
        let t = measure(plan, || Ok(()), || Ok(())).unwrap();
        assert_eq!(t.reps, 7);
        assert!(t.inner > 1, "empty calls are batched");
        let mut calls = 0;
        let failing = measure(
            plan,
            || {
                calls += 1;
                if calls > 3 {
                    Err("boom".into())
                } else {
                    Ok(())
                }
            },
            || Ok(()),
        );
        assert_eq!(failing.err().as_deref(), Some("boom"));
    }
}

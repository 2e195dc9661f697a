//! The kernel cache: the second request for the same op on the same input type returns the
//! kernel compiled for the first, without lowering, simplifying or generating code again.
//!
//! Two levels, because a hit must cost microseconds while two different op descriptions can
//! simplify to the same loop kernel (SpaceToBatchND with all blocks 1 and a reshape-like
//! DepthToSpace both become one contiguous copy):
//! - by op description: `(Op, input TensorType)` -> compiled op, checked first;
//! - by code: the canonical loop IR -> machine code, so equal loop kernels share one JIT module.
//!
//! The host ISA is fixed for the life of the process and threads are a run-time argument of
//! `run_threaded` (every kernel takes a start/end of its outer loop), so neither needs to be
//! part of the key. Both levels hold at most `capacity` entries and evict the least recently
//! used; an evicted kernel's code memory is released when its last user drops it.

use relayout_ir::{LoopKernel, TensorType};
use relayout_jit::CompiledKernel;
use relayout_ops::Op;
use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

/// A map with a capacity that evicts its least recently used entry.
struct Lru<K, V> {
    capacity: usize,
    clock: u64,
    entries: HashMap<K, (V, u64)>,
}

impl<K: Hash + Eq + Clone, V: Clone> Lru<K, V> {
    fn new(capacity: usize) -> Self {
        Lru {
            capacity,
            clock: 0,
            entries: HashMap::new(),
        }
    }

    fn get<Q: Hash + Eq + ?Sized>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|(v, used)| {
            *used = clock;
            v.clone()
        })
    }

    fn insert(&mut self, key: K, value: V) {
        self.clock += 1;
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            self.evict_least_recent();
        }
        self.entries.insert(key, (value, self.clock));
    }

    fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        while self.entries.len() > capacity {
            self.evict_least_recent();
        }
    }

    /// Removes the least recently used entry, if any. A linear scan is fine: it runs only on
    /// a miss, which also compiles a kernel (hundreds of microseconds), or when the capacity
    /// shrinks, and capacities are in the hundreds.
    fn evict_least_recent(&mut self) {
        if let Some(oldest) = self
            .entries
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(k, _)| k.clone())
        {
            self.entries.remove(&oldest);
        }
    }
}

/// What a cached op holds: everything `CompiledOp` needs, shared.
pub(crate) type CachedOp = Arc<crate::CompiledInner>;

/// The key of the by-op level: an op and its input type.
#[derive(Clone, PartialEq, Eq)]
struct OpKey {
    op: Op,
    input: TensorType,
}

/// An op and an input type, owned ([`OpKey`]) or borrowed: a hit looks the pair up as it was
/// given, without copying it (a copy of an op's attributes and shape took several heap
/// allocations, a visible part of a hit's microsecond).
trait OpKeyParts {
    fn parts(&self) -> (&Op, &TensorType);
}

impl OpKeyParts for OpKey {
    fn parts(&self) -> (&Op, &TensorType) {
        (&self.op, &self.input)
    }
}

impl OpKeyParts for (&Op, &TensorType) {
    fn parts(&self) -> (&Op, &TensorType) {
        (self.0, self.1)
    }
}

impl<'a> Borrow<dyn OpKeyParts + 'a> for OpKey {
    fn borrow(&self) -> &(dyn OpKeyParts + 'a) {
        self
    }
}

// The owned key hashes and compares through the same `parts` as the borrowed one, as
// `Borrow` requires.
impl Hash for OpKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl Hash for dyn OpKeyParts + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn OpKeyParts + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn OpKeyParts + '_ {}

struct Cache {
    by_op: Lru<OpKey, CachedOp>,
    by_code: Lru<LoopKernel, Arc<CompiledKernel>>,
}

/// How many kernels each level keeps by default.
pub const DEFAULT_CAPACITY: usize = 256;

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

fn cache() -> MutexGuard<'static, Option<Cache>> {
    // A panic while holding the lock cannot leave the maps inconsistent (every update is a
    // single insert or remove), so a poisoned lock is safe to keep using.
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    guard.get_or_insert_with(|| Cache {
        by_op: Lru::new(DEFAULT_CAPACITY),
        by_code: Lru::new(DEFAULT_CAPACITY),
    });
    guard
}

pub(crate) fn lookup_op(op: &Op, input: &TensorType) -> Option<CachedOp> {
    cache().as_mut()?.by_op.get(&(op, input) as &dyn OpKeyParts)
}

pub(crate) fn insert_op(op: &Op, input: &TensorType, compiled: CachedOp) {
    if let Some(c) = cache().as_mut() {
        let key = OpKey {
            op: op.clone(),
            input: input.clone(),
        };
        c.by_op.insert(key, compiled);
    }
}

/// The machine code for `loops`, compiled now or shared with an earlier equal loop kernel.
/// The lock is not held while compiling, so two threads may compile the same kernel at once;
/// the second insert wins and both results are correct.
pub(crate) fn code_for(loops: &LoopKernel) -> Result<Arc<CompiledKernel>, relayout_jit::JitError> {
    if let Some(hit) = cache().as_mut().and_then(|c| c.by_code.get(loops)) {
        return Ok(hit);
    }
    let code = Arc::new(CompiledKernel::compile(loops)?);
    if let Some(c) = cache().as_mut() {
        c.by_code.insert(loops.clone(), code.clone());
    }
    Ok(code)
}

/// Sets how many kernels each level of the cache keeps (0 disables caching), evicting the
/// least recently used ones beyond it.
pub fn set_cache_capacity(capacity: usize) {
    if let Some(c) = cache().as_mut() {
        c.by_op.set_capacity(capacity);
        c.by_code.set_capacity(capacity);
    }
}

/// Number of entries in the two levels: (by op description, by loop IR).
pub fn cache_len() -> (usize, usize) {
    cache()
        .as_ref()
        .map_or((0, 0), |c| (c.by_op.entries.len(), c.by_code.entries.len()))
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn evicts_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert(1, 'a');
        lru.insert(2, 'b');
        assert_eq!(lru.get(&1), Some('a'));
        lru.insert(3, 'c');
        assert_eq!(lru.get(&2), None);
        assert_eq!(lru.get(&1), Some('a'));
        assert_eq!(lru.get(&3), Some('c'));
        lru.set_capacity(1);
        assert_eq!(lru.entries.len(), 1);
        assert_eq!(lru.get(&3), Some('c'));
    }
}

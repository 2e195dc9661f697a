//! Buffers that sit flush against an inaccessible zone, so that an access past either end of a
//! kernel's source or destination faults at once instead of silently reading or corrupting a
//! neighbour's memory.
//!
//! ```text
//! Guard::End:    [ slack ..... | data (len bytes) ][ PROT_NONE zone ]
//! Guard::Start:  [ PROT_NONE zone ][ data (len bytes) | slack ..... ]
//! ```
//!
//! The zone is not one page but [`guard_len`]`(len)` bytes: a kernel under test moves runs of
//! at most `len` bytes with strides of at most `len` bytes (a larger stride on a loop of two
//! or more iterations would leave the buffer on its second iteration), so a wrong offset of
//! one stride plus one run lands at most `2 * len` bytes past the end, which a single 4 KiB
//! page would not catch once `len` passes 2 KiB. The zone costs address space, not memory.
//! The slack is at most a page minus one byte and stays readable; a test that wants both ends
//! covered runs once with each guard. This is the technique of Electric Fence and of
//! glibc's `MALLOC_CHECK_`-less page-heap debuggers, made small: one `mmap` per buffer.
//!
//! This file holds every `unsafe` block of the safety test suite. It is Linux-only (the
//! constants below are Linux's, the same on x86_64 and aarch64); the test files that use it
//! are `#![cfg(target_os = "linux")]`.

#![allow(dead_code)] // Each test binary that includes this file uses a different part of it.

use std::ffi::{c_int, c_long, c_void};
use std::ptr::NonNull;

// The three libc functions we need. std links libc on Linux, so declaring them is enough and
// spares the crate a `libc` dev-dependency.
extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        offset: i64,
    ) -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn sysconf(name: c_int) -> c_long;
}

const PROT_NONE: c_int = 0;
const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
const MAP_PRIVATE: c_int = 0x02;
const MAP_ANONYMOUS: c_int = 0x20;
const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
const SC_PAGESIZE: c_int = 30;

/// Which end of the buffer touches the guard page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Guard {
    /// The byte after the last one is inaccessible: catches overruns.
    End,
    /// The byte before the first one is inaccessible: catches underruns.
    Start,
}

impl Guard {
    pub const BOTH: [Guard; 2] = [Guard::End, Guard::Start];
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name, handled below.
    let size = unsafe { sysconf(SC_PAGESIZE) };
    usize::try_from(size)
        .ok()
        .filter(|s| s.is_power_of_two())
        .expect("sysconf(_SC_PAGESIZE) returned a page size")
}

/// The width of the inaccessible zone next to a buffer of `len` bytes: whole pages covering
/// the largest stride plus the longest run a kernel on that buffer can use (`2 * len`), plus
/// 64 KiB for the widest vector or unrolled block.
pub fn guard_len(len: usize) -> usize {
    let page = page_size();
    len.checked_mul(2)
        .and_then(|n| n.checked_add(64 << 10))
        .expect("guard zone size overflows")
        .div_ceil(page)
        * page
}

/// `len` bytes of zeroed, readable and writable memory with an inaccessible zone of
/// [`guard_len`]`(len)` bytes at one end.
pub struct GuardedBuf {
    /// Start of the whole mapping (data pages and guard page).
    map: NonNull<u8>,
    map_len: usize,
    /// Start of the `len` bytes handed out.
    data: NonNull<u8>,
    len: usize,
    guard: Guard,
}

// SAFETY: GuardedBuf owns its mapping exclusively, like a Box<[u8]>, and hands out access only
// through &self / &mut self, so moving it to or sharing it with another thread is as safe as
// for a Vec<u8>.
unsafe impl Send for GuardedBuf {}
unsafe impl Sync for GuardedBuf {}

impl GuardedBuf {
    /// Maps `len` zeroed bytes flush against a guard page at `guard`'s end.
    ///
    /// Panics when the mapping fails (out of address space): a test set-up failure.
    pub fn new(len: usize, guard: Guard) -> GuardedBuf {
        let page = page_size();
        let data_pages = len.div_ceil(page).max(1);
        let zone = guard_len(len);
        let map_len = (data_pages * page)
            .checked_add(zone)
            .expect("guarded buffer size overflows");
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches no
        // existing memory. The result is checked against MAP_FAILED before use.
        let map = unsafe {
            mmap(
                std::ptr::null_mut(),
                map_len,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(
            map != MAP_FAILED && !map.is_null(),
            "mmap of {map_len} bytes failed: {}",
            std::io::Error::last_os_error()
        );
        let map = map.cast::<u8>();
        let (guard_offset, data_offset) = match guard {
            Guard::End => (data_pages * page, data_pages * page - len),
            Guard::Start => (0, zone),
        };
        // SAFETY: the zone `guard_offset..guard_offset + zone` is inside the `map_len`-byte
        // mapping just created (whole pages of it, page-aligned because `map` is), and the
        // mapping is ours alone. Removing all access from it affects nothing else.
        let rc = unsafe { mprotect(map.add(guard_offset).cast(), zone, PROT_NONE) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            // SAFETY: unmapping the mapping created above, which nothing else refers to.
            unsafe { munmap(map.cast(), map_len) };
            panic!("mprotect of the guard zone failed: {err}");
        }
        // SAFETY (pointer arithmetic only): `data_offset + len` is at most the guard zone's
        // offset (End) or at most `map_len` (Start), so the data lies inside the mapping.
        let data = unsafe { map.add(data_offset) };
        GuardedBuf {
            map: NonNull::new(map).expect("mmap returned a non-null pointer"),
            map_len,
            data: NonNull::new(data).expect("inside a non-null mapping"),
            len,
            guard,
        }
    }

    /// A guarded copy of `bytes`.
    pub fn from_bytes(bytes: &[u8], guard: Guard) -> GuardedBuf {
        let mut buf = GuardedBuf::new(bytes.len(), guard);
        buf.copy_from_slice(bytes);
        buf
    }

    pub fn guard(&self) -> Guard {
        self.guard
    }

    /// Writes one byte `distance` bytes outside the buffer (1: just outside), inside the guard
    /// zone: the process dies of SIGSEGV. Used only by the test that proves the guard works;
    /// `Guard::End` writes after the last byte, `Guard::Start` before the first.
    pub fn poke_outside(&mut self, distance: usize) {
        assert!(
            (1..=guard_len(self.len)).contains(&distance),
            "{distance} bytes out is not in the guard zone"
        );
        let target = match self.guard {
            // SAFETY (pointer arithmetic only): the guard zone of `guard_len(len)` bytes
            // starts one past the end of the data, so this is inside the mapping.
            Guard::End => unsafe { self.data.as_ptr().add(self.len + distance - 1) },
            // SAFETY (pointer arithmetic only): the data starts right after the guard zone, so
            // `distance` bytes before it is inside the zone.
            Guard::Start => unsafe { self.data.as_ptr().sub(distance) },
        };
        // SAFETY: deliberately not safe: `target` is on the PROT_NONE guard zone, so this
        // volatile store faults before any memory changes, and the process is killed by
        // SIGSEGV. Volatile keeps the compiler from removing or reordering the store. Only a
        // child process spawned for that purpose calls this.
        unsafe { target.write_volatile(0xAA) };
    }
}

impl std::ops::Deref for GuardedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `data` points to `len` initialised (zero-filled by mmap) readable bytes of a
        // mapping that lives as long as `self`, and the shared borrow of `self` prevents any
        // mutable access meanwhile.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for GuardedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and the bytes are writable; the mutable borrow of `self` makes
        // this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }
}

impl Drop for GuardedBuf {
    fn drop(&mut self) {
        // SAFETY: the mapping was created in `new` with exactly this address and length, and
        // every slice into it borrows `self`, so none outlives this call.
        let rc = unsafe { munmap(self.map.as_ptr().cast(), self.map_len) };
        debug_assert_eq!(rc, 0, "munmap failed");
    }
}

impl std::fmt::Debug for GuardedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GuardedBuf({} bytes, guard at {:?})",
            self.len, self.guard
        )
    }
}

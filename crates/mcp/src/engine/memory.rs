//! Memory of a server process under huge messages.
//!
//! glibc keeps freed memory in the process, and raises its threshold for serving big blocks from
//! their own mappings each time one is freed: after one 8 MiB message, the next one's buffers
//! come from the heap, where growing them by doubling copies and fragments. A server process
//! therefore fixes the threshold at 1 MiB ([`tune_for_large_messages`]): a big buffer is always
//! its own mapping, grown in place by `mremap` and returned whole when freed. After a message this
//! large, and after reaping many sessions, free heap pages are released too.

/// A message at least this large is followed by a release.
pub(crate) const LARGE: usize = 1024 * 1024;

/// Hands free heap pages back to the OS.
#[allow(unsafe_code)]
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Serves every allocation of 1 MiB or more from its own mapping, for the whole process (called
/// once by the stdio and HTTP servers before serving).
#[allow(unsafe_code)]
pub(crate) fn tune_for_large_messages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's tuning; M_MMAP_THRESHOLD takes a byte count.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE as libc::c_int);
    }
}

//! Made ahead: what every sandboxed start needs new of its own (a private temporary directory and
//! the Landlock ruleset that grants it; for root, a pids cgroup) is made for the next start of a
//! command when one of its processes ends, from its second start on (the gateway starts the same
//! command once per session). Making them (a `mkdir` on the disk, some 35 Landlock rules, a
//! `mkdir` in the cgroup file system) takes 100 to 200 microseconds that would otherwise lie
//! between the spawn and the server's first answer; at the end of a process nobody waits for them.

use std::sync::{Arc, Mutex};

/// At most one `T` made ahead, shared by the starts of one command.
#[derive(Debug)]
pub struct Spare<T>(Arc<Mutex<Option<T>>>);

impl<T> Clone for Spare<T> {
    fn clone(&self) -> Self {
        Spare(self.0.clone())
    }
}

impl<T> Default for Spare<T> {
    fn default() -> Self {
        Spare(Arc::new(Mutex::new(None)))
    }
}

impl<T> Spare<T> {
    /// The one made ahead, if there is one.
    pub fn take(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Makes one with `make` unless one is there, or nobody but the caller holds the slot (the
    /// command's sandbox, and its other processes, are gone). `make` runs without the lock, so
    /// a start meanwhile is not held up (it makes its own); `make` failing leaves none: the next
    /// start makes its own and says why if it cannot.
    pub fn refill(&self, make: impl FnOnce() -> Option<T>) {
        let is_empty = || self.0.lock().unwrap_or_else(|e| e.into_inner()).is_none();
        if Arc::strong_count(&self.0) == 1 || !is_empty() {
            return;
        }
        let Some(made) = make() else { return };
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(made);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spare_is_made_once_taken_once_and_only_for_someone() {
        let spare = Spare::<u32>::default();
        let kept = spare.clone();
        assert_eq!(spare.take(), None);
        spare.refill(|| Some(7));
        spare.refill(|| panic!("the slot is full: nothing more is made"));
        assert_eq!(kept.take(), Some(7));
        assert_eq!(kept.take(), None);
        spare.refill(|| None);
        assert_eq!(kept.take(), None, "a failed make leaves none");
        drop(kept);
        spare.refill(|| panic!("nobody else holds the slot: nothing is made"));
    }
}

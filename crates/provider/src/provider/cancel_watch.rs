//! A cheap watch on a [`CancellationToken`] for hot loops: the token's wait
//! is polled once, with a waker that raises a flag, so checking for
//! cancellation afterwards is one atomic load instead of the token's lock,
//! and waiting for it registers the task's waker in one atomic slot instead
//! of re-polling the token's `Notify` on every wait.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Raised by the token's wait when it ends (the token was cancelled).
#[derive(Default)]
struct Flag {
    raised: AtomicBool,
    /// The task waiting for cancellation, if any.
    waiter: AtomicWaker,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.raised.store(true, Ordering::Release);
        self.waiter.wake();
    }
}

/// Watches one token (see the module's text).
pub struct CancelWatch {
    flag: Arc<Flag>,
    token: CancellationToken,
    /// Kept registered with the token until the watch is dropped.
    wait: Pin<Box<WaitForCancellationFutureOwned>>,
    /// The waker in the flag's slot, not woken yet: a task that waits again
    /// (a body read per chunk) registers nothing again.
    registered: Option<Waker>,
}

impl CancelWatch {
    pub fn new(token: &CancellationToken) -> CancelWatch {
        let flag = Arc::new(Flag::default());
        let mut wait = Box::pin(token.clone().cancelled_owned());
        let waker = Waker::from(flag.clone());
        if wait.as_mut().poll(&mut Context::from_waker(&waker)).is_ready() {
            flag.raised.store(true, Ordering::Release);
        }
        CancelWatch { flag, token: token.clone(), wait, registered: None }
    }

    /// Whether the token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        // The flag is only raised by the token's wait; the token confirms it.
        self.flag.raised.load(Ordering::Acquire) && self.token.is_cancelled()
    }

    /// Ready once the token is cancelled; else `cx`'s task is woken then.
    pub fn poll_cancelled(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.flag.raised.load(Ordering::Acquire) {
            return self.confirm();
        }
        // Only the flag takes the waker out of its slot, after raising
        // itself: with the flag down, the waker registered last is still there.
        if self.registered.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        self.flag.waiter.register(cx.waker());
        self.registered = Some(cx.waker().clone());
        // Raised between the check and the registration: not missed.
        if self.flag.raised.load(Ordering::Acquire) {
            return self.confirm();
        }
        Poll::Pending
    }

    /// The flag is up: ready if the token says so, else (never expected) the
    /// wait is armed again with the flag's waker.
    fn confirm(&mut self) -> Poll<()> {
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        self.flag.raised.store(false, Ordering::Release);
        // The flag's wake took the waiting task's waker out of its slot.
        self.registered = None;
        let waker = Waker::from(self.flag.clone());
        if self.wait.as_mut().poll(&mut Context::from_waker(&waker)).is_ready() {
            self.flag.raised.store(true, Ordering::Release);
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// Wait until the token is cancelled.
    pub async fn cancelled(&mut self) {
        std::future::poll_fn(|cx| self.poll_cancelled(cx)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_cancelled_before_the_watch_is_seen() {
        let token = CancellationToken::new();
        token.cancel();
        let mut watch = CancelWatch::new(&token);
        assert!(watch.is_cancelled());
        let waker = futures::task::noop_waker();
        assert!(watch.poll_cancelled(&mut Context::from_waker(&waker)).is_ready());
    }

    #[tokio::test]
    async fn a_later_cancel_raises_the_flag_and_wakes_the_waiting_task() {
        let token = CancellationToken::new();
        let child = token.child_token();
        let mut watch = CancelWatch::new(&child);
        assert!(!watch.is_cancelled());
        let waker = futures::task::noop_waker();
        assert!(watch.poll_cancelled(&mut Context::from_waker(&waker)).is_pending());
        let canceller = tokio::spawn(async move {
            tokio::task::yield_now().await;
            token.cancel();
        });
        watch.cancelled().await;
        assert!(watch.is_cancelled());
        canceller.await.unwrap();
    }

    /// Counts its wakes.
    #[derive(Default)]
    struct Counted(std::sync::atomic::AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Waits repeated by one task register it once; a wait by another task
    /// takes the slot, and the cancel wakes the one that waited last.
    #[test]
    fn the_last_waiting_task_is_woken_however_often_it_waited() {
        let token = CancellationToken::new();
        let mut watch = CancelWatch::new(&token);
        let (first, second) = (Arc::new(Counted::default()), Arc::new(Counted::default()));
        let (first_waker, second_waker) = (Waker::from(first.clone()), Waker::from(second.clone()));
        for _ in 0..3 {
            assert!(watch.poll_cancelled(&mut Context::from_waker(&first_waker)).is_pending());
        }
        assert!(watch.poll_cancelled(&mut Context::from_waker(&second_waker)).is_pending());
        assert!(watch.poll_cancelled(&mut Context::from_waker(&second_waker)).is_pending());
        token.cancel();
        assert_eq!((first.0.load(Ordering::SeqCst), second.0.load(Ordering::SeqCst)), (0, 1));
        assert!(watch.poll_cancelled(&mut Context::from_waker(&first_waker)).is_ready());

        // The same task waiting again after a cancel of another watch's token is still woken.
        let token = CancellationToken::new();
        let mut watch = CancelWatch::new(&token);
        for _ in 0..3 {
            assert!(watch.poll_cancelled(&mut Context::from_waker(&first_waker)).is_pending());
        }
        token.cancel();
        assert_eq!(first.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_cancel_from_another_thread_is_seen() {
        let token = CancellationToken::new();
        let mut watch = CancelWatch::new(&token);
        let other = token.clone();
        let thread = std::thread::spawn(move || other.cancel());
        watch.cancelled().await;
        assert!(watch.is_cancelled());
        thread.join().unwrap();
    }
}

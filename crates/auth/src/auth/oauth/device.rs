//! Polling for a device-code grant (RFC 8628): at the server's interval
//! (5 s when it names none, never under 1 s), slower after `slow_down`, until
//! the code expires.

use std::future::Future;
use std::time::{Duration, Instant};

use super::{Net, OAuthError};

/// One poll's answer.
#[derive(Debug)]
pub enum Poll<T> {
    Pending,
    /// Poll less often: at the server's new interval (seconds) or 5 s slower.
    SlowDown(Option<f64>),
    Complete(T),
    Failed(String),
}

/// The device code's timing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    pub interval_seconds: Option<f64>,
    pub expires_in_seconds: Option<f64>,
    /// Wait one interval before the first poll.
    pub wait_first: bool,
}

const MIN_INTERVAL: Duration = Duration::from_secs(1);
const DEFAULT_INTERVAL_SECONDS: f64 = 5.0;
const SLOW_DOWN_STEP: Duration = Duration::from_secs(5);

fn seconds(s: f64) -> Duration {
    Duration::from_millis((s * 1000.0).floor().max(0.0) as u64).max(MIN_INTERVAL)
}

/// Poll until the grant completes, fails, or the code expires.
pub async fn poll_until<T, F, Fut>(net: &Net, timing: Timing, mut poll: F) -> Result<T, OAuthError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Poll<T>, OAuthError>>,
{
    let deadline = timing.expires_in_seconds.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let remaining = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let mut interval = seconds(timing.interval_seconds.unwrap_or(DEFAULT_INTERVAL_SECONDS));
    let mut slowed = false;
    if timing.wait_first {
        net.sleep(remaining().map_or(interval, |r| r.min(interval))).await?;
    }
    while remaining().is_none_or(|r| !r.is_zero()) {
        match poll().await? {
            Poll::Complete(value) => return Ok(value),
            Poll::Failed(message) => return Err(OAuthError::refused(message)),
            Poll::Pending => {}
            Poll::SlowDown(server) => {
                slowed = true;
                interval = match server.filter(|s| s.is_finite() && *s > 0.0) {
                    Some(s) => seconds(s),
                    None => interval + SLOW_DOWN_STEP,
                };
            }
        }
        match remaining() {
            Some(r) if r.is_zero() => break,
            Some(r) => net.sleep(r.min(interval)).await?,
            None => net.sleep(interval).await?,
        }
    }
    Err(OAuthError::refused(if slowed {
        "The device code expired after the server asked to slow down; a clock that drifts (WSL, VMs) causes this: sync it and log in again"
    } else {
        "The device code expired before the sign-in was completed"
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn polls_at_the_interval_slows_down_and_completes() {
        let polls = AtomicU32::new(0);
        let started = tokio::time::Instant::now();
        let timing = Timing { interval_seconds: Some(2.0), expires_in_seconds: Some(600.0), wait_first: true };
        let got = poll_until(&Net::new(), timing, || async {
            Ok(match polls.fetch_add(1, Ordering::SeqCst) {
                0 => Poll::Pending,
                1 => Poll::SlowDown(None),
                _ => Poll::Complete("token"),
            })
        })
        .await
        .unwrap();
        assert_eq!(got, "token");
        // 2 s before the first poll, 2 s after pending, 7 s after slow_down.
        assert_eq!(started.elapsed().as_secs(), 11);
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_code_and_a_failure_end_the_wait() {
        let timing = Timing { interval_seconds: Some(0.0), expires_in_seconds: Some(3.0), wait_first: false };
        let err = poll_until(&Net::new(), timing, || async { Ok(Poll::<()>::Pending) }).await.unwrap_err();
        assert!(err.message.contains("expired"), "{}", err.message);
        let err =
            poll_until(&Net::new(), timing, || async { Ok(Poll::<()>::Failed("denied".into())) }).await.unwrap_err();
        assert_eq!(err.message, "denied");
    }
}

//! The device-code grant (RFC 8628) shared by the logins that use it:
//! showing the code, the grant's standard answers, and polling at the
//! server's interval (5 s when it names none, never under 1 s), slower after
//! `slow_down`, until the code expires.

use std::future::Future;
use std::time::{Duration, Instant};

use super::{LoginEvent, LoginIo, Net, OAuthError};

/// The grant type a poll of the token endpoint names.
pub const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

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

impl Timing {
    /// Show the user the code and where to enter it; the code's timing.
    pub fn announce(
        io: &dyn LoginIo,
        user_code: &str,
        verification_uri: String,
        interval_seconds: Option<f64>,
        expires_in_seconds: Option<f64>,
        wait_first: bool,
    ) -> Timing {
        io.notify(LoginEvent::DeviceCode {
            user_code: user_code.to_string(),
            verification_uri,
            interval_seconds,
            expires_in_seconds,
        });
        Timing { interval_seconds, expires_in_seconds, wait_first }
    }
}

/// A provider's words for a code that can no longer be granted.
#[derive(Debug, Clone, Copy)]
pub struct Refusals {
    /// `expired_token`.
    pub expired: &'static str,
    /// `access_denied`.
    pub denied: &'static str,
}

/// The token endpoint's standard answers to a poll (RFC 8628 §3.5): wait
/// (`authorization_pending`), slow down (`slow_down`, at the server's new
/// interval if it names one), or fail (`expired_token`, `access_denied`);
/// `None` for any other error code.
pub fn grant_answer<T>(error: Option<&str>, interval: Option<f64>, refusals: Refusals) -> Option<Poll<T>> {
    Some(match error? {
        "authorization_pending" => Poll::Pending,
        "slow_down" => Poll::SlowDown(interval),
        "expired_token" => Poll::Failed(refusals.expired.to_string()),
        "access_denied" => Poll::Failed(refusals.denied.to_string()),
        _ => return None,
    })
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

    #[test]
    fn the_standard_answers_of_a_pending_grant() {
        let refusals = Refusals { expired: "expired", denied: "denied" };
        assert!(matches!(grant_answer::<()>(Some("authorization_pending"), None, refusals), Some(Poll::Pending)));
        assert!(matches!(grant_answer::<()>(Some("slow_down"), Some(9.0), refusals), Some(Poll::SlowDown(Some(9.0)))));
        assert!(
            matches!(grant_answer::<()>(Some("expired_token"), None, refusals), Some(Poll::Failed(m)) if m == "expired")
        );
        assert!(
            matches!(grant_answer::<()>(Some("access_denied"), None, refusals), Some(Poll::Failed(m)) if m == "denied")
        );
        assert!(grant_answer::<()>(Some("server_error"), None, refusals).is_none());
        assert!(grant_answer::<()>(None, None, refusals).is_none());
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

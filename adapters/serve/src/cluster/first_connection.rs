//! The outcome of a bus client's first connection attempt, read off the
//! client's events: the client retries in the background (so a worker
//! survives the server's absence later on), and a worker at start waits
//! for the first "connected", or stops on the first refusal of its
//! credentials instead of retrying them forever.

use std::sync::Arc;

use async_nats::{ClientError, Event, ServerError};
use tokio::sync::watch;

/// What the first attempt came to: `None` while it is pending.
type Outcome = Option<Result<(), String>>;

/// Fed by the client's event callback, read once by the start-up.
#[derive(Clone)]
pub(crate) struct FirstConnection(Arc<watch::Sender<Outcome>>);

impl FirstConnection {
    pub(crate) fn new() -> FirstConnection {
        FirstConnection(Arc::new(watch::channel(None).0))
    }

    /// Note `event` if it decides the first attempt (later ones are ignored).
    pub(crate) fn observe(&self, event: &Event) {
        let outcome = match event {
            Event::Connected => Ok(()),
            Event::ServerError(ServerError::AuthorizationViolation) => Err("authorization violation".to_string()),
            Event::ClientError(ClientError::Other(text)) if is_refusal(text) => Err(text.clone()),
            _ => return,
        };
        self.0.send_if_modified(|first| {
            let undecided = first.is_none();
            if undecided {
                *first = Some(outcome);
            }
            undecided
        });
    }

    /// Wait for the first attempt's outcome; `None` when it is still
    /// pending after `within`.
    pub(crate) async fn outcome(&self, within: std::time::Duration) -> Option<Result<(), String>> {
        let mut receiver = self.0.subscribe();
        let decided = tokio::time::timeout(within, receiver.wait_for(Option::is_some)).await.ok()?.ok()?;
        decided.clone()
    }
}

/// The server refused who the client is (the words of async-nats'
/// `ConnectErrorKind::AuthorizationViolation` and `::Authentication`).
fn is_refusal(text: &str) -> bool {
    text.contains("authorization violation") || text.contains("failed signing nonce")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn the_first_decisive_event_is_the_outcome() {
        let first = FirstConnection::new();
        first.observe(&Event::Disconnected);
        first.observe(&Event::ClientError(ClientError::Other("IO error".into())));
        assert_eq!(first.outcome(Duration::from_millis(10)).await, None, "nothing decisive yet");
        first.observe(&Event::ClientError(ClientError::Other("authorization violation".into())));
        first.observe(&Event::Connected);
        assert_eq!(first.outcome(Duration::from_millis(10)).await, Some(Err("authorization violation".into())));
    }

    #[tokio::test]
    async fn connected_decides_too() {
        let first = FirstConnection::new();
        first.observe(&Event::Connected);
        first.observe(&Event::ServerError(ServerError::AuthorizationViolation));
        assert_eq!(first.outcome(Duration::from_millis(10)).await, Some(Ok(())));
    }
}

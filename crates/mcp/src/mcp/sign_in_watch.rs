//! Sign-ins made by another process, picked up as pi 1.6.0 does: when a
//! server comes to need a sign-in, the tokens stored for it then are noted;
//! at each `turn_start` a server still waiting whose stored tokens changed
//! since (`pi mcp login` in another process, say one the agent ran) connects
//! again, so its tools are offered from that turn on.

use std::sync::Arc;

use super::{Connection, Status};

impl Connection {
    /// The server needs the user to sign in; the stored tokens are noted
    /// when it did not already.
    pub(super) async fn mark_needs_auth(&self) {
        if self.state().status != Status::NeedsAuth {
            let tokens = match &self.auth {
                Some(auth) => auth.stored_tokens().await,
                None => "null".to_string(),
            };
            if let Ok(mut noted) = self.tokens_at_sign_in.lock() {
                *noted = Some(tokens);
            }
        }
        self.set_status(Status::NeedsAuth);
    }

    /// Waiting for a sign-in, and the stored tokens changed since it began.
    async fn signed_in_elsewhere(&self) -> bool {
        let Some(auth) = &self.auth else { return false };
        if self.state().status != Status::NeedsAuth {
            return false;
        }
        let noted = self.tokens_at_sign_in.lock().ok().and_then(|n| n.clone());
        match noted {
            Some(noted) => noted != auth.stored_tokens().await,
            None => false,
        }
    }
}

/// Connect again the servers of `conns` that another process signed in to
/// since they came to need it; the others are left as they are. Whether any was.
pub(in crate::mcp) async fn reconnect_signed_in(conns: Vec<Arc<Connection>>) -> bool {
    let mut signed_in = Vec::new();
    for conn in conns {
        if conn.signed_in_elsewhere().await {
            signed_in.push(conn);
        }
    }
    futures::future::join_all(signed_in.iter().map(|conn| {
        tracing::info!("MCP server {}: signed in elsewhere, connecting again", conn.config.name);
        conn.connect()
    }))
    .await;
    !signed_in.is_empty()
}

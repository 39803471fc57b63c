//! pi's `transport` setting for the Codex backend (`auto`, the default;
//! `sse`; `websocket`; `websocket-cached`; the legacy `websockets: true |
//! false` of a settings file without `transport` means `websocket` | `sse`),
//! read once at start-up. `sse` never opens a socket. Every other value
//! tries the WebSocket first, as pi does (an unknown value too); only `auto`
//! and `websocket-cached` send a continuation (`previous_response_id` with
//! the new input items), `websocket` sends the whole input every time.

use std::sync::atomic::{AtomicU8, Ordering};

/// The process's transport, as set from the settings.
static TRANSPORT: AtomicU8 = AtomicU8::new(Transport::Auto as u8);

/// A Codex transport of pi's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Transport {
    Auto = 0,
    Sse = 1,
    WebSocket = 2,
    WebSocketCached = 3,
}

impl Transport {
    /// pi's reading of the setting's value (`options.transport || "auto"`).
    pub fn parse(value: Option<&str>) -> Transport {
        match value {
            None | Some("") | Some("auto") => Transport::Auto,
            Some("sse") => Transport::Sse,
            Some("websocket-cached") => Transport::WebSocketCached,
            Some(_) => Transport::WebSocket,
        }
    }

    /// Whether a call tries the WebSocket first.
    pub fn uses_socket(self) -> bool {
        self != Transport::Sse
    }

    /// Whether a call on a kept socket sends only the new input.
    pub fn continues(self) -> bool {
        matches!(self, Transport::Auto | Transport::WebSocketCached)
    }
}

/// Set the process's transport (from the settings' `transport`).
pub fn set_transport(value: Option<&str>) {
    TRANSPORT.store(Transport::parse(value) as u8, Ordering::Relaxed);
}

/// The process's transport.
pub fn transport() -> Transport {
    match TRANSPORT.load(Ordering::Relaxed) {
        1 => Transport::Sse,
        2 => Transport::WebSocket,
        3 => Transport::WebSocketCached,
        _ => Transport::Auto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_as_pi_reads_them() {
        assert_eq!(Transport::parse(None), Transport::Auto);
        assert_eq!(Transport::parse(Some("")), Transport::Auto);
        assert!(!Transport::parse(Some("sse")).uses_socket());
        assert!(Transport::parse(Some("websocket")).uses_socket());
        assert!(!Transport::parse(Some("websocket")).continues());
        assert!(Transport::parse(Some("websocket-cached")).continues());
        assert!(Transport::parse(Some("auto")).continues());
        // pi tries the socket for any value but "sse", without a continuation.
        assert_eq!(Transport::parse(Some("quic")), Transport::WebSocket);
    }
}

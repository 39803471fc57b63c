//! What workers say to each other on the bus, and where.
//!
//! * `pi.w.<worker>.cmd` (request/reply): a worker whose client uses a
//!   session owned elsewhere asks the owner to open a *mirror* of it, sends it
//!   the client's ops, and closes it ([`PeerRequest`], answered [`PeerAnswer`]).
//! * `pi.w.<worker>.m.<mirror>`: the owner's side of a mirror, in order:
//!   events with their `seq`, replies, heartbeats, and the end ([`Frame`]).
//! * `pi.ev.<session>` (the JetStream stream of the events module):
//!   every event of the session with its `seq`.
//!
//! Ops, replies and events travel as the core's own types in JSON (serde);
//! session and worker names become subject tokens with [`token`].

use pi_core::error::CoreError;
use pi_core::event::AgentEvent;
use pi_core::op::{Op, Reply, RequestTag};
use serde::{Deserialize, Serialize};

/// A session id or worker name as one subject token: `.` (a separator in
/// subjects, allowed in session ids) becomes `~` (not allowed in ids), and
/// anything else a subject cannot hold becomes `_`.
pub fn token(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '.' => '~',
            c if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '~' | '=') => c,
            _ => '_',
        })
        .collect()
}

/// The subject of session `id`'s events.
pub fn event_subject(id: &str) -> String {
    format!("pi.ev.{}", token(id))
}

/// The subject a worker serves its peers' requests on.
pub fn command_subject(worker: &str) -> String {
    format!("pi.w.{}.cmd", token(worker))
}

/// The subject of one mirror's frames, on the worker that holds the mirror.
pub fn mirror_subject(worker: &str, mirror: u64) -> String {
    format!("pi.w.{}.m.{mirror}", token(worker))
}

/// Which mirror: the worker holding it and its number there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MirrorId {
    pub worker: String,
    pub mirror: u64,
}

/// A request from a mirror's worker to a session's owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PeerRequest {
    /// Attach the mirror to session `session` (its frames go to
    /// [`mirror_subject`]); with `after_seq`, the events after it first.
    Open { session: String, mirror: MirrorId, after_seq: Option<u64> },
    /// An op of one of the mirror's clients (`tag`: the mirror's own tag).
    Op { mirror: MirrorId, tag: Option<RequestTag>, op: Op },
    /// The mirror has no client any more.
    Close { mirror: MirrorId },
}

/// The owner's answer to a [`PeerRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PeerAnswer {
    /// Done (opened, queued to the session, closed).
    Done,
    /// This worker does not serve that session (any more): ask again where it is.
    NotOwner,
    /// No such mirror here (its owner restarted it): open it again.
    UnknownMirror,
    /// The request itself failed.
    Failed(CoreError),
}

/// One frame of a mirror, numbered from 1 so the mirror sees a loss.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame {
    pub n: u64,
    pub body: FrameBody,
}

// Nearly every frame is an event: boxing it would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FrameBody {
    Event {
        seq: u64,
        event: AgentEvent,
    },
    Reply {
        tag: RequestTag,
        result: Result<Reply, CoreError>,
    },
    /// Nothing happened for a while: the owner is alive.
    Beat,
    /// The owner let go of the mirror (the session unloaded, was handed
    /// over, or the mirror did not keep up): find the session again.
    Closed {
        reason: String,
    },
}

/// Split `payload` into parts of at most `max` bytes (one part when it fits).
pub fn parts(payload: bytes::Bytes, max: usize) -> Vec<bytes::Bytes> {
    let max = max.max(1);
    if payload.len() <= max {
        return vec![payload];
    }
    (0..payload.len()).step_by(max).map(|at| payload.slice(at..(at + max).min(payload.len()))).collect()
}

/// Header naming a message's part (`i/n`, from 1) when a payload was split.
pub const PART_HEADER: &str = "Pi-Part";

/// Reassembles the parts of split payloads, in order.
#[derive(Debug, Default)]
pub struct Joiner {
    pending: Vec<u8>,
    expected: usize,
}

impl Joiner {
    /// Take one message: `Some(payload)` once whole. `part` is the
    /// [`PART_HEADER`] value, absent for a payload that was not split.
    pub fn take(&mut self, part: Option<&str>, payload: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let Some(part) = part else {
            if self.expected != 0 {
                return Err("a split payload was cut short".into());
            }
            return Ok(Some(payload.to_vec()));
        };
        let (i, n) = part
            .split_once('/')
            .and_then(|(i, n)| Some((i.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
            .ok_or_else(|| format!("bad {PART_HEADER} {part:?}"))?;
        if i == 1 {
            self.pending.clear();
            self.expected = n;
        } else if n != self.expected || i == 0 {
            return Err(format!("part {part} out of order"));
        }
        self.pending.extend_from_slice(payload);
        if i == n {
            self.expected = 0;
            return Ok(Some(std::mem::take(&mut self.pending)));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_subject_tokens() {
        assert_eq!(token("a.b-c_1"), "a~b-c_1");
        assert_eq!(token("host:12 x*"), "host:12_x_");
        assert_eq!(event_subject("s.1"), "pi.ev.s~1");
        assert_eq!(mirror_subject("w1", 7), "pi.w.w1.m.7");
    }

    #[test]
    fn split_payloads_come_back_whole() {
        let payload = bytes::Bytes::from((0..=255u8).cycle().take(1000).collect::<Vec<_>>());
        let split = parts(payload.clone(), 300);
        assert_eq!(split.len(), 4);
        let mut joiner = Joiner::default();
        let n = split.len();
        let mut whole = None;
        for (i, part) in split.iter().enumerate() {
            whole = joiner.take(Some(&format!("{}/{n}", i + 1)), part).unwrap();
        }
        assert_eq!(whole.as_deref(), Some(&payload[..]));
        assert_eq!(joiner.take(None, b"x").unwrap().as_deref(), Some(&b"x"[..]));
        assert!(joiner.take(Some("2/3"), b"x").is_err());
    }

    #[test]
    fn frames_round_trip() {
        let frame = Frame { n: 3, body: FrameBody::Reply { tag: 1 << 40, result: Ok(Reply::Ack) } };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(serde_json::from_str::<Frame>(&text).unwrap(), frame);
    }
}

//! A lease's compare-and-set write (a renewal, or a new lease's create) as
//! a plain request on the lease keeper's connection: the value published to
//! the lease's subject in the bucket's stream (`$KV.<bucket>.<session id>`)
//! with the header `Nats-Expected-Last-Subject-Sequence` (the revision the
//! writer last saw; 0 for a key that must not exist), which is the write the
//! KV client's `update` and `create` make, and the stream's acknowledgement
//! read into a small struct: the stream and the new revision, or the error
//! code (10071: the lease is no longer at that revision).
//!
//! Through the KV client a renewal took about thirty allocations on the
//! keeper's thread (the subject, the header map, the acknowledgement's boxed
//! future and permit, and its parse through serde's untagged buffering into
//! an owned `PublishAck`); here the request's subject, headers and inbox, and
//! nothing for reading its answer. Every held lease is renewed every third of
//! the TTL, so these are most of what the keeper does.

use std::borrow::Cow;
use std::time::Duration;

use async_nats::header::{HeaderMap, HeaderValue, NATS_EXPECTED_LAST_SUBJECT_SEQUENCE};
use async_nats::{Client, Request, RequestErrorKind};
use bytes::Bytes;
use serde::Deserialize;

use super::LEASE_BUCKET;

/// How long a write waits for its acknowledgement (the JetStream client's
/// default, which the KV client's writes had).
const ACK_WAIT: Duration = Duration::from_secs(5);

/// The subjects of the leases: the prefix, then the session id.
const SUBJECT_PREFIX: &str = concat!("$KV.", "pi_leases", ".");

/// JetStream's error code for a write whose expected last sequence is not the subject's.
const WRONG_LAST_SEQUENCE: u64 = 10071;

/// What a lease's write came to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Written {
    /// Stored: the lease's new revision.
    At(u64),
    /// The lease is not at the expected revision (another write came
    /// between, it expired, or it exists when it was to be created).
    WrongLast,
    /// The bus could not tell (away, timed out, refused for another reason).
    Failed(String),
}

/// The JetStream acknowledgement of a write, borrowed from its answer.
/// (Its text fields are `Cow`s themselves, not in an `Option`: serde borrows
/// only those, and would copy an `Option<Cow>`'s text into a `String`.)
#[derive(Deserialize)]
struct Ack<'a> {
    #[serde(borrow, default)]
    stream: Cow<'a, str>,
    seq: Option<u64>,
    #[serde(borrow)]
    error: Option<AckError<'a>>,
}

#[derive(Deserialize)]
struct AckError<'a> {
    #[serde(default)]
    err_code: u64,
    #[serde(borrow, default)]
    description: Cow<'a, str>,
}

/// True for the name of the stream the lease bucket is made of (`KV_<bucket>`).
fn is_lease_stream(name: &str) -> bool {
    name.strip_prefix("KV_") == Some(LEASE_BUCKET)
}

/// A key the KV bucket accepts (as its client checks: not empty, not
/// starting or ending with a dot, of `[-/_=.a-zA-Z0-9]`).
fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with('.')
        && !key.ends_with('.')
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'/' | b'_' | b'=' | b'.'))
}

/// What an acknowledgement of the lease bucket's stream says.
fn read_ack(payload: &[u8]) -> Written {
    let ack = match serde_json::from_slice::<Ack<'_>>(payload) {
        Ok(ack) => ack,
        Err(e) => return Written::Failed(format!("an unreadable acknowledgement ({e})")),
    };
    match (ack.error, ack.stream, ack.seq) {
        (Some(error), ..) if error.err_code == WRONG_LAST_SEQUENCE => Written::WrongLast,
        (Some(error), ..) => Written::Failed(format!("{} (JetStream error {})", error.description, error.err_code)),
        (None, stream, Some(seq)) if is_lease_stream(&stream) => Written::At(seq),
        (None, stream, _) => Written::Failed(format!(
            "an acknowledgement without a sequence, or from another stream than KV_{LEASE_BUCKET} ({stream:?})"
        )),
    }
}

/// Writes leases through one connection.
#[derive(Clone)]
pub(super) struct LeaseWriter {
    client: Client,
}

impl LeaseWriter {
    pub(super) fn new(client: Client) -> LeaseWriter {
        LeaseWriter { client }
    }

    /// Write `value` as session `id`'s lease if the lease is at revision
    /// `last` (0: if there is none).
    pub(super) async fn write(&self, id: &str, value: Bytes, last: u64) -> Written {
        if !is_valid_key(id) {
            return Written::Failed(format!("{id:?} cannot be a key of the lease bucket"));
        }
        let mut headers = HeaderMap::new();
        headers.insert(NATS_EXPECTED_LAST_SUBJECT_SEQUENCE, HeaderValue::from(last));
        let request = Request::new().headers(headers).payload(value).timeout(Some(ACK_WAIT));
        // Sized at once (a `format!` grows its string on the way).
        let mut subject = String::with_capacity(SUBJECT_PREFIX.len() + id.len());
        subject.push_str(SUBJECT_PREFIX);
        subject.push_str(id);
        match self.client.send_request(subject, request).await {
            Ok(answer) => read_ack(&answer.payload),
            Err(e) if e.kind() == RequestErrorKind::NoResponders => {
                Written::Failed(format!("no stream takes the lease bucket's writes ({e})"))
            }
            Err(e) => Written::Failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_acknowledgement_gives_the_revision_and_a_wrong_last_sequence_is_told_apart() {
        assert_eq!(read_ack(br#"{"stream":"KV_pi_leases","seq":42}"#), Written::At(42));
        assert_eq!(read_ack(br#"{"stream":"KV_pi_leases","domain":"","seq":7,"duplicate":false}"#), Written::At(7));
        assert_eq!(
            read_ack(br#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 41"}}"#),
            Written::WrongLast
        );
        match read_ack(br#"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}"#) {
            Written::Failed(why) => {
                assert!(why.contains("maximum messages exceeded") && why.contains("10077"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        for odd in [&br#"{"stream":"OTHER","seq":1}"#[..], br#"{"stream":"KV_pi_leases"}"#, b"not json", b""] {
            assert!(matches!(read_ack(odd), Written::Failed(_)), "{}", String::from_utf8_lossy(odd));
        }
    }

    #[test]
    fn the_subject_prefix_is_the_lease_buckets() {
        assert_eq!(SUBJECT_PREFIX, format!("$KV.{LEASE_BUCKET}."));
    }

    #[test]
    fn keys_are_checked_as_the_kv_client_checks_them() {
        for good in ["0190e2a4-7b1c-7def-8000-0123456789ab", "my.session", "a_b=c/d"] {
            assert!(is_valid_key(good), "{good}");
        }
        for bad in ["", ".a", "a.", "a b", "a*", "a>"] {
            assert!(!is_valid_key(bad), "{bad}");
        }
    }
}

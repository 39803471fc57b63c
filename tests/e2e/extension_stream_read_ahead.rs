//! Two recorders' logs compared where timing alone may part them: how far
//! the reader of a reply's body ran ahead of the extensions' handlers.
//!
//! Both programs read the body on while the handlers of the frames read so
//! far still run, and a frame's `provider_stream_event` is handed over when
//! its frame is read, its `message_update`s once the agent gets to them,
//! each showing the streaming message as it stands then. The fake server
//! paces its frames so that each is handed over before the next arrives,
//! but on a loaded machine, in either program, the reader may still get
//! ahead: that moves stream events ahead of earlier frames' updates, and
//! lets the updates of that message show a later state of it. Nothing
//! else: every other difference fails, as does a stream event placed
//! where no read-ahead puts it (after another event than an update).

use std::ops::Range;

use serde_json::Value;

use crate::extension_event_stream::first_difference;

const STREAMED: &str = "provider_stream_event";
const UPDATE: &str = "message_update";

/// One log split in two: its stream events, and the rest with, for each
/// stream event, how many of the rest come before it.
struct Placed<'a> {
    streamed: Vec<&'a Value>,
    rest: Vec<&'a Value>,
    after: Vec<usize>,
}

fn placed(records: &[Value]) -> Placed<'_> {
    let mut split = Placed { streamed: Vec::new(), rest: Vec::new(), after: Vec::new() };
    for record in records {
        if record["event"] == STREAMED {
            split.after.push(split.rest.len());
            split.streamed.push(record);
        } else {
            split.rest.push(record);
        }
    }
    split
}

/// The message `rest[at]` belongs to: from its `message_start` to its
/// `message_end`.
fn message_around(rest: &[&Value], at: usize) -> Range<usize> {
    let start = rest[..at].iter().rposition(|r| r["event"] == "message_start").unwrap_or(0);
    let end = rest[at..].iter().position(|r| r["event"] == "message_end").map_or(rest.len(), |n| at + n);
    start..end
}

/// An update without the message it shows.
fn without_message(update: &Value) -> Value {
    let mut update = update.clone();
    if let Some(payload) = update["payload"].as_object_mut() {
        payload.remove("message");
    }
    if let Some(event) = update["payload"]["assistantMessageEvent"].as_object_mut() {
        event.remove("partial");
    }
    update
}

/// `ours` is pi's log (`theirs`), apart from what a reader running ahead
/// in either program changes.
pub(crate) fn assert_same_but_read_ahead(ours: &[Value], theirs: &[Value]) {
    if let Err(why) = same_but_read_ahead(ours, theirs) {
        panic!("{why}\n{}", first_difference(ours, theirs));
    }
}

fn same_but_read_ahead(ours: &[Value], theirs: &[Value]) -> Result<(), String> {
    if ours == theirs {
        return Ok(());
    }
    let (a, b) = (placed(ours), placed(theirs));
    if a.streamed != b.streamed {
        return Err("the stream events differ".into());
    }
    if a.rest.len() != b.rest.len() {
        return Err("the events other than stream events differ in number".into());
    }
    // Where the later of the two places each stream event: where a reader
    // that did not run ahead places it.
    let in_step: Vec<usize> = a.after.iter().zip(&b.after).map(|(x, y)| *x.max(y)).collect();
    let mut raced = vec![false; a.rest.len()];
    for (side, name) in [(&a, "pi-rpc"), (&b, "pi")] {
        for (k, (&at, &due)) in side.after.iter().zip(&in_step).enumerate() {
            if at == due {
                continue;
            }
            if !side.rest[at..due].iter().all(|r| r["event"] == UPDATE) {
                return Err(format!(
                    "{name} places stream event {k} after {at} other events, the other program after {due}: \
                     no read-ahead moves it past another event than an update"
                ));
            }
            message_around(&side.rest, at).for_each(|i| raced[i] = true);
        }
    }
    for (i, (x, y)) in a.rest.iter().zip(&b.rest).enumerate() {
        let same = if raced[i] && x["event"] == UPDATE { without_message(x) == without_message(y) } else { x == y };
        if !same {
            return Err(format!("event {i} apart from stream events differs:\n ours: {x}\npi's: {y}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::same_but_read_ahead;

    fn streamed(n: u32) -> Value {
        json!({"event": "provider_stream_event", "payload": {"data": n}})
    }

    fn update(delta: &str, shown: &str) -> Value {
        json!({"event": "message_update", "payload": {"message": shown, "assistantMessageEvent": {"delta": delta, "partial": shown}}})
    }

    fn event(name: &str) -> Value {
        json!({"event": name})
    }

    /// Three frames, each handed over before the next arrives.
    fn in_step() -> Vec<Value> {
        vec![
            event("message_start"),
            streamed(1),
            update("a", "a"),
            streamed(2),
            update("b", "ab"),
            streamed(3),
            update("c", "abc"),
            event("message_end"),
        ]
    }

    #[test]
    fn a_reader_ahead_of_the_handlers_is_the_same_log() {
        let ahead = vec![
            event("message_start"),
            streamed(1),
            streamed(2),
            streamed(3),
            update("a", "abc"),
            update("b", "abc"),
            update("c", "abc"),
            event("message_end"),
        ];
        assert_eq!(same_but_read_ahead(&ahead, &in_step()), Ok(()));
        assert_eq!(same_but_read_ahead(&in_step(), &ahead), Ok(()));
    }

    #[test]
    fn a_different_delta_or_an_update_outside_a_raced_message_fails() {
        let mut other_delta = in_step();
        other_delta[4] = update("x", "ab");
        assert!(same_but_read_ahead(&other_delta, &in_step()).is_err());
        let mut other_message = in_step();
        other_message[4] = update("b", "xx");
        assert!(same_but_read_ahead(&other_message, &in_step()).is_err());
    }

    #[test]
    fn a_stream_event_moved_past_another_event_fails() {
        // Stream event 3 after the message's end.
        let late = vec![
            event("message_start"),
            streamed(1),
            update("a", "a"),
            streamed(2),
            update("b", "ab"),
            update("c", "abc"),
            event("message_end"),
            streamed(3),
        ];
        assert!(same_but_read_ahead(&late, &in_step()).is_err());
        assert!(same_but_read_ahead(&in_step(), &late).is_err());
        // Stream event 1 before its message starts.
        let mut early = in_step();
        early.swap(0, 1);
        assert!(same_but_read_ahead(&early, &in_step()).is_err());
    }

    #[test]
    fn different_stream_events_or_other_events_fail() {
        let mut other = in_step();
        other[3] = streamed(9);
        assert!(same_but_read_ahead(&other, &in_step()).is_err());
        let mut other = in_step();
        other[7] = event("agent_end");
        assert!(same_but_read_ahead(&other, &in_step()).is_err());
    }
}

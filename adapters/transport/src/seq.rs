//! The `seq` member of an outbound message: `pi serve` numbers every event
//! of a session, and each message an event shows as carries the number (a
//! native event at its top level, a JSON-RPC notification in its `params`).
//!
//! The message is already serialized (compact, by serde_json), so the member
//! is spliced in before the closing brace of the object it belongs to: no
//! second serialization on the hot path.

/// Add `"seq":N` as the last member of the object that closes `depth`
/// bytes before the end of `message` (0: the message itself; 1: the last
/// member of the message, as JSON-RPC's `params`). A message of another
/// shape is returned unchanged.
pub fn insert_seq(mut message: Vec<u8>, depth: usize, seq: u64) -> Vec<u8> {
    let Some(close) = message.len().checked_sub(depth + 1) else { return message };
    if message[close] != b'}' || message[close + 1..].iter().any(|b| *b != b'}') {
        return message;
    }
    let empty = close > 0 && message[close - 1] == b'{';
    // `,"seq":` and the digits, written on the stack: no second allocation
    // (the message grows in place: its tail, closing braces only, is cut
    // and written again after the member).
    let mut member = [0u8; 28];
    let mut at = member.len();
    let mut rest = seq;
    loop {
        at -= 1;
        member[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let name: &[u8] = if empty { b"\"seq\":" } else { b",\"seq\":" };
    at -= name.len();
    member[at..at + name.len()].copy_from_slice(name);
    let tail = message.len() - close;
    message.truncate(close);
    message.reserve(member.len() - at + tail);
    message.extend_from_slice(&member[at..]);
    message.extend(std::iter::repeat_n(b'}', tail));
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parsed(bytes: Vec<u8>) -> Value {
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn the_member_lands_in_the_right_object() {
        let native = serde_json::to_vec(&json!({"type": "agent_start"})).unwrap();
        assert_eq!(parsed(insert_seq(native, 0, 7)), json!({"type": "agent_start", "seq": 7}));
        let rpc = serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "x", "params": {"a": {"b": 1}}})).unwrap();
        assert_eq!(
            parsed(insert_seq(rpc, 1, 9)),
            json!({"jsonrpc": "2.0", "method": "x", "params": {"a": {"b": 1}, "seq": 9}})
        );
        let empty = serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "x", "params": {}})).unwrap();
        assert_eq!(parsed(insert_seq(empty, 1, 1))["params"], json!({"seq": 1}));
        // Every digit of the widest and the smallest number, byte for byte.
        assert_eq!(insert_seq(b"{\"a\":1}".to_vec(), 0, u64::MAX), b"{\"a\":1,\"seq\":18446744073709551615}");
        assert_eq!(insert_seq(b"{}".to_vec(), 0, 0), b"{\"seq\":0}");
    }

    #[test]
    fn other_shapes_are_left_alone() {
        for text in ["[1,2]", "\"x\"", "", "{\"a\":[1]}"] {
            assert_eq!(insert_seq(text.as_bytes().to_vec(), 1, 3), text.as_bytes());
        }
        assert_eq!(insert_seq(b"[]".to_vec(), 0, 3), b"[]");
    }
}

//! Streamed responses give the bytes of the old encoding (the result
//! serialised whole, then the response, then separators escaped) over real
//! big replies; in a batch the result is assembled as before.

use pi_core::op::Reply;
use pi_transport::protocol::{COMMANDS, results};
use pi_transport::testing::{big_replies, whole_result, written};
use serde_json::value::{RawValue, to_raw_value};

use super::*;

/// The JSON-RPC binding of the command whose native `type` is `native`.
fn method(native: &str) -> &'static Binding {
    let command = COMMANDS.iter().find(|c| c.native.is_some_and(|b| b.name == native)).unwrap();
    command.jsonrpc.as_ref().unwrap()
}

fn id() -> Box<RawValue> {
    RawValue::from_string("\"req-é\u{2028}\"".to_string()).unwrap()
}

#[tokio::test]
async fn big_responses_are_streamed_with_the_bytes_of_the_whole_response() {
    for (name, reply) in big_replies() {
        let command = method(name);
        let old = escape_line_separators(response_bytes(&id(), Ok(whole_result(reply.clone()))));
        assert!(old.len() > 4 * pi_transport::streamed::PIECE_BYTES, "{name}: {} bytes", old.len());
        assert!(old.windows(6).any(|w| w == b"\\u2028") && !old.windows(3).any(|w| w == "\u{2028}".as_bytes()));

        let mut out = Vec::new();
        let pending = Pending { id: id(), command, batch: None };
        JsonRpc::default().reply_outgoing(pending, Ok(reply.clone()), &mut out);
        assert!(matches!(out[..], [Outgoing::Streamed(_)]), "{name}: {out:?}");
        assert_eq!(written(out).await, [&old[..], b"\n"].concat(), "{}: streamed", command.name);

        let mut whole = Vec::new();
        JsonRpc::default().reply(Pending { id: id(), command, batch: None }, Ok(reply), &mut whole);
        assert_eq!(whole, vec![old], "{}: assembled (WebSocket, Content-Length)", command.name);
    }
}

#[test]
fn a_big_response_in_a_batch_is_assembled_into_the_array() {
    let mut replies = big_replies().into_iter();
    let (first, big) = replies.next().unwrap();
    let mut dialect = JsonRpc::default();
    dialect.batches.insert(7, Batch { remaining: 2, responses: Vec::new() });
    let small_id = RawValue::from_string("2".to_string()).unwrap();
    let mut out = Vec::new();
    let small = Pending { id: small_id.clone(), command: method("get_fork_messages"), batch: Some(7) };
    dialect.reply_outgoing(small, Ok(Reply::ForkMessages(Vec::new())), &mut out);
    assert!(out.is_empty(), "the batch waits for its last answer");
    dialect.reply_outgoing(Pending { id: id(), command: method(first), batch: Some(7) }, Ok(big.clone()), &mut out);
    let small_response = response_bytes(&small_id, Ok(RawValue::from_string("{\"messages\":[]}".into()).unwrap()));
    let big_response = response_bytes(&id(), Ok(whole_result(big)));
    let array = [&b"["[..], &small_response, b",", &big_response, b"]"].concat();
    assert!(matches!(&out[..], [Outgoing::Bytes(bytes)] if *bytes == escape_line_separators(array)));
}

#[test]
fn small_responses_are_the_bytes_of_the_old_encoding() {
    use pi_transport::protocol::FromReply;
    let state = pi_transport::testing::state_reply();
    let Reply::State(snapshot) = state.clone() else { panic!("a state reply") };
    let state_data = to_raw_value(&results::StateData::from_reply(snapshot)).unwrap();
    let empty = RawValue::from_string("{}".to_string()).unwrap();
    let cases = [("get_state", state, state_data), ("abort", Reply::Ack, empty)];
    for (name, reply, result) in cases {
        let command = method(name);
        let old = escape_line_separators(response_bytes(&id(), Ok(result)));
        let mut out = Vec::new();
        JsonRpc::default().reply(Pending { id: id(), command, batch: None }, Ok(reply), &mut out);
        assert_eq!(out, vec![old], "{name}");
    }
    let command = method("get_state");
    let mut out = Vec::new();
    JsonRpc::default().reply(Pending { id: id(), command, batch: None }, Ok(Reply::Ack), &mut out);
    let error = "cannot encode the reply to getState: the reply is not this command's";
    let old = response_bytes(&id(), Err(ErrorObject::new(INTERNAL_ERROR, error.to_string())));
    assert_eq!(out, vec![escape_line_separators(old)]);
}

//! Streamed responses give the bytes of the old encoding (the result
//! serialised whole, the line built around it) over real big replies.

use pi_core::op::{EntryList, Reply, TreeWithLeaf};
use pi_transport::protocol::{self, results};
use pi_transport::testing::{big_replies, whole_result, written};
use serde_json::value::{RawValue, to_raw_value};

use super::*;

fn id() -> Option<Box<RawValue>> {
    Some(RawValue::from_string("\"req-é\\u2028\u{2029}\"".to_string()).unwrap())
}

#[tokio::test]
async fn big_responses_are_streamed_with_the_bytes_of_the_whole_line() {
    for (name, reply) in big_replies() {
        let command = protocol::native(name).unwrap();
        let line = serde_json::to_vec(&WireResponse::ok(id(), name, Some(whole_result(reply.clone())))).unwrap();
        assert!(line.len() > 4 * pi_transport::streamed::PIECE_BYTES, "{name}: {} bytes", line.len());

        let mut out = Vec::new();
        Native::default().reply_outgoing(Pending::Command { id: id(), command }, Ok(reply.clone()), &mut out);
        assert!(matches!(out[..], [Outgoing::Streamed(_)]), "{name}: {out:?}");
        assert_eq!(written(out).await, [&line[..], b"\n"].concat(), "{name} streamed");

        let mut whole = Vec::new();
        Native::default().reply(Pending::Command { id: id(), command }, Ok(reply), &mut whole);
        assert_eq!(whole, vec![line], "{name} assembled (WebSocket, Content-Length)");
    }
}

#[tokio::test]
async fn small_responses_stay_single_buffers() {
    let session = pi_transport::testing::big_session();
    let small = Reply::Entries(EntryList { entries: session.entries().take(3).cloned().collect(), leaf_id: None });
    let line = serde_json::to_vec(&WireResponse::ok(id(), "get_entries", Some(whole_result(small.clone())))).unwrap();
    let command = protocol::native("get_entries").unwrap();
    let mut out = Vec::new();
    Native::default().reply_outgoing(Pending::Command { id: id(), command }, Ok(small), &mut out);
    assert!(matches!(&out[..], [Outgoing::Bytes(bytes)] if *bytes == line), "{out:?}");
}

#[tokio::test]
async fn small_responses_are_the_bytes_of_the_old_encoding() {
    use pi_transport::protocol::FromReply;
    let state = pi_transport::testing::state_reply();
    let Reply::State(snapshot) = state.clone() else { panic!("a state reply") };
    let state_data = to_raw_value(&results::StateData::from_reply(snapshot)).unwrap();
    let null = RawValue::from_string("null".to_string()).unwrap();
    let cases = [
        ("get_state", Ok(state), Some(state_data)),
        ("abort", Ok(Reply::Ack), None),
        ("cycle_thinking_level", Ok(Reply::CycleThinkingLevel(None)), Some(null)),
    ];
    for (name, reply, data) in cases {
        let command = protocol::native(name).unwrap();
        let old = serde_json::to_vec(&WireResponse::ok(id(), name, data)).unwrap();
        let mut out = Vec::new();
        Native::default().reply(Pending::Command { id: id(), command }, reply, &mut out);
        assert_eq!(out, vec![old], "{name}");
    }
    let command = protocol::native("get_state").unwrap();
    for id in [None, id()] {
        let failed = pi_core::error::CoreError::busy("later");
        let old = serde_json::to_vec(&WireResponse::err(id.clone(), Some("get_state"), "later")).unwrap();
        let mut out = Vec::new();
        Native::default().reply(Pending::Command { id: id.clone(), command }, Err(failed), &mut out);
        assert_eq!(out, vec![old]);
        // A reply that is not the command's is an error response, as it always was.
        let mut out = Vec::new();
        Native::default().reply(Pending::Command { id: id.clone(), command }, Ok(Reply::Ack), &mut out);
        let error = "cannot encode the reply to get_state: the reply is not this command's";
        assert_eq!(out, vec![serde_json::to_vec(&WireResponse::err(id, Some("get_state"), error)).unwrap()]);
    }
}

#[test]
fn success_heads_are_the_bytes_of_wire_response() {
    let ids = ["1", "-0.5e3", "1e400", "\"a\"", "\"é \\\" \\u2028\"", "null", "{\"n\":[1, 2]}"];
    let ids = ids.map(|raw| Some(RawValue::from_string(raw.to_string()).unwrap()));
    // Every native command: its name goes in as it is, so none may need escaping.
    for command in protocol::COMMANDS.iter().filter_map(|c| c.native.as_ref()) {
        for id in ids.iter().cloned().chain([None, id()]) {
            let mut head = b"before".to_vec();
            write_success_head(&mut head, id.as_deref(), command.name);
            head.push(b'}');
            let expected = serde_json::to_vec(&WireResponse::ok(id, command.name, None)).unwrap();
            assert_eq!(String::from_utf8_lossy(&head[6..]), String::from_utf8_lossy(&expected), "{}", command.name);
        }
    }
}

#[test]
fn the_tree_is_written_as_its_nested_shape() {
    let Some((_, Reply::Tree(TreeWithLeaf { tree, leaf_id }))) =
        big_replies().into_iter().find(|(n, _)| *n == "get_tree")
    else {
        panic!("no tree");
    };
    fn nested(tree: &pi_core::op::SessionTree, node: &pi_core::op::TreeNode) -> results::TreeNodeData {
        results::TreeNodeData {
            entry: node.entry.clone(),
            children: tree.children(node).map(|child| nested(tree, child)).collect(),
            label: node.label.clone(),
            label_timestamp: node.label_timestamp.clone(),
        }
    }
    // Orphans, branches and labels are all there.
    assert!(tree.roots.len() > 1);
    assert!(tree.nodes.iter().any(|n| n.children.len() > 1) && tree.nodes.iter().any(|n| n.label.is_some()));
    let roots: Vec<_> = tree.roots().map(|root| nested(&tree, root)).collect();
    let expected = serde_json::json!({"tree": roots, "leafId": leaf_id});
    let data = whole_result(Reply::Tree(TreeWithLeaf { tree, leaf_id }));
    assert_eq!(data.get(), expected.to_string());
}

#[test]
fn delta_lines_are_the_bytes_of_the_mapped_event() {
    use pi_core::event::AssistantStreamEvent as E;
    let texts = [
        "",
        "plain",
        "quote \" backslash \\ slash /",
        "line\nbreak\ttab\r\u{1}\u{1f}",
        "é ü ✓ 😀",
        "\u{2028}\u{2029}",
        "</script>",
        "del \u{7f} nbsp \u{a0} last\\",
    ];
    // A usage with the fields pi 1.6.0 reports once the provider did (its cost in float form).
    let mut reported =
        pi_core::message::Usage { input: 614, output: 1, reasoning: Some(0), total_tokens: 615, ..Default::default() };
    reported.cost.input = 0.001842;
    reported.cost.total = 0.0018570000000000001;
    reported.cost.total_from_provider = Some(false);
    let mut count = 0;
    // One dialect and one usage cache for every line: each usage (a new
    // `Arc`) is serialised once, then its bytes are reused.
    let (mut native, mut cache) = (Native::default(), DeltaHead::default());
    for (text, usage) in texts.into_iter().zip([Default::default(), reported].into_iter().cycle()) {
        let usage = std::sync::Arc::new(usage);
        for content_index in [0, 7, 123_456] {
            for event in [
                E::TextDelta { content_index, delta: text.to_string() },
                E::ThinkingDelta { content_index, delta: text.to_string() },
                E::ToolCallDelta { content_index, delta: text.to_string() },
            ] {
                let event = AgentEvent::MessageUpdate { event, usage: usage.clone() };
                let mapped = map_event(event.clone(), |_| None).and_then(|wire| to_line(&wire)).unwrap();
                assert_eq!(delta_line(&event, &mut cache, None).as_deref(), Some(&mapped[..]), "{event:?}");
                let mut out = Vec::new();
                native.event(event.clone(), &InFlight::default(), &mut out);
                assert_eq!(out, vec![mapped.clone()]);
                // Numbered (`pi serve`), owned or shared: the mapped line with its `seq` member.
                for seq in [0, 42, u64::MAX] {
                    let numbered = pi_transport::seq::insert_seq(mapped.clone(), 0, seq);
                    let mut out = Vec::new();
                    native.sequenced_event(event.clone(), seq, &InFlight::default(), &mut out);
                    native.shared_event(&event, seq, &InFlight::default(), &mut out);
                    assert_eq!(out, vec![numbered.clone(), numbered], "{event:?}");
                }
                // Written into a batch: the same line.
                let mut batch = MessageBatch::default();
                batch.push(b"before");
                native.event_into(event, &InFlight::default(), &mut batch);
                assert_eq!(batch.messages().collect::<Vec<_>>(), vec![&b"before"[..], &mapped[..]]);
                count += 1;
            }
        }
    }
    assert_eq!(count, texts.len() * 9);
    // Other events take the general way.
    for event in [
        AgentEvent::MessageUpdate { event: E::TextStart { content_index: 0 }, usage: Default::default() },
        AgentEvent::MessageUpdate {
            event: E::TextEnd { content_index: 0, content: "x".into() },
            usage: Default::default(),
        },
        AgentEvent::AgentStart,
    ] {
        assert_eq!(delta_line(&event, &mut cache, None), None, "{event:?}");
        // Numbered, owned or shared: the general way's line with its `seq` member.
        let mapped = map_event(event.clone(), |_| None).and_then(|wire| to_line(&wire)).unwrap();
        let numbered = pi_transport::seq::insert_seq(mapped, 0, 9);
        let mut out = Vec::new();
        native.sequenced_event(event.clone(), 9, &InFlight::default(), &mut out);
        native.shared_event(&event, 9, &InFlight::default(), &mut out);
        assert_eq!(out, vec![numbered.clone(), numbered], "{event:?}");
    }
}

#[test]
fn events_written_into_a_batch_are_the_lines_of_event() {
    use pi_core::event::AssistantStreamEvent as E;
    use pi_core::message::{AgentMessage, AssistantMessage, StopReason};
    let model = pi_core::provider::faux::faux_model();
    let mut message = AssistantMessage::empty(&model, StopReason::Stop);
    message.content.push(pi_core::message::ContentBlock::Text(pi_core::message::TextContent {
        text: "a \u{2028} \"b\"".into(),
        text_signature: None,
    }));
    let message = Box::new(AgentMessage::Assistant(message));
    let usage = std::sync::Arc::new(pi_core::message::Usage { input: 3, output: 2, ..Default::default() });
    let events = [
        AgentEvent::AgentStart,
        AgentEvent::TurnStart,
        AgentEvent::MessageStart { message: message.clone() },
        AgentEvent::MessageUpdate { event: E::TextStart { content_index: 0 }, usage: usage.clone() },
        AgentEvent::MessageUpdate { event: E::TextDelta { content_index: 0, delta: "a".into() }, usage: usage.clone() },
        AgentEvent::MessageUpdate { event: E::TextEnd { content_index: 0, content: "a".into() }, usage },
        AgentEvent::MessageEnd { message },
        AgentEvent::AgentSettled { aborted: false, usage: Default::default() },
    ];
    let (mut one, mut batched) = (Native::default(), Native::default());
    let mut lines = Vec::new();
    let mut batch = MessageBatch::default();
    for event in events {
        one.event(event.clone(), &InFlight::default(), &mut lines);
        batched.event_into(event, &InFlight::default(), &mut batch);
    }
    assert_eq!(lines.len(), 8);
    assert_eq!(batch.messages().collect::<Vec<_>>(), lines.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let joined: Vec<u8> = lines.iter().flat_map(|line| line.iter().copied().chain([b'\n'])).collect();
    assert_eq!(batch.lines(), joined);
}

#[tokio::test]
async fn replies_written_into_a_batch_are_the_lines_of_reply_outgoing() {
    let state = pi_transport::testing::state_reply();
    let get_state = protocol::native("get_state").unwrap();
    let abort = protocol::native("abort").unwrap();
    let (name, big) = big_replies().into_iter().next().unwrap();
    let big_command = protocol::native(name).unwrap();
    let rejection = serde_json::to_vec(&WireResponse::err(None, Some("parse"), "bad")).unwrap();
    let cases = || {
        [
            (Pending::Command { id: id(), command: get_state }, Ok(state.clone())),
            (Pending::Command { id: None, command: get_state }, Ok(state.clone())),
            (Pending::Command { id: id(), command: abort }, Ok(Reply::Ack)),
            (Pending::Command { id: None, command: get_state }, Err(pi_core::error::CoreError::busy("later"))),
            // Not the command's reply: an error response.
            (Pending::Command { id: id(), command: get_state }, Ok(Reply::Ack)),
            (Pending::Rejection(rejection.clone()), Ok(Reply::Ack)),
            (Pending::Command { id: id(), command: big_command }, Ok(big.clone())),
        ]
    };
    let mut batch = MessageBatch::default();
    batch.push(b"{\"before\":1}");
    let mut expected = b"{\"before\":1}\n".to_vec();
    let mut streamed = Vec::new();
    for (pending, result) in cases() {
        let mut out = Vec::new();
        Native::default().reply_outgoing(pending, result, &mut out);
        expected.extend(written(out).await);
    }
    for (pending, result) in cases() {
        let mut rest = Vec::new();
        Native::default().reply_into(pending, result, &mut batch, &mut rest);
        if !rest.is_empty() {
            // A streamed reply is sent after what the batch holds.
            assert!(matches!(rest[..], [Outgoing::Streamed(_)]), "{rest:?}");
            streamed.extend(written(rest).await);
        }
    }
    assert_eq!(batch.len(), 7, "six whole replies after the first line");
    let got = [batch.lines(), &streamed].concat();
    assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(expected).unwrap());
}

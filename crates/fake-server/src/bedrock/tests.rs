use super::*;
use crate::reply::{FakeToolCall, Reply, stream};

const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// A request of the AWS SigV4 test suite (`aws-signing-test-suite/v4/<name>/header-signed-request.txt`).
fn suite_request(text: &str) -> RecordedRequest {
    let (head, body) = text.split_once("\n\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let mut start = lines.next().unwrap().split(' ');
    let (method, path) = (start.next().unwrap().to_string(), start.next().unwrap().to_string());
    let headers = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.to_ascii_lowercase(), v.to_string())
        })
        .collect();
    RecordedRequest { method, path, headers, body: Value::Null, raw_body: body.as_bytes().to_vec() }
}

/// Vectors from the AWS SigV4 test suite (shipped with the `aws-sigv4` crate).
const SUITE: [&str; 4] = [
    "POST / HTTP/1.1\nHost:example.amazonaws.com\nX-Amz-Date:20150830T123600Z\nAuthorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
    "GET /?Param2=value2&Param1=value1 HTTP/1.1\nHost:example.amazonaws.com\nX-Amz-Date:20150830T123600Z\nAuthorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
    "GET / HTTP/1.1\nHost:example.amazonaws.com\nX-Amz-Security-Token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267\nX-Amz-Date:20150830T123600Z\nAuthorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
    "POST / HTTP/1.1\nContent-Type:application/x-www-form-urlencoded\nHost:example.amazonaws.com\nContent-Length:13\nX-Amz-Date:20150830T123600Z\nx-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\nAuthorization:AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b\n\nParam1=value1",
];

#[test]
fn the_verifier_accepts_the_aws_test_suite_and_nothing_else() {
    for text in SUITE {
        let request = suite_request(text);
        assert_eq!(check_sigv4(&request, "AKIDEXAMPLE", SECRET, None), Ok(()), "{text}");
        assert!(check_sigv4(&request, "AKIDEXAMPLE", "other-secret", None).is_err());
        assert!(check_sigv4(&request, "AKIDOTHER", SECRET, None).is_err());
        // Too old for a live request.
        assert!(verify_sigv4(&request, "AKIDEXAMPLE", SECRET).unwrap_err().contains("15 minutes"));
        let mut moved = request.clone();
        moved.path = "/elsewhere".into();
        assert!(check_sigv4(&moved, "AKIDEXAMPLE", SECRET, None).is_err());
        let mut dated = request.clone();
        for (k, v) in dated.headers.iter_mut() {
            if k == "x-amz-date" {
                *v = "20150830T123601Z".into();
            }
        }
        assert!(check_sigv4(&dated, "AKIDEXAMPLE", SECRET, None).is_err());
    }
    let mut tampered = suite_request(SUITE[3]);
    tampered.raw_body = b"Param1=value2".to_vec();
    assert!(check_sigv4(&tampered, "AKIDEXAMPLE", SECRET, None).unwrap_err().contains("does not match the body"));
}

#[test]
fn dates_parse() {
    let t = parse_amz_date("20150830T123600Z").unwrap();
    assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 1_440_938_160);
    assert!(parse_amz_date("2015-08-30T12:36:00Z").is_none());
}

fn decode(frames: &[Frame]) -> Vec<(String, Value)> {
    use aws_smithy_eventstream::frame::read_message_from;
    let mut out = Vec::new();
    for f in frames {
        let message = read_message_from(&mut f.bytes.as_slice()).unwrap();
        let name = message
            .headers()
            .iter()
            .find(|h| h.name().as_str() == ":event-type")
            .and_then(|h| h.value().as_string().ok().map(|s| s.as_str().to_string()))
            .unwrap_or_default();
        out.push((name, serde_json::from_slice(message.payload()).unwrap()));
    }
    out
}

#[test]
fn replies_render_as_converse_events() {
    let reply = Reply::text("Hi").with_thinking("hmm").with_tool_call(FakeToolCall::new("c1", "bash", r#"{"a":1}"#));
    let events = decode(&render(&stream(reply.usage(10, 3, 0)), &RequestInfo::default()));
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"messageStart"));
    assert_eq!(&names[names.len() - 2..], ["messageStop", "metadata"]);
    assert!(events.contains(&(
        "contentBlockDelta".into(),
        json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hmm"}}})
    )));
    assert!(events.contains(&(
        "contentBlockStart".into(),
        json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "c1", "name": "bash"}}})
    )));
    assert!(events.contains(&("messageStop".into(), json!({"stopReason": "tool_use"}))));
    assert_eq!(events.last().unwrap().1["usage"]["inputTokens"], 10);
}

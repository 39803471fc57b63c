//! Connection tests: headers and failures of HTTP servers, a stdio server's exit.

use super::*;
use crate::mcp::config::Exposure;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn http_server(url: String, headers: crate::mcp::config::ConfigValues) -> ServerConfig {
    ServerConfig {
        name: "remote".into(),
        transport: Transport::Http { url, headers, oauth: None },
        exposure: Exposure::Direct,
        tool_exposure: Vec::new(),
        timeout: Duration::from_secs(5),
        description: None,
        source: "test".into(),
        raw: Value::Null,
        scope: None,
        override_path: None,
    }
}

#[test]
#[allow(deprecated)] // MCP roots
fn the_root_is_the_directory_as_a_file_uri_with_its_name() {
    let root = root(std::path::Path::new("/tmp/a dir")).unwrap();
    assert_eq!((root.uri.as_str(), root.name.as_deref()), ("file:///tmp/a%20dir", Some("a dir")));
}

#[tokio::test]
async fn http_servers_get_the_configured_headers_and_failures_are_recorded() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 8192];
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains("\r\n\r\n") {
            let n = sock.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        let _ =
            sock.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
        String::from_utf8_lossy(&got).to_lowercase()
    });
    let headers = vec![
        ("Authorization".into(), crate::mcp::config::ConfigValue::Text("Bearer tok-123".into())),
        ("X-Team".into(), crate::mcp::config::ConfigValue::Command("printf blue".into())),
    ];
    let conn = Connection::new(http_server(format!("http://{addr}/mcp"), headers));
    conn.connect().await;
    let request = seen.await.unwrap();
    assert!(request.starts_with("post /mcp "), "{request}");
    assert!(request.contains("authorization: bearer tok-123"), "{request}");
    assert!(request.contains("x-team: blue"), "{request}");
    assert!(matches!(conn.state().status, Status::Failed(_)), "{:?}", conn.state().status);
    // The next call tries again, and fails as an error string.
    let err = conn.call_tool("echo", serde_json::json!({}), &CancellationToken::new(), None).await.unwrap_err();
    assert!(!err.contains("tok-123"), "{err}");
}

#[tokio::test]
async fn a_server_that_exits_is_reported_with_its_status() {
    let config = ServerConfig {
        name: "gone".into(),
        transport: Transport::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), "echo oops >&2; exit 7".into()],
            env: Vec::new(),
            cwd: std::env::temp_dir(),
        },
        exposure: Exposure::Direct,
        tool_exposure: Vec::new(),
        timeout: Duration::from_secs(5),
        description: None,
        source: "test".into(),
        raw: Value::Null,
        scope: None,
        override_path: None,
    };
    let conn = Connection::new(config);
    conn.connect().await;
    let Status::Failed(message) = conn.state().status else { panic!("{:?}", conn.state().status) };
    assert!(message.contains("exited (exit status: 7)"), "{message}");
    assert!(message.contains("stderr:\noops"), "{message}");
}

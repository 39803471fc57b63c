//! The test extensions' streamable-HTTP transport over fetch
//! (`fixtures/mcp_fetch_transport.ts`), shared by the tests of pi's
//! `createMcpExtension({ createTransport })`: an extension's source is the
//! fixture followed by the extension's own code, which calls
//! `fetchTransport(url, hooks)` and may throw pi-mcp's HTTP errors from
//! `piMcp()` (pi 1.6.0's own classes when the reference is installed).

const FIXTURE: &str = include_str!("fixtures/mcp_fetch_transport.ts");

/// An extension's source: the transport, then `extension`.
pub(crate) fn with_fetch_transport(extension: &str) -> String {
    let pi_mcp = crate::extension_provider_events::reference_cli()
        .and_then(|cli| Some(cli.parent()?.parent()?.parent()?.join("pi-mcp/dist/index.js")))
        .map(|path| path.display().to_string())
        .unwrap_or_default();
    format!("{}\n{extension}", FIXTURE.replace("PI_MCP", &pi_mcp))
}

//! What an SDK session's `createMcpExtension(options)` hands pi-rpc's client
//! of that session as functions, which stay in the extension's process:
//! `createTransport` (its servers' transports), `credentials` (its OAuth
//! store, in place of `mcp-auth.json`) and `openUrl` (how a sign-in URL is
//! opened). The shim's `open` says which were given (`transports: true`,
//! `auth: {credentials, openUrl}`); each call to them carries the session id,
//! by which the host finds that session's factory (host.mjs).

use std::sync::Arc;

use serde_json::Value;

use crate::extensions::Extension;
use crate::mcp::McpManager;

/// Give `manager`, SDK session `session`'s, the functions `opening` names,
/// each called in `owner`'s process.
pub(super) fn apply(manager: &McpManager, opening: &Value, owner: Arc<Extension>, session: &str) {
    let session = Some(session.to_string());
    if opening.get("transports").and_then(Value::as_bool) == Some(true) {
        let host = super::mcp_transport_host::ExtensionTransports { owner: owner.clone(), session: session.clone() };
        manager.factories.set_transport_host(Arc::new(host));
    }
    let auth = opening.get("auth");
    let given = |key: &str| auth.and_then(|auth| auth.get(key)).and_then(Value::as_bool) == Some(true);
    if given("credentials") {
        let store = super::mcp_credentials::ExtensionCredentials::new(owner.clone(), session.clone());
        manager.factories.use_extension_credentials(Arc::new(store));
    }
    if given("openUrl") {
        manager.factories.set_open_url(super::mcp_credentials::open_url_of(owner, session));
    }
}

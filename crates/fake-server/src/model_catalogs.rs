//! pi's model catalog server (pi.dev's `GET /api/models/providers/<id>`)
//! for tests of the catalog refresh: each provider's answer is set by the
//! test; a request whose `if-none-match` is the catalog's `etag` gets a 304;
//! a provider without an answer gets a 404. OpenRouter's list of the
//! models a key may use (`GET …/models/user`) is served too when set, to
//! one key or to any.

use std::collections::HashMap;

use serde_json::Value;

use crate::RecordedRequest;
use crate::aws_services::Answer;

/// One provider's answer.
#[derive(Debug, Clone)]
pub enum Catalog {
    /// A catalog: its body, `Last-Modified` and `etag`.
    Served { body: Value, last_modified: String, etag: String },
    /// A failure status.
    Failing(u16),
}

/// What the server answers.
#[derive(Debug, Clone, Default)]
pub struct Catalogs {
    /// Each provider's catalog, by provider id.
    pub providers: HashMap<String, Catalog>,
    /// The body of OpenRouter's `GET …/models/user`, if served.
    pub user_models: Option<Value>,
    /// The one key `…/models/user` answers, when set (another gets a 401).
    pub user_key: Option<String>,
}

/// The catalog server's answer, or None for other requests.
pub fn answer(request: &RecordedRequest, catalogs: &Catalogs) -> Option<Answer> {
    if request.method != "GET" {
        return None;
    }
    let path = request.path.split_once('?').map_or(request.path.as_str(), |(p, _)| p);
    if let (true, Some(body)) = (path.ends_with("/models/user"), &catalogs.user_models) {
        let bearer = request.header("authorization").and_then(|h| h.strip_prefix("Bearer "));
        if catalogs.user_key.as_deref().is_some_and(|key| bearer != Some(key)) {
            return Some((401, Vec::new(), r#"{"error":{"message":"Invalid key"}}"#.to_string()));
        }
        return Some((200, vec![("content-type".to_string(), "application/json".to_string())], body.to_string()));
    }
    let provider = path.strip_prefix("/api/models/providers/")?;
    Some(match catalogs.providers.get(provider) {
        None => (404, Vec::new(), String::new()),
        Some(Catalog::Failing(status)) => (*status, Vec::new(), "down".to_string()),
        Some(Catalog::Served { etag, .. }) if request.header("if-none-match") == Some(etag.as_str()) => {
            (304, vec![("etag".to_string(), etag.clone())], String::new())
        }
        Some(Catalog::Served { body, last_modified, etag }) => (
            200,
            vec![
                ("content-type".to_string(), "application/json".to_string()),
                ("last-modified".to_string(), last_modified.clone()),
                ("etag".to_string(), etag.clone()),
            ],
            body.to_string(),
        ),
    })
}

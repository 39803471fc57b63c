//! A subscription login asked for by a client (`Op::Login`), and the reply
//! once it waits for the user (the flows themselves are in pi-auth).

/// What to log in to, and how.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoginRequest {
    pub provider: String,
    /// A method id of the flow; `None`: its default (the browser when it has one).
    pub method: Option<String>,
    /// Take the flow's first method other than the browser (pi's `--no-browser`).
    pub no_browser: bool,
    /// The answer to a text question (GitHub Enterprise's domain) when
    /// nobody can be asked.
    pub answer: Option<String>,
}

/// A login waiting for the user: where to sign in, or the code to enter.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoginStarted {
    pub provider: String,
    /// The login's display name ("Anthropic (Claude Pro/Max)").
    pub name: String,
    pub method: String,
    /// The sign-in page (browser sign-ins).
    pub url: Option<String>,
    pub instructions: Option<String>,
    /// The code to enter at `verification_uri` (device codes).
    pub user_code: Option<String>,
    pub verification_uri: Option<String>,
    pub expires_in_seconds: Option<f64>,
}

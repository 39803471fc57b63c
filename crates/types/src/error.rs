//! Protocol-neutral errors: what went wrong, classified so each front end can map it.

use std::fmt;

/// The small classification every adapter maps to its wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ErrorKind {
    /// A request field is missing, mistyped or out of range.
    InvalidParams,
    /// The command names something that does not exist (entry, session, model).
    NotFound,
    /// The agent is busy and the command cannot run now.
    Busy,
    /// The operation is not supported by this build or configuration.
    Unsupported,
    /// The model call failed (provider error, auth, bad request).
    Model,
    /// A tool failed outside the model's turn.
    Tool,
    /// The provider rate-limited us.
    RateLimit,
    /// The conversation does not fit the model's context window.
    ContextLimit,
    /// The operation was aborted.
    Aborted,
    /// Anything else: a bug or an I/O failure on our side.
    Internal,
}

impl ErrorKind {
    /// Stable snake_case name used in wire `data.kind` fields and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidParams => "invalid_params",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Busy => "busy",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Model => "model_error",
            ErrorKind::Tool => "tool_error",
            ErrorKind::RateLimit => "rate_limit",
            ErrorKind::ContextLimit => "context_limit",
            ErrorKind::Aborted => "aborted",
            ErrorKind::Internal => "internal",
        }
    }
}

/// An error returned by a core operation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoreError {
    pub kind: ErrorKind,
    /// Human-readable text; the native dialect sends it as `error`.
    pub message: String,
    /// The request field at fault, for `InvalidParams`.
    pub field: Option<String>,
    /// Whether trying again later may succeed.
    pub retryable: bool,
}

impl CoreError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CoreError { kind, message: message.into(), field: None, retryable: matches!(kind, ErrorKind::RateLimit) }
    }

    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        CoreError {
            kind: ErrorKind::InvalidParams,
            message: message.into(),
            field: Some(field.to_string()),
            retryable: false,
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        CoreError::new(ErrorKind::NotFound, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        CoreError::new(ErrorKind::Internal, message)
    }

    pub fn busy(message: impl Into<String>) -> Self {
        CoreError::new(ErrorKind::Busy, message)
    }

    /// Name the request field at fault.
    pub fn with_field(mut self, field: &str) -> Self {
        self.field = Some(field.to_string());
        self
    }

    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CoreError {}

impl From<std::io::Error> for CoreError {
    fn from(e: std::io::Error) -> Self {
        CoreError::internal(e.to_string())
    }
}

//! What the login servers answer, as one typed struct: the device
//! authorization (RFC 8628 §3.2), a token endpoint's answer to a grant, a poll
//! or a refresh (RFC 6749 §5), and the few fields a provider adds. Each field
//! is kept as sent and read the way the login needs it (a string, a number,
//! pi's positive number, a trusted URL), so a field of another JSON type
//! reads as absent, as before.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::trusted_url;
use crate::provider::lenient;

/// One field of an answer, as sent (`None`: absent).
#[derive(Debug, Default, Clone)]
pub struct Field(Option<Value>);

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(|v| Field(Some(v)))
    }
}

impl Field {
    /// Present, `null` included.
    pub fn is_present(&self) -> bool {
        self.0.is_some()
    }

    pub fn value(&self) -> Option<&Value> {
        self.0.as_ref()
    }

    /// A string.
    pub fn text(&self) -> Option<&str> {
        self.0.as_ref().and_then(Value::as_str)
    }

    /// A non-empty string.
    pub fn filled(&self) -> Option<&str> {
        self.text().filter(|s| !s.is_empty())
    }

    /// A JSON number.
    pub fn number(&self) -> Option<f64> {
        self.0.as_ref().and_then(Value::as_f64)
    }

    /// A positive finite number, also when sent as a numeric string.
    pub fn positive(&self) -> Option<f64> {
        let value = match self.0.as_ref()? {
            Value::Number(n) => n.as_f64()?,
            Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        (value.is_finite() && value > 0.0).then_some(value)
    }

    /// An `http:`/`https:` URL, normalised (see [`trusted_url`]).
    pub fn url(&self) -> Option<String> {
        trusted_url(self.0.as_ref())
    }
}

/// A login server's answer.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Answer {
    // The device authorization.
    pub device_code: Field,
    pub user_code: Field,
    pub verification_uri: Field,
    pub verification_uri_complete: Field,
    pub expires_in: Field,
    pub interval: Field,
    // A token endpoint's answer.
    pub access_token: Field,
    pub refresh_token: Field,
    pub id_token: Field,
    pub scope: Field,
    /// A string, or (OpenAI Codex) an object with a `code`.
    pub error: Field,
    pub error_description: Field,
    // OpenAI Codex's device flow.
    pub device_auth_id: Field,
    pub authorization_code: Field,
    pub code_verifier: Field,
    // GitHub Copilot's token exchange.
    pub token: Field,
    pub expires_at: Field,
    // Meta's key mint.
    pub api_key: Field,
    pub action_url: Field,
    // OpenRouter's key exchange.
    pub key: Field,
    // Radius's OAuth configuration.
    #[serde(rename = "authorizationEndpoint")]
    pub authorization_endpoint: Field,
}

impl Answer {
    /// The answer in `json` (all fields absent when it is no object).
    pub fn of(json: &Value) -> Answer {
        lenient::event_ref(json).unwrap_or_default()
    }

    /// The error code: `error` itself, or its `code` when it is an object.
    pub fn error_code(&self) -> Option<String> {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Coded {
            code: Field,
        }
        match self.error.value()? {
            Value::Object(_) => lenient::event_ref::<Coded>(self.error.value()?)?.code.text().map(str::to_string),
            other => other.as_str().map(str::to_string),
        }
    }
}

/// The fields of a stored credential (auth.json) a login reads besides its
/// tokens and expiry (those borrowed by `oauth::access` and its siblings).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Stored {
    /// `oauth` or `api_key`.
    #[serde(rename = "type")]
    pub kind: Field,
    /// GitHub Copilot's enterprise domain.
    pub enterprise_url: Field,
    /// The OpenAI (ChatGPT) client id issued at login.
    pub client_id: Field,
}

impl Stored {
    /// The fields of `credential` (all absent when it is no object).
    pub fn of(credential: &Value) -> Stored {
        lenient::event_ref(credential).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// pi-rpc's key lookup of a positive number before this struct, as it was written.
    fn old_positive(body: &Value, field: &str) -> Option<f64> {
        let value = match body.get(field)? {
            Value::Number(n) => n.as_f64()?,
            Value::String(s) => s.trim().parse().ok()?,
            _ => return None,
        };
        (value.is_finite() && value > 0.0).then_some(value)
    }

    #[test]
    fn each_field_reads_as_the_key_lookups_did() {
        let values = [
            json!(null),
            json!(5),
            json!(-1),
            json!(0),
            json!(1.5),
            json!("7"),
            json!(" 8 "),
            json!("x"),
            json!(""),
            json!(true),
            json!([1]),
            json!({"code": "slow_down"}),
            json!({"code": 5}),
            json!({}),
            json!("https://example.com/device"),
            json!("file:///etc/passwd"),
        ];
        for value in values {
            let body = json!({"interval": value, "error": value, "verification_uri": value});
            let a = Answer::of(&body);
            assert_eq!(a.interval.positive(), old_positive(&body, "interval"), "{value}");
            assert_eq!(a.interval.number(), body.get("interval").and_then(Value::as_f64), "{value}");
            assert_eq!(a.error.text(), body.get("error").and_then(Value::as_str), "{value}");
            assert_eq!(
                a.error.filled(),
                body.get("error").and_then(Value::as_str).filter(|s| !s.is_empty()),
                "{value}"
            );
            assert_eq!(a.verification_uri.url(), trusted_url(body.get("verification_uri")), "{value}");
            let error = body.get("error");
            let old_code = error.and_then(|e| e.get("code")).or(error).and_then(Value::as_str);
            assert_eq!(a.error_code().as_deref(), old_code, "{value}");
            assert!(a.error.is_present() && !a.scope.is_present());
        }
        for body in [json!(null), json!([{"error": "x"}]), json!("error")] {
            let a = Answer::of(&body);
            assert!(!a.error.is_present() && a.error_code().is_none() && a.interval.positive().is_none());
        }
    }
}

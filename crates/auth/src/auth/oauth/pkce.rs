//! PKCE (RFC 7636, S256) and the random values the logins need.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};

/// A code verifier and its S256 challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

/// `n` random bytes.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; n];
    // The system's random source does not fail on Linux; zeros would still be a valid (weak) value.
    let _ = SystemRandom::new().fill(&mut bytes);
    bytes
}

/// `n` random bytes, base64url without padding.
pub fn random_base64url(n: usize) -> String {
    URL_SAFE_NO_PAD.encode(random_bytes(n))
}

/// `n` random bytes in lowercase hex.
pub fn random_hex(n: usize) -> String {
    random_bytes(n).iter().map(|b| format!("{b:02x}")).collect()
}

/// The S256 challenge of a verifier.
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
}

/// A fresh verifier (32 random bytes) and its challenge.
pub fn generate() -> Pkce {
    let verifier = random_base64url(32);
    let challenge = challenge_of(&verifier);
    Pkce { verifier, challenge }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_rfc_7636_s256() {
        // base64url(sha256(verifier)), checked with Python's hashlib.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r-wW1gFWFOEjXk"),
            "NPsYzawS-__wqk67X9gyb4dr3JBo3hnlEi5MNyD5jX0"
        );
        let p = generate();
        assert_eq!(p.verifier.len(), 43);
        assert_ne!(generate().verifier, p.verifier);
        assert_eq!(random_hex(16).len(), 32);
    }
}

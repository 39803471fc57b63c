//! The TLS configuration of the shared HTTP client: what reqwest builds by
//! default (the process's crypto provider, every TLS version, the platform
//! verifier over the system's roots, ALPN `h2` then `http/1.1`), except that
//! the system's root certificates are read on the first TLS handshake, not
//! when the client is built. Reading and parsing them (`/etc/ssl/certs`, about
//! 150 PEM files) costs ~18 M instructions and ~450 file calls, which a
//! session talking only to plain-HTTP origins (local model servers) never
//! needs, and which was paid inside the first prompt's time.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The client configuration reqwest would build, with [`LazyVerifier`].
pub(crate) fn client_config() -> Result<rustls::ClientConfig, String> {
    let provider =
        CryptoProvider::get_default().cloned().unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .map_err(|e| format!("TLS configuration: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyVerifier::new(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform verifier (system roots, WebPKI), made on first use. A
/// failure to make it (no root certificates at all) fails that handshake
/// with the verifier's own error, as building the client would have.
#[derive(Debug)]
pub(crate) struct LazyVerifier {
    provider: Arc<CryptoProvider>,
    inner: OnceLock<Result<rustls_platform_verifier::Verifier, rustls::Error>>,
}

impl LazyVerifier {
    pub(crate) fn new(provider: Arc<CryptoProvider>) -> LazyVerifier {
        LazyVerifier { provider, inner: OnceLock::new() }
    }

    fn get(&self) -> Result<&rustls_platform_verifier::Verifier, rustls::Error> {
        self.inner
            .get_or_init(|| rustls_platform_verifier::Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether the system's roots were read.
    #[cfg(test)]
    pub(crate) fn loaded(&self) -> bool {
        self.inner.get().is_some()
    }
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.get()?.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.get()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.get()?.verify_tls13_signature(message, cert, dss)
    }

    /// The provider's schemes: what the platform verifier (WebPKI over the
    /// same provider) answers, without reading the roots.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn the_roots_are_read_on_the_first_verification_and_a_bad_certificate_is_refused() {
        let lazy = LazyVerifier::new(provider());
        assert!(!lazy.loaded());
        let eager = rustls_platform_verifier::Verifier::new(provider()).unwrap();
        assert_eq!(lazy.supported_verify_schemes(), eager.supported_verify_schemes());
        assert!(!lazy.loaded(), "listing the schemes needs no roots");
        let name = ServerName::try_from("example.com").unwrap();
        let junk = CertificateDer::from(vec![0x30, 0x03, 0x02, 0x01, 0x01]);
        let err = lazy.verify_server_cert(&junk, &[], &name, &[], UnixTime::now()).unwrap_err();
        assert!(lazy.loaded());
        let expected = eager.verify_server_cert(&junk, &[], &name, &[], UnixTime::now()).unwrap_err();
        assert_eq!(err, expected);
    }

    #[test]
    fn the_configuration_offers_h2_then_http1() {
        let config = client_config().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
        assert!(config.enable_sni);
    }
}

package io.driveralias.agent.webconfig;

import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * client_auth_type RequestClientCert and RequireAnyClientCert: a client certificate is asked
 * for (or required) but not verified, as in Go's crypto/tls. The toolkit's documentation calls
 * both insecure; they exist for clients authenticated some other way.
 */
final class AnyClientCertificate extends X509ExtendedTrustManager {

    static final AnyClientCertificate INSTANCE = new AnyClientCertificate();

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {
        // not verified, by configuration
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        // not verified, by configuration
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) {
        // not verified, by configuration
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) throws CertificateException {
        throw new CertificateException("the metrics port is a server");
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) throws CertificateException {
        throw new CertificateException("the metrics port is a server");
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        throw new CertificateException("the metrics port is a server");
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
        return new X509Certificate[0];
    }
}

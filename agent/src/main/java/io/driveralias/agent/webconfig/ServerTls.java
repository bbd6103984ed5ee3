package io.driveralias.agent.webconfig;

import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.webconfig.PemReader.PemException;
import io.driveralias.agent.webconfig.WebConfig.ClientAuth;
import io.driveralias.agent.webconfig.WebConfig.Pem;
import java.io.IOException;
import java.io.ByteArrayInputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.security.spec.MGF1ParameterSpec;
import java.security.spec.PSSParameterSpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * The TLS side of the metrics port, built with the JDK's own TLS from a web configuration:
 * the server's certificate chain and key, the client-certificate policy, versions, cipher
 * suites and curves. Immutable: a changed configuration builds a new one.
 */
public final class ServerTls {

    /** Certificates and keys are a few kilobytes; a CA bundle some hundreds. */
    private static final long MAX_PEM_BYTES = 1 << 20;
    static final String REJECT_RENEGOTIATION = "jdk.tls.rejectClientInitiatedRenegotiation";
    /** TLS sessions kept for resumption (about 1.7 KiB each) and for how long. */
    static final int SESSION_CACHE = 256;
    static final Duration SESSION_TIMEOUT = Duration.ofMinutes(5);

    static {
        // A TLS 1.2 client may ask for a new handshake on its connection, as often as it likes:
        // each a full handshake outside the turns that bound them (34 in 3 s on one connection,
        // where its address may have 20). The JDK reads this once, at the first server handshake,
        // which only this class's contexts make; the image's jvm.options sets it too.
        if (System.getProperty(REJECT_RENEGOTIATION) == null) {
            System.setProperty(REJECT_RENEGOTIATION, "true");
        }
    }
    private static final Map<String, String> PROTOCOLS = Map.of(
            "TLS10", "TLSv1", "TLS11", "TLSv1.1", "TLS12", "TLSv1.2", "TLS13", "TLSv1.3");
    /** Go's names for the curves (crypto/tls CurveID) and the JDK's for the same groups. */
    private static final Map<String, String> CURVES = Map.of(
            "CurveP256", "secp256r1", "CurveP384", "secp384r1", "CurveP521", "secp521r1", "X25519", "x25519");

    private final SSLContext context;
    private final SSLParameters parameters;
    private final List<String> allowedSans;

    private ServerTls(SSLContext context, SSLParameters parameters, List<String> allowedSans) {
        this.context = context;
        this.parameters = parameters;
        this.allowedSans = allowedSans;
    }

    /** Reads the files {@code tls} names and checks that they fit together; {@code file} names the configuration in errors. */
    static ServerTls create(WebConfig.Tls tls, String file) throws ConfigException {
        String at = "--web-config-file " + file + ": tls_server_config.";
        List<X509Certificate> chain;
        PrivateKey key;
        try {
            chain = PemReader.certificates(read(tls.cert(), at + "cert_file"));
        } catch (PemException e) {
            throw new ConfigException(at + "cert_file " + e.getMessage());
        }
        try {
            key = PemReader.privateKey(read(tls.key(), at + "key_file"));
        } catch (PemException e) {
            throw new ConfigException(at + "key_file " + e.getMessage());
        }
        if (!matches(key, chain.getFirst())) {
            throw new ConfigException(at + "key_file does not hold the private key of the certificate in cert_file");
        }
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(null, null);
            char[] password = randomPassword();
            keys.setKeyEntry("server", key, password, chain.toArray(new Certificate[0]));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, password);
            context.init(kmf.getKeyManagers(), trustManagers(tls, at), new SecureRandom());
            // The JDK keeps 20,480 sessions for 24 h: clients without session tickets (TLS 1.2) left
            // one each, about 1.7 KiB, more than the 32 MiB heap at that count. A probe or scrape
            // that resumes within minutes is all the cache serves here.
            context.getServerSessionContext().setSessionCacheSize(SESSION_CACHE);
            context.getServerSessionContext().setSessionTimeout((int) SESSION_TIMEOUT.toSeconds());
            return new ServerTls(context, parameters(context, tls, at), tls.clientAllowedSans());
        } catch (GeneralSecurityException | IOException e) {
            throw new ConfigException(at + "cert_file and key_file cannot make a TLS server: " + e.getMessage());
        }
    }

    /**
     * The server side of TLS over an accepted connection whose first bytes, {@code consumed},
     * were already read from it. The handshake runs on the first read, under that read's
     * timeout; closing {@code raw} ends it from any thread.
     */
    public SSLSocket wrap(Socket raw, byte[] consumed) throws IOException {
        SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket(raw, new ByteArrayInputStream(consumed), true);
        socket.setUseClientMode(false);
        socket.setSSLParameters(parameters);
        return socket;
    }

    /** After the handshake: the client's certificate names one of {@code client_allowed_sans}, or none are set. */
    public boolean allowed(SSLSocket socket) {
        if (allowedSans.isEmpty()) {
            return true;
        }
        try {
            X509Certificate client = (X509Certificate) socket.getSession().getPeerCertificates()[0];
            Collection<List<?>> names = client.getSubjectAlternativeNames();
            if (names == null) {
                return false;
            }
            for (List<?> name : names) {
                if (name.size() >= 2 && name.get(1) instanceof String value && allowedSan(((Integer) name.get(0)), value)) {
                    return true;
                }
            }
            return false;
        } catch (SSLPeerUnverifiedException | java.security.cert.CertificateParsingException e) {
            return false;
        }
    }

    /** DNS (2), e-mail (1) and URI (6) names match exactly; an IP address (7) matches the same address however written. */
    private boolean allowedSan(int type, String value) {
        for (String allowed : allowedSans) {
            if (allowed.equals(value)) {
                return true;
            }
            if (type == 7 && allowed.matches("[0-9a-fA-F:.]+")) {
                try {
                    if (InetAddress.ofLiteral(allowed).equals(InetAddress.ofLiteral(value))) {
                        return true;
                    }
                } catch (IllegalArgumentException notAnAddress) {
                    // not an address: no match
                }
            }
        }
        return false;
    }

    private static SSLParameters parameters(SSLContext context, WebConfig.Tls tls, String at) throws ConfigException {
        SSLParameters supported = context.getSupportedSSLParameters();
        SSLParameters p = context.getDefaultSSLParameters();
        List<String> protocols = new ArrayList<>();
        List<String> versions = WebConfigParser.VERSIONS;
        for (String v : versions.subList(versions.indexOf(tls.minVersion()), versions.indexOf(tls.maxVersion()) + 1)) {
            if (Arrays.asList(supported.getProtocols()).contains(PROTOCOLS.get(v))) {
                protocols.add(PROTOCOLS.get(v));
            }
        }
        p.setProtocols(protocols.toArray(new String[0]));
        if (!tls.cipherSuites().isEmpty()) {
            Set<String> known = Set.of(supported.getCipherSuites());
            Set<String> suites = new LinkedHashSet<>();
            for (String suite : tls.cipherSuites()) {
                if (!known.contains(suite)) {
                    throw new ConfigException(at + "cipher_suites has " + suite + ", which this Java runtime does not know");
                }
                suites.add(suite);
            }
            // As in Go, the list is about TLS 1.2 and older; TLS 1.3's own suites stay.
            for (String suite : p.getCipherSuites()) {
                if (suite.startsWith("TLS_AES_") || suite.startsWith("TLS_CHACHA20_")) {
                    suites.add(suite);
                }
            }
            p.setCipherSuites(suites.toArray(new String[0]));
        }
        p.setUseCipherSuitesOrder(tls.preferServerCipherSuites());
        if (!tls.curvePreferences().isEmpty()) {
            List<String> groups = new ArrayList<>();
            for (String curve : tls.curvePreferences()) {
                String group = CURVES.get(curve);
                if (group == null) {
                    throw new ConfigException(at + "curve_preferences has " + curve + ": one of " + CURVES.keySet());
                }
                groups.add(group);
            }
            p.setNamedGroups(groups.toArray(new String[0]));
        }
        ClientAuth auth = tls.clientAuth();
        if (auth.required()) {
            p.setNeedClientAuth(true);
        } else {
            p.setWantClientAuth(auth != ClientAuth.NO_CLIENT_CERT);
        }
        return p;
    }

    private static TrustManager[] trustManagers(WebConfig.Tls tls, String at) throws ConfigException, GeneralSecurityException,
            IOException {
        ClientAuth auth = tls.clientAuth();
        if (auth == ClientAuth.NO_CLIENT_CERT) {
            return null;
        }
        if (!auth.verified()) {
            return new TrustManager[] {AnyClientCertificate.INSTANCE};
        }
        List<X509Certificate> cas;
        try {
            cas = PemReader.certificates(read(tls.clientCa().orElseThrow(), at + "client_ca_file"));
        } catch (PemException e) {
            throw new ConfigException(at + "client_ca_file " + e.getMessage());
        }
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        for (int i = 0; i < cas.size(); i++) {
            trusted.setCertificateEntry("ca-" + i, cas.get(i));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
        tmf.init(trusted);
        return tmf.getTrustManagers();
    }

    /** Signs with the key and verifies with the certificate: the two belong together. */
    private static boolean matches(PrivateKey key, X509Certificate certificate) {
        try {
            Signature signer = switch (key.getAlgorithm()) {
                case "RSA" -> Signature.getInstance("SHA256withRSA");
                case "EC" -> Signature.getInstance("SHA256withECDSA");
                case "RSASSA-PSS" -> {
                    Signature pss = Signature.getInstance("RSASSA-PSS");
                    pss.setParameter(new PSSParameterSpec("SHA-256", "MGF1", MGF1ParameterSpec.SHA256, 32, 1));
                    yield pss;
                }
                default -> Signature.getInstance(key.getAlgorithm()); // Ed25519, Ed448
            };
            byte[] probe = "driver-alias-agent".getBytes(StandardCharsets.US_ASCII);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            signer.initVerify(certificate.getPublicKey());
            signer.update(probe);
            return signer.verify(signature);
        } catch (GeneralSecurityException | RuntimeException e) {
            return false;
        }
    }

    private static String read(Pem pem, String field) throws ConfigException {
        if (pem.inline().isPresent()) {
            return pem.inline().get();
        }
        Path path = pem.file().orElseThrow();
        try {
            if (Files.size(path) > MAX_PEM_BYTES) {
                throw new ConfigException(field + " " + path + " is larger than " + MAX_PEM_BYTES + " bytes");
            }
            return Files.readString(path, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new ConfigException(field + " " + path + " cannot be read: " + e);
        }
    }

    private static char[] randomPassword() {
        byte[] random = new byte[16];
        new SecureRandom().nextBytes(random);
        return java.util.HexFormat.of().formatHex(random).toCharArray();
    }
}

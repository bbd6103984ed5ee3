package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A test CA, a server certificate for 127.0.0.1 and localhost, and client certificates, made
 * by the machine's {@code openssl} at test time in a directory of their own: nothing secret
 * is checked in, and nothing expires in the repository.
 */
public final class TestCertificates {

    private static final String PASSWORD = "test";

    private final Path dir;

    private TestCertificates(Path dir) {
        this.dir = dir;
    }

    /**
     * ca.crt/ca.key; server.crt with server.key (PKCS#8, EC P-256); client.crt/client.key
     * (clientAuth, SAN DNS:prometheus) and client.p12; stranger.crt/stranger.key and
     * stranger.p12, a client of another CA.
     */
    public static TestCertificates create(Path dir) {
        TestCertificates c = new TestCertificates(dir);
        c.ca("ca");
        c.ca("other-ca");
        c.signed("server", "ca", "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth");
        c.signed("client", "ca", "subjectAltName=DNS:prometheus\nextendedKeyUsage=clientAuth");
        c.signed("stranger", "other-ca", "subjectAltName=DNS:prometheus\nextendedKeyUsage=clientAuth");
        c.p12("client");
        c.p12("stranger");
        return c;
    }

    public Path path(String name) {
        return dir.resolve(name);
    }

    /** A client's TLS: trusts the test CA, and presents {@code client} ("client", "stranger") when not null. */
    public SSLContext clientContext(String client) {
        try {
            KeyStore trust = KeyStore.getInstance("PKCS12");
            trust.load(null, null);
            try (InputStream in = Files.newInputStream(path("ca.crt"))) {
                trust.setCertificateEntry("ca", java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in));
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
            tmf.init(trust);
            KeyManagerFactory kmf = null;
            if (client != null) {
                KeyStore keys = KeyStore.getInstance("PKCS12");
                try (InputStream in = Files.newInputStream(path(client + ".p12"))) {
                    keys.load(in, PASSWORD.toCharArray());
                }
                kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                kmf.init(keys, PASSWORD.toCharArray());
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** An HTTPS client (HTTP/1.1, as the agent speaks) with {@link #clientContext}. */
    public HttpClient client(String certificate) {
        return HttpClient.newBuilder().sslContext(clientContext(certificate)).version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
    }

    /** GET https://127.0.0.1:{@code port}{@code path}, with an Authorization header when {@code authorization} is not null. */
    public static HttpResponse<String> get(HttpClient client, int port, String path, String authorization)
            throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10));
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** An Authorization header value for basic auth. */
    public static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    /** Runs openssl in the directory; fails the test if it fails. */
    public String openssl(String... args) {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        List<String> inDir = List.of("sh", "-c", "cd \"$0\" && exec \"$@\"", dir.toString());
        List<String> all = new ArrayList<>(inDir);
        all.addAll(cmd);
        return Processes.check(all);
    }

    private void ca(String name) {
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".crt", "-days", "2", "-subj", "/CN=driver-alias test " + name,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
    }

    private void signed(String name, String ca, String extensions) {
        try {
            Files.writeString(dir.resolve(name + ".ext"), extensions + "\n");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", name + ".key",
                "-out", name + ".csr", "-subj", "/CN=" + name);
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
                "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext");
    }

    private void p12(String name) {
        openssl("pkcs12", "-export", "-in", name + ".crt", "-inkey", name + ".key", "-out", name + ".p12",
                "-passout", "pass:" + PASSWORD, "-name", name);
    }
}

package io.driveralias.agent.webconfig;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.testing.TestCertificates;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Keys as the tools people use write them, read by the JDK alone. */
class ServerTlsTest {

    @TempDir
    static Path dir;
    private static TestCertificates certs;

    @BeforeAll
    static void certificates() {
        certs = TestCertificates.create(dir);
    }

    /** Self-signed certificates whose keys are written as PKCS#8, PKCS#1, SEC1 (named curve), or Ed25519. */
    @ParameterizedTest
    @ValueSource(strings = {"rsa-pkcs8", "rsa-pkcs1", "ec-pkcs8", "ec-sec1", "ed25519"})
    void readsTheKeyFormatsOpensslWrites(String kind) throws Exception {
        selfSigned(kind);
        String key = Files.readString(dir.resolve(kind + ".key"));
        assertThat(key).contains(switch (kind) {
            case "rsa-pkcs1" -> "BEGIN RSA PRIVATE KEY";
            case "ec-sec1" -> "BEGIN EC PRIVATE KEY";
            default -> "BEGIN PRIVATE KEY";
        });

        ServerTls tls = ServerTls.create(tls(kind + ".crt", kind + ".key"), "web.yml");

        assertThat(tls).isNotNull();
    }

    @Test
    void aKeyThatIsNotTheCertificatesIsRefused() {
        assertThatThrownBy(() -> ServerTls.create(tls("server.crt", "client.key"), "web.yml"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("--web-config-file web.yml: tls_server_config.key_file does not hold the private key of the"
                        + " certificate in cert_file");
    }

    @Test
    void anEncryptedKeyIsRefusedWithTheWayOut() {
        certs.openssl("pkcs8", "-topk8", "-in", "server.key", "-out", "encrypted.key", "-passout", "pass:x");
        assertThatThrownBy(() -> ServerTls.create(tls("server.crt", "encrypted.key"), "web.yml"))
                .hasMessageContaining("tls_server_config.key_file holds an encrypted key: give it unencrypted");
    }

    @Test
    void missingAndWrongFilesNameTheirField() throws Exception {
        assertThatThrownBy(() -> ServerTls.create(tls("nowhere.crt", "server.key"), "web.yml"))
                .hasMessageContaining("tls_server_config.cert_file " + dir.resolve("nowhere.crt") + " cannot be read");
        assertThatThrownBy(() -> ServerTls.create(tls("server.key", "server.key"), "web.yml"))
                .hasMessageContaining("tls_server_config.cert_file holds no PEM certificate");
        assertThatThrownBy(() -> ServerTls.create(tls("server.crt", "server.crt"), "web.yml"))
                .hasMessageContaining("tls_server_config.key_file holds no PEM private key");
        Files.write(dir.resolve("huge.crt"), new byte[(1 << 20) + 1]);
        assertThatThrownBy(() -> ServerTls.create(tls("huge.crt", "server.key"), "web.yml"))
                .hasMessageContaining("is larger than");
    }

    @Test
    void anUnknownCipherSuiteOrCurveIsNamed() {
        assertThatThrownBy(() -> ServerTls.create(parse("""
                tls_server_config: {cert_file: server.crt, key_file: server.key, cipher_suites: [TLS_RSA_WITH_RC4_128_MD5X]}
                """).tls().orElseThrow(), "web.yml"))
                .hasMessageContaining("cipher_suites has TLS_RSA_WITH_RC4_128_MD5X, which this Java runtime does not know");
        assertThatThrownBy(() -> ServerTls.create(parse("""
                tls_server_config: {cert_file: server.crt, key_file: server.key, curve_preferences: [CurveP224]}
                """).tls().orElseThrow(), "web.yml"))
                .hasMessageContaining("curve_preferences has CurveP224");
    }

    private static void selfSigned(String kind) {
        String key = kind + ".key";
        switch (kind) {
            case "rsa-pkcs8" -> certs.openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", key);
            case "rsa-pkcs1" -> certs.openssl("genrsa", "-traditional", "-out", key, "2048");
            case "ec-pkcs8" -> certs.openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", key);
            case "ec-sec1" -> certs.openssl("ecparam", "-name", "prime256v1", "-genkey", "-out", key);
            default -> certs.openssl("genpkey", "-algorithm", "ED25519", "-out", key);
        }
        certs.openssl("req", "-x509", "-key", key, "-out", kind + ".crt", "-days", "1", "-subj", "/CN=" + kind);
    }

    private static WebConfig.Tls tls(String cert, String key) throws ConfigException {
        return parse("tls_server_config: {cert_file: " + cert + ", key_file: " + key + "}\n").tls().orElseThrow();
    }

    private static WebConfig parse(String yaml) throws ConfigException {
        return WebConfigParser.parse(yaml, dir.resolve("web.yml"));
    }
}

package io.driveralias.agent.webconfig;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.webconfig.WebConfig.ClientAuth;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class WebConfigParserTest {

    private static final Path FILE = Path.of("/etc/driver-alias/web.yml");
    private static final String HASH = "$2y$10$RwtIo.iSGRvPK/WiCkSJKedvzsDoEiVucBCBWhL4q7LXGoHxsx5Kq";

    @Test
    void theToolkitsExampleIsReadWhole() throws ConfigException {
        WebConfig c = WebConfigParser.parse("""
                tls_server_config:
                  cert_file: server.crt
                  key_file: /abs/server.key
                  client_auth_type: RequireAndVerifyClientCert
                  client_ca_file: ca.crt
                  client_allowed_sans: [prometheus]
                  min_version: TLS13
                  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
                  prefer_server_cipher_suites: false
                  curve_preferences: [X25519, CurveP256]
                http_server_config:
                  http2: true
                  headers:
                    X-Frame-Options: deny
                    X-Content-Type-Options: nosniff
                    Strict-Transport-Security: max-age=31536000
                    Content-Security-Policy: ""
                basic_auth_users:
                  prometheus: %s
                auth_excluded_paths: [/version]
                """.formatted(HASH), FILE);

        WebConfig.Tls tls = c.tls().orElseThrow();
        assertThat(tls.cert().file()).hasValue(Path.of("/etc/driver-alias/server.crt"));
        assertThat(tls.key().file()).hasValue(Path.of("/abs/server.key"));
        assertThat(tls.clientCa().flatMap(WebConfig.Pem::file)).hasValue(Path.of("/etc/driver-alias/ca.crt"));
        assertThat(tls.clientAuth()).isEqualTo(ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT);
        assertThat(tls.clientAllowedSans()).containsExactly("prometheus");
        assertThat(tls.minVersion()).isEqualTo("TLS13");
        assertThat(tls.maxVersion()).isEqualTo("TLS13");
        assertThat(tls.preferServerCipherSuites()).isFalse();
        assertThat(tls.curvePreferences()).containsExactly("X25519", "CurveP256");
        assertThat(c.headers()).containsOnlyKeys("X-Frame-Options", "X-Content-Type-Options", "Strict-Transport-Security");
        assertThat(c.users()).isEqualTo(Map.of("prometheus", HASH));
        assertThat(c.authExcludedPaths()).containsExactly("/version");
        assertThat(c.files()).hasSize(3);
    }

    @Test
    void anEmptyFileOrAnEmptyTlsSectionIsPlainHttp() throws ConfigException {
        assertThat(WebConfigParser.parse("", FILE)).isEqualTo(WebConfig.NONE);
        assertThat(WebConfigParser.parse("tls_server_config: {}\n", FILE).tls()).isEmpty();
        assertThat(WebConfigParser.parse("basic_auth_users:\n  a: " + HASH + "\n", FILE).tls()).isEqualTo(Optional.empty());
    }

    @Test
    void inlinePemIsKept() throws ConfigException {
        WebConfig c = WebConfigParser.parse("""
                tls_server_config:
                  cert: |
                    -----BEGIN CERTIFICATE-----
                  key: k
                """, FILE);
        assertThat(c.tls().orElseThrow().cert().inline()).hasValue("-----BEGIN CERTIFICATE-----\n");
        assertThat(c.files()).isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "tls_server_config: {cert_file: a, key_file: b, client_auth_typ: RequireAndVerifyClientCert}"
                + "|tls_server_config.client_auth_typ is not a field this agent knows",
        "rate_limit: {interval: 1s}|rate_limit is not a field this agent knows",
        "tls_server_config: {cert_file: a, key_file: b, client_auth_type: VerifyAll}"
                + "|tls_server_config.client_auth_type must be one of [NoClientCert, RequestClientCert",
        "tls_server_config: {cert_file: a}|tls_server_config needs key_file (or key)",
        "tls_server_config: {key_file: a}|tls_server_config needs cert_file (or cert)",
        "tls_server_config: {cert_file: a, cert: x, key_file: b}|tls_server_config.cert_file and cert are both given",
        "tls_server_config: {cert_file: a, key_file: b, client_ca_file: c}|tls_server_config.client_ca_file is given, but"
                + " client_auth_type NoClientCert does not verify",
        "tls_server_config: {cert_file: a, key_file: b, client_auth_type: RequireAndVerifyClientCert}"
                + "|tls_server_config.client_ca_file is needed with client_auth_type RequireAndVerifyClientCert",
        "tls_server_config: {cert_file: a, key_file: b, client_auth_type: RequireAnyClientCert, client_allowed_sans: [x]}"
                + "|tls_server_config.client_allowed_sans needs client_auth_type RequireAndVerifyClientCert",
        "tls_server_config: {cert_file: a, key_file: b, min_version: TLS13, max_version: TLS12}"
                + "|tls_server_config.min_version TLS13 is above max_version TLS12",
        "tls_server_config: {cert_file: a, key_file: b, min_version: SSL3}|tls_server_config.min_version must be one of",
        "tls_server_config: {cert_file: a, key_file: b, cipher_suites: TLS_X}|tls_server_config.cipher_suites must be a list",
        "tls_server_config: {cert_file: 12, key_file: b}|tls_server_config.cert_file must be a string",
        "http_server_config: {headers: {X-Powered-By: me}}|http_server_config.headers may set",
        "http_server_config: {headers: {X-Frame-Options: allow}}|http_server_config.headers.X-Frame-Options must be one of",
        "http_server_config: {http2: maybe}|http_server_config.http2 must be true or false",
        "basic_auth_users: {prometheus: secret}|basic_auth_users.prometheus must be a bcrypt hash",
        "basic_auth_users: {'a:b': x}|basic_auth_users user names are printable ASCII without ':'",
        "auth_excluded_paths: [metrics]|auth_excluded_paths holds paths that start with /",
        "tls_server_config: [a]|tls_server_config must be a mapping",
        "a: b: c|is not valid YAML",
        "{a: 1, a: 2}|is not valid YAML",
    })
    void aWrongFieldIsAnErrorThatNamesIt(String yaml, String message) {
        assertThatThrownBy(() -> WebConfigParser.parse(yaml, FILE))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("--web-config-file /etc/driver-alias/web.yml: ")
                .hasMessageContaining(message);
    }

    @Test
    void aPasswordPastedInsteadOfAHashIsNotRepeatedInTheError() {
        assertThatThrownBy(() -> WebConfigParser.parse("basic_auth_users: {prometheus: hunter2}", FILE))
                .hasMessageNotContaining("hunter2");
    }

    @Test
    void manyAliasesAreRefused() {
        StringBuilder bomb = new StringBuilder("a: &a [x, x, x, x, x, x, x, x, x]\n");
        for (int i = 0; i < 20; i++) {
            bomb.append("b").append(i).append(": &b").append(i).append(" [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n");
        }
        assertThatThrownBy(() -> WebConfigParser.parse(bomb.toString(), FILE)).isInstanceOf(ConfigException.class);
    }

    @Test
    void theOldRequireClientCertNameIsAccepted() throws ConfigException {
        assertThat(WebConfigParser.parse("tls_server_config: {cert_file: a, key_file: b, client_auth_type: RequireClientCert}",
                FILE).tls().orElseThrow().clientAuth()).isEqualTo(ClientAuth.REQUIRE_ANY_CLIENT_CERT);
        assertThat(List.of(ClientAuth.values())).hasSize(5);
    }
}

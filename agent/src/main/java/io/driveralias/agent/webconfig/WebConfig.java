package io.driveralias.agent.webconfig;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a {@code --web-config-file} says, in the Prometheus exporter-toolkit format: TLS for the
 * metrics port, basic-auth users with bcrypt hashes, extra response headers, paths without
 * authentication. Validated by {@link WebConfigParser}; the files it names are read by
 * {@link ServerTls}.
 */
public record WebConfig(Optional<Tls> tls, Map<String, String> users, Map<String, String> headers,
                        List<String> authExcludedPaths) {

    public static final WebConfig NONE = new WebConfig(Optional.empty(), Map.of(), Map.of(), List.of());

    public WebConfig {
        users = Map.copyOf(users);
        headers = Map.copyOf(headers);
        authExcludedPaths = List.copyOf(authExcludedPaths);
    }

    /** Who may connect, as Go's crypto/tls names it. */
    public enum ClientAuth {
        NO_CLIENT_CERT("NoClientCert", false, false),
        REQUEST_CLIENT_CERT("RequestClientCert", false, false),
        REQUIRE_ANY_CLIENT_CERT("RequireAnyClientCert", true, false),
        VERIFY_CLIENT_CERT_IF_GIVEN("VerifyClientCertIfGiven", false, true),
        REQUIRE_AND_VERIFY_CLIENT_CERT("RequireAndVerifyClientCert", true, true);

        private final String yamlName;
        private final boolean required;
        private final boolean verified;

        ClientAuth(String yamlName, boolean required, boolean verified) {
            this.yamlName = yamlName;
            this.required = required;
            this.verified = verified;
        }

        public String yamlName() {
            return yamlName;
        }

        /** The handshake fails without a client certificate. */
        public boolean required() {
            return required;
        }

        /** A client certificate given is checked against the client CA. */
        public boolean verified() {
            return verified;
        }
    }

    /** PEM text, from a file (kept to notice a change) or inline in the configuration. */
    public record Pem(Optional<Path> file, Optional<String> inline) {
    }

    public record Tls(Pem cert, Pem key, ClientAuth clientAuth, Optional<Pem> clientCa, List<String> clientAllowedSans,
                      String minVersion, String maxVersion, List<String> cipherSuites, boolean preferServerCipherSuites,
                      List<String> curvePreferences) {
        public Tls {
            clientAllowedSans = List.copyOf(clientAllowedSans);
            cipherSuites = List.copyOf(cipherSuites);
            curvePreferences = List.copyOf(curvePreferences);
        }
    }

    /** Every file this configuration reads besides itself: a change to any of them is a change of configuration. */
    public List<Path> files() {
        if (tls.isEmpty()) {
            return List.of();
        }
        Tls t = tls.get();
        return java.util.stream.Stream.of(Optional.of(t.cert()), Optional.of(t.key()), t.clientCa())
                .flatMap(Optional::stream)
                .flatMap(p -> p.file().stream())
                .toList();
    }
}

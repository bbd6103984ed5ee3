package io.driveralias.agent.webconfig;

import io.driveralias.agent.config.ConfigException;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.webconfig.WebConfig.ClientAuth;
import io.driveralias.agent.webconfig.WebConfig.Pem;
import io.driveralias.agent.webconfig.WebConfig.Tls;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;

/**
 * Reads a web configuration file of the exporter-toolkit format as strictly as the toolkit
 * does (an unknown field is an error, never ignored: a misspelt {@code client_auth_type} must
 * not leave the port open), and says which field is wrong. Pure: the files it names are read
 * later. Relative file names are relative to the configuration file's directory, as in the
 * toolkit.
 */
public final class WebConfigParser {

    /** A real configuration is a few hundred bytes; inline certificates a few kilobytes. */
    public static final int MAX_BYTES = 256 * 1024;

    private static final Set<String> TOP = Set.of("tls_server_config", "http_server_config", "basic_auth_users",
            "auth_excluded_paths");
    private static final Set<String> TLS = Set.of("cert", "key", "client_ca", "cert_file", "key_file", "client_auth_type",
            "client_ca_file", "client_allowed_sans", "min_version", "max_version", "cipher_suites",
            "prefer_server_cipher_suites", "curve_preferences");
    private static final Set<String> HTTP = Set.of("http2", "headers");
    /** The toolkit's headers, and the values it accepts where it restricts them. */
    private static final Map<String, Set<String>> HEADERS = Map.of(
            "Content-Security-Policy", Set.of(),
            "X-Frame-Options", Set.of("deny", "sameorigin"),
            "X-Content-Type-Options", Set.of("nosniff"),
            "X-XSS-Protection", Set.of(),
            "Strict-Transport-Security", Set.of());
    public static final List<String> VERSIONS = List.of("TLS10", "TLS11", "TLS12", "TLS13");
    /** $2a$, $2b$, $2x$ or $2y$, a two-digit cost, 22 characters of salt and 31 of hash. */
    private static final Pattern BCRYPT = Pattern.compile("\\$2[abxy]\\$(\\d\\d)\\$[./A-Za-z0-9]{53}");
    private static final Pattern HEADER_VALUE = Pattern.compile("[\\x20-\\x7e]*");

    private final String file;
    private final Path directory;

    private WebConfigParser(Path file) {
        this.file = file.toString();
        Path parent = file.toAbsolutePath().getParent();
        this.directory = parent == null ? Path.of("/") : parent;
    }

    /** {@code text} as read from {@code file}; {@code file} names it in errors and anchors relative paths. */
    public static WebConfig parse(String text, Path file) throws ConfigException {
        return new WebConfigParser(file).parse(text);
    }

    private WebConfig parse(String text) throws ConfigException {
        Object root;
        try {
            LoadSettings settings = LoadSettings.builder()
                    .setAllowDuplicateKeys(false)
                    .setMaxAliasesForCollections(16)
                    .setAllowRecursiveKeys(false)
                    .setCodePointLimit(MAX_BYTES)
                    .setLabel(file)
                    .build();
            root = new Load(settings).loadFromString(text);
        } catch (YamlEngineException e) {
            throw error("", "is not valid YAML: " + Printable.of(e.getMessage(), 300));
        }
        if (root == null) {
            return WebConfig.NONE; // an empty file: no TLS, no authentication, as in the toolkit
        }
        Map<String, Object> top = map(root, "");
        known(top, TOP, "");
        Optional<Tls> tls = top.containsKey("tls_server_config") ? tls(map(top.get("tls_server_config"), "tls_server_config"))
                : Optional.empty();
        Map<String, String> headers = Map.of();
        if (top.containsKey("http_server_config")) {
            Map<String, Object> http = map(top.get("http_server_config"), "http_server_config");
            known(http, HTTP, "http_server_config");
            if (http.containsKey("http2")) {
                bool(http.get("http2"), "http_server_config.http2"); // HTTP/1.1 only: accepted, nothing to switch
            }
            if (http.containsKey("headers")) {
                headers = headers(map(http.get("headers"), "http_server_config.headers"));
            }
        }
        Map<String, String> users = top.containsKey("basic_auth_users")
                ? users(map(top.get("basic_auth_users"), "basic_auth_users")) : Map.of();
        List<String> excluded = new ArrayList<>();
        for (String path : strings(top.get("auth_excluded_paths"), "auth_excluded_paths")) {
            if (!path.startsWith("/")) {
                throw error("auth_excluded_paths", "holds paths that start with /, got " + quoted(path));
            }
            excluded.add(path);
        }
        return new WebConfig(tls, users, headers, excluded);
    }

    private Optional<Tls> tls(Map<String, Object> t) throws ConfigException {
        String at = "tls_server_config";
        known(t, TLS, at);
        Optional<Pem> cert = pem(t, "cert", "cert_file");
        Optional<Pem> key = pem(t, "key", "key_file");
        Optional<Pem> clientCa = pem(t, "client_ca", "client_ca_file");
        Optional<String> authName = optionalString(t.get("client_auth_type"), at + ".client_auth_type");
        if (cert.isEmpty() && key.isEmpty() && clientCa.isEmpty() && authName.isEmpty()) {
            return Optional.empty(); // as in the toolkit: no certificate, no TLS
        }
        if (cert.isEmpty()) {
            throw error(at, "needs cert_file (or cert)");
        }
        if (key.isEmpty()) {
            throw error(at, "needs key_file (or key)");
        }
        ClientAuth auth = clientAuth(authName.orElse("NoClientCert"));
        if (clientCa.isPresent() && !auth.verified()) {
            throw error(at + ".client_ca_file", "is given, but client_auth_type " + auth.yamlName()
                    + " does not verify client certificates: use RequireAndVerifyClientCert");
        }
        if (auth.verified() && clientCa.isEmpty()) {
            throw error(at + ".client_ca_file", "is needed with client_auth_type " + auth.yamlName());
        }
        List<String> sans = strings(t.get("client_allowed_sans"), at + ".client_allowed_sans");
        if (!sans.isEmpty() && auth != ClientAuth.REQUIRE_AND_VERIFY_CLIENT_CERT) {
            throw error(at + ".client_allowed_sans", "needs client_auth_type RequireAndVerifyClientCert");
        }
        String min = version(t.get("min_version"), at + ".min_version", "TLS12");
        String max = version(t.get("max_version"), at + ".max_version", "TLS13");
        if (VERSIONS.indexOf(min) > VERSIONS.indexOf(max)) {
            throw error(at + ".min_version", min + " is above max_version " + max);
        }
        boolean prefer = !t.containsKey("prefer_server_cipher_suites")
                || bool(t.get("prefer_server_cipher_suites"), at + ".prefer_server_cipher_suites");
        return Optional.of(new Tls(cert.get(), key.get(), auth, clientCa, sans, min, max,
                strings(t.get("cipher_suites"), at + ".cipher_suites"), prefer,
                strings(t.get("curve_preferences"), at + ".curve_preferences")));
    }

    private Optional<Pem> pem(Map<String, Object> t, String inlineField, String fileField) throws ConfigException {
        String at = "tls_server_config.";
        Optional<String> inline = optionalString(t.get(inlineField), at + inlineField);
        Optional<String> name = optionalString(t.get(fileField), at + fileField);
        if (inline.isPresent() && name.isPresent()) {
            throw error(at + fileField, "and " + inlineField + " are both given: one of them");
        }
        if (name.isPresent()) {
            return Optional.of(new Pem(Optional.of(directory.resolve(name.get()).normalize()), Optional.empty()));
        }
        return inline.map(text -> new Pem(Optional.empty(), Optional.of(text)));
    }

    private ClientAuth clientAuth(String name) throws ConfigException {
        if (name.equals("RequireClientCert")) {
            return ClientAuth.REQUIRE_ANY_CLIENT_CERT; // the toolkit's old name, still accepted there
        }
        List<String> names = new ArrayList<>();
        for (ClientAuth a : ClientAuth.values()) {
            if (a.yamlName().equals(name)) {
                return a;
            }
            names.add(a.yamlName());
        }
        throw error("tls_server_config.client_auth_type", "must be one of " + names + ", got " + quoted(name));
    }

    private String version(Object value, String at, String byDefault) throws ConfigException {
        Optional<String> v = optionalString(value, at);
        if (v.isPresent() && !VERSIONS.contains(v.get())) {
            throw error(at, "must be one of " + VERSIONS + ", got " + quoted(v.get()));
        }
        return v.orElse(byDefault);
    }

    private Map<String, String> headers(Map<String, Object> given) throws ConfigException {
        Map<String, String> headers = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : given.entrySet()) {
            String at = "http_server_config.headers." + e.getKey();
            Set<String> allowed = HEADERS.get(e.getKey());
            if (allowed == null) {
                throw error("http_server_config.headers", "may set " + HEADERS.keySet() + " only, got " + quoted(e.getKey()));
            }
            String value = optionalString(e.getValue(), at).orElse("");
            if (!HEADER_VALUE.matcher(value).matches()) {
                throw error(at, "must be printable ASCII on one line");
            }
            if (!allowed.isEmpty() && !value.isEmpty() && !allowed.contains(value.toLowerCase(Locale.ROOT))) {
                throw error(at, "must be one of " + allowed + ", got " + quoted(value));
            }
            if (!value.isEmpty()) {
                headers.put(e.getKey(), value); // blank: unset, as in the toolkit
            }
        }
        return headers;
    }

    private Map<String, String> users(Map<String, Object> given) throws ConfigException {
        Map<String, String> users = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : given.entrySet()) {
            String user = e.getKey();
            String at = "basic_auth_users." + user;
            if (user.isEmpty() || user.indexOf(':') >= 0 || !HEADER_VALUE.matcher(user).matches()) {
                throw error("basic_auth_users", "user names are printable ASCII without ':', got " + quoted(user));
            }
            String hash = optionalString(e.getValue(), at).orElse("");
            var m = BCRYPT.matcher(hash);
            if (!m.matches()) {
                // Never the value itself in the message: it may be a password pasted by mistake.
                throw error(at, "must be a bcrypt hash ($2y$10$ and 53 more characters, e.g. from htpasswd -nBC 10)");
            }
            int cost = Integer.parseInt(m.group(1));
            if (cost < 4 || cost > 31) {
                throw error(at, "has bcrypt cost " + cost + ", outside 4 to 31");
            }
            users.put(user, hash);
        }
        return users;
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> map(Object value, String at) throws ConfigException {
        if (value == null) {
            return Map.of();
        }
        if (!(value instanceof Map<?, ?> m)) {
            throw error(at, "must be a mapping");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (!(e.getKey() instanceof String) && !(e.getKey() instanceof Number)) {
                throw error(at, "has a key that is not a name: " + quoted(String.valueOf(e.getKey())));
            }
            out.put(String.valueOf(e.getKey()), e.getValue());
        }
        return out;
    }

    private void known(Map<String, Object> given, Set<String> known, String at) throws ConfigException {
        for (String key : given.keySet()) {
            if (!known.contains(key)) {
                String where = at.isEmpty() ? key : at + "." + key;
                throw error(where, "is not a field this agent knows (it knows " + new java.util.TreeSet<>(known) + ")");
            }
        }
    }

    private Optional<String> optionalString(Object value, String at) throws ConfigException {
        if (value == null) {
            return Optional.empty();
        }
        if (!(value instanceof String s)) {
            throw error(at, "must be a string");
        }
        return s.isEmpty() ? Optional.empty() : Optional.of(s);
    }

    private List<String> strings(Object value, String at) throws ConfigException {
        if (value == null) {
            return List.of();
        }
        if (!(value instanceof List<?> list)) {
            throw error(at, "must be a list");
        }
        List<String> out = new ArrayList<>();
        for (Object item : list) {
            out.add(optionalString(item, at).orElseThrow(() -> error(at, "must hold non-empty strings")));
        }
        return out;
    }

    private boolean bool(Object value, String at) throws ConfigException {
        if (!(value instanceof Boolean b)) {
            throw error(at, "must be true or false");
        }
        return b;
    }

    private ConfigException error(String field, String problem) {
        return new ConfigException("--web-config-file " + file + ": " + (field.isEmpty() ? "" : field + " ") + problem);
    }

    private static String quoted(String value) {
        return "'" + Printable.of(value, 80) + "'";
    }
}

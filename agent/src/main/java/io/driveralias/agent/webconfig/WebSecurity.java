package io.driveralias.agent.webconfig;

import io.driveralias.agent.config.ConfigException;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the metrics port asks of its clients, from {@code --web-config-file}, kept current.
 *
 * <p>Like the exporter toolkit, which reads the file on every request, changes apply without a
 * restart, so a certificate renewed by cert-manager (a Secret volume swaps its files) or a
 * user added is picked up: the file and the ones it names are checked at most once every
 * {@link #CHECK_MILLIS} ms, when a connection arrives, and reloaded when any of them changed.
 * Unlike the toolkit, a change that does not load (a half-written file, a key that does not
 * match its certificate) is logged once and the last good configuration stays: the agent keeps
 * serving rather than refuse every scrape and probe. Turning TLS on or off takes a restart,
 * as in the toolkit.
 */
public final class WebSecurity {

    private static final Logger LOG = LoggerFactory.getLogger(WebSecurity.class);
    static final long CHECK_MILLIS = 1000;
    /** Always answered without credentials: the kubelet's probes say nothing but "ok". */
    public static final Set<String> PROBES = Set.of("/healthz", "/readyz");

    /** The configuration one connection is served under. */
    public record Snapshot(Optional<ServerTls> tls, Map<String, String> users, Map<String, String> headers,
                           Set<String> excludedPaths) {

        public boolean authenticates(String path) {
            return !users.isEmpty() && !PROBES.contains(path) && !excludedPaths.contains(path);
        }
    }

    private static final Snapshot OPEN = new Snapshot(Optional.empty(), Map.of(), Map.of(), Set.of());

    /** No configuration file: plain HTTP, no authentication. */
    public static final WebSecurity NONE = new WebSecurity(null, OPEN, List.of());

    private final Path file;
    private final BasicAuth auth = new BasicAuth();
    private volatile Snapshot current;
    private List<Object> fingerprint;
    private List<Object> refused = List.of();
    private long nextCheck;

    private WebSecurity(Path file, Snapshot current, List<Object> fingerprint) {
        this.file = file;
        this.current = current;
        this.fingerprint = fingerprint;
    }

    /** Reads {@code file} at startup; any problem is a configuration error that names its field. */
    public static WebSecurity load(Optional<String> file) throws ConfigException {
        if (file.isEmpty()) {
            return NONE;
        }
        Path path = Path.of(file.get());
        WebConfig config = read(path);
        return new WebSecurity(path, build(config, path), fingerprint(path, config));
    }

    /** The configuration now, reloaded first if its files changed (checked at most once a second). */
    public Snapshot current() {
        if (file == null) {
            return current;
        }
        synchronized (this) {
            long now = System.nanoTime() / 1_000_000;
            if (now < nextCheck) {
                return current;
            }
            nextCheck = now + CHECK_MILLIS;
            List<Object> seen = fingerprintQuietly();
            if (seen.equals(fingerprint) || seen.equals(refused)) {
                return current;
            }
            try {
                WebConfig config = read(file);
                Snapshot loaded = build(config, file);
                if (loaded.tls().isPresent() != current.tls().isPresent()) {
                    throw new ConfigException("--web-config-file " + file + ": turning TLS " + (loaded.tls().isPresent() ? "on" : "off")
                            + " takes a restart");
                }
                current = loaded;
                fingerprint = fingerprint(file, config);
                LOG.info("web configuration {} reloaded: TLS {}, {} basic-auth users", file,
                        loaded.tls().isPresent() ? "on" : "off", loaded.users().size());
            } catch (ConfigException e) {
                refused = seen;
                LOG.warn("web configuration changed but not applied, the previous one stays: {}", e.getMessage());
            }
            return current;
        }
    }

    /**
     * Checks a request's {@code Authorization} header against the snapshot's users, for
     * {@code client} (whose share of the password checks is bounded); see {@link BasicAuth#check}.
     */
    public BasicAuth.Verdict authorize(Snapshot snapshot, String authorization, InetAddress client) throws InterruptedException {
        return auth.check(snapshot.users(), authorization, client);
    }

    BasicAuth auth() {
        return auth;
    }

    private static WebConfig read(Path path) throws ConfigException {
        try {
            if (Files.size(path) > WebConfigParser.MAX_BYTES) {
                throw new ConfigException("--web-config-file " + path + " is larger than " + WebConfigParser.MAX_BYTES + " bytes");
            }
            return WebConfigParser.parse(Files.readString(path, StandardCharsets.UTF_8), path);
        } catch (IOException e) {
            throw new ConfigException("--web-config-file " + path + " cannot be read: " + e);
        }
    }

    private static Snapshot build(WebConfig config, Path path) throws ConfigException {
        Optional<ServerTls> tls = config.tls().isEmpty() ? Optional.empty()
                : Optional.of(ServerTls.create(config.tls().get(), path.toString()));
        return new Snapshot(tls, config.users(), config.headers(), Set.copyOf(config.authExcludedPaths()));
    }

    /** Modification time, size and identity of the file and every file it names (symlinks followed, as a Secret volume needs). */
    private static List<Object> fingerprint(Path file, WebConfig config) {
        List<Object> parts = new ArrayList<>();
        List<Path> files = new ArrayList<>(List.of(file));
        files.addAll(config.files());
        for (Path p : files) {
            try {
                BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
                parts.add(List.of(p.toString(), a.lastModifiedTime().toMillis(), a.size(), String.valueOf(a.fileKey())));
            } catch (IOException e) {
                parts.add(List.of(p.toString(), "unreadable"));
            }
        }
        return parts;
    }

    private List<Object> fingerprintQuietly() {
        try {
            return fingerprint(file, read(file));
        } catch (ConfigException e) {
            return List.of(file.toString(), e.getMessage());
        }
    }
}

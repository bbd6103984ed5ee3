package io.driveralias.agent.webconfig;

import at.favre.lib.crypto.bcrypt.BCrypt;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * {@code Authorization: Basic} against bcrypt hashes. bcrypt is slow on purpose (about 50 ms
 * at cost 10 here), and any pod can reach the port, so every answer is remembered for the
 * (user, hash, password) it was computed for: Prometheus pays once, a client repeating a guess
 * pays once. Logins that succeeded are remembered apart from failures ({@value #SUCCESSES} of
 * them, against {@value #FAILURES} failures), so no number of wrong passwords pushes a valid
 * login out. A new guess waits for its turn in the {@link BcryptQueue}, which bounds what one
 * address and all of them together can make the agent hash. An unknown user costs the same
 * hash as a known one, so the time of a refusal does not tell which user names exist. One
 * instance serves every configuration the agent loads: the remembered answers survive a
 * reload, and an answer for a hash no longer configured is never used.
 */
public final class BasicAuth {

    /** What the request gets. */
    public enum Verdict { ALLOWED, DENIED, BUSY }

    /** Valid logins: one per configured user in practice (a password change adds one). */
    static final int SUCCESSES = 64;
    static final int FAILURES = 256;
    /** Go's bcrypt refuses passwords longer than 72 bytes; so does this. */
    private static final int MAX_PASSWORD_BYTES = 72;
    /** A hash of a random password nobody knows, at the cost of a typical htpasswd hash: what an unknown user costs. */
    private static final String DECOY = "$2y$10$RwtIo.iSGRvPK/WiCkSJKedvzsDoEiVucBCBWhL4q7LXGoHxsx5Kq";

    private final BcryptQueue queue;
    /** Keys remembered answers: a digest made with it is worthless outside this process (no offline guessing against a heap dump). */
    private final SecretKeySpec digestKey;
    private final Map<String, Boolean> successes = lru(SUCCESSES);
    private final Map<String, Boolean> failures = lru(FAILURES);

    public BasicAuth() {
        this(new BcryptQueue());
    }

    BasicAuth(BcryptQueue queue) {
        this.queue = queue;
        byte[] key = new byte[32];
        new SecureRandom().nextBytes(key);
        this.digestKey = new SecretKeySpec(key, "HmacSHA256");
    }

    /**
     * Whether {@code authorization} (the header's value, maybe null) names one of {@code users}
     * with its password; {@code client} is the address asking, whose turns are bounded. A
     * remembered answer comes at once; a new one waits at most {@link BcryptQueue#MAX_WAIT_MILLIS}
     * ms. Interrupted (the connection was evicted meanwhile), the wait gives up its turn.
     */
    public Verdict check(Map<String, String> users, String authorization, InetAddress client) throws InterruptedException {
        if (authorization == null || !authorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            return Verdict.DENIED;
        }
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(authorization.substring(6).trim());
        } catch (IllegalArgumentException e) {
            return Verdict.DENIED;
        }
        int colon = indexOfColon(decoded);
        if (colon < 0) {
            return Verdict.DENIED;
        }
        String user = new String(decoded, 0, colon, StandardCharsets.UTF_8);
        // The password as the client sent its bytes: decoded and encoded back, one that is not
        // UTF-8 (Latin-1, from older clients) never matched its own hash.
        byte[] password = Arrays.copyOfRange(decoded, colon + 1, decoded.length);
        String hash = users.get(user);
        boolean known = hash != null;
        String against = known ? hash : DECOY;
        String key = key(user, against, password);
        synchronized (this) {
            if (successes.get(key) != null) {
                return known ? Verdict.ALLOWED : Verdict.DENIED;
            }
            if (failures.get(key) != null) {
                return Verdict.DENIED;
            }
        }
        Boolean verified = queue.verify(client, () -> remember(key, bcrypt(password, against)));
        if (verified == null) {
            return Verdict.BUSY;
        }
        return verified && known ? Verdict.ALLOWED : Verdict.DENIED;
    }

    /** The first ':' (a user name holds none, RFC 7617), or -1. */
    private static int indexOfColon(byte[] credentials) {
        for (int i = 0; i < credentials.length; i++) {
            if (credentials[i] == ':') {
                return i;
            }
        }
        return -1;
    }

    /** bcrypt runs so far (tests: the cache works). */
    long hashes() {
        return queue.hashes();
    }

    private static boolean bcrypt(byte[] password, String hash) {
        try {
            return password.length <= MAX_PASSWORD_BYTES
                    && BCrypt.verifyer().verify(password, hash.getBytes(StandardCharsets.US_ASCII)).verified;
        } catch (RuntimeException e) {
            return false; // a hash the library refuses: nobody gets in with it
        }
    }

    /** Runs on the hasher, so that the answer is kept even when its asker stopped waiting. */
    private boolean remember(String key, boolean verified) {
        synchronized (this) {
            (verified ? successes : failures).put(key, Boolean.TRUE);
        }
        return verified;
    }

    /** A keyed digest, so that no password is kept in memory; the hash is part of it, so a changed hash is a new key. */
    private String key(String user, String hash, byte[] password) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(digestKey);
            mac.update(user.getBytes(StandardCharsets.UTF_8));
            mac.update((byte) 0);
            mac.update(hash.getBytes(StandardCharsets.US_ASCII));
            mac.update((byte) 0);
            mac.update(password);
            return HexFormat.of().formatHex(mac.doFinal());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, Boolean> lru(int size) {
        return new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                return size() > size;
            }
        };
    }
}

package io.driveralias.agent.webconfig;

import at.favre.lib.crypto.bcrypt.BCrypt;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * {@code Authorization: Basic} against bcrypt hashes. bcrypt is slow on purpose (about 50 ms
 * at cost 10 here), and any pod can reach the port, so what a client can make the agent hash is
 * bounded: every answer is remembered for the (user, hash, password) it was computed for, so
 * Prometheus pays once and a client repeating a guess pays once; only {@value #CONCURRENT}
 * hash runs at a time, and a request that waits longer than {@link #WAIT_MILLIS} is told to
 * come back (429) instead of queueing. An unknown user costs the same hash as a known one, so
 * the time of a refusal does not tell which user names exist. One instance serves every
 * configuration the agent loads: the remembered answers survive a reload, and an answer for a
 * hash no longer configured is never used.
 */
public final class BasicAuth {

    /** What the request gets. */
    public enum Verdict { ALLOWED, DENIED, BUSY }

    static final int CONCURRENT = 1;
    static final long WAIT_MILLIS = 2000;
    private static final int REMEMBERED = 256;
    /** Go's bcrypt refuses passwords longer than 72 bytes; so does this. */
    private static final int MAX_PASSWORD_BYTES = 72;
    /** A hash of a random password nobody knows, at the cost of a typical htpasswd hash: what an unknown user costs. */
    private static final String DECOY = "$2y$10$RwtIo.iSGRvPK/WiCkSJKedvzsDoEiVucBCBWhL4q7LXGoHxsx5Kq";

    private final Semaphore hashing = new Semaphore(CONCURRENT);
    private final Map<String, Boolean> answers = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > REMEMBERED;
        }
    };
    private long hashes;

    /** Whether {@code authorization} (the header's value, maybe null) names one of {@code users} with its password. */
    public Verdict check(Map<String, String> users, String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            return Verdict.DENIED;
        }
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(authorization.substring(6).trim());
        } catch (IllegalArgumentException e) {
            return Verdict.DENIED;
        }
        String credentials = new String(decoded, StandardCharsets.UTF_8);
        int colon = credentials.indexOf(':');
        if (colon < 0) {
            return Verdict.DENIED;
        }
        String user = credentials.substring(0, colon);
        byte[] password = credentials.substring(colon + 1).getBytes(StandardCharsets.UTF_8);
        String hash = users.get(user);
        boolean known = hash != null;
        String key = key(user, known ? hash : DECOY, password);
        synchronized (answers) {
            Boolean remembered = answers.get(key);
            if (remembered != null) {
                return remembered && known ? Verdict.ALLOWED : Verdict.DENIED;
            }
        }
        try {
            if (!hashing.tryAcquire(WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                return Verdict.BUSY;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Verdict.BUSY;
        }
        boolean verified;
        try {
            synchronized (answers) {
                hashes++;
            }
            verified = password.length <= MAX_PASSWORD_BYTES
                    && BCrypt.verifyer().verify(password, (known ? hash : DECOY).getBytes(StandardCharsets.US_ASCII)).verified;
        } catch (RuntimeException e) {
            verified = false; // a hash the library refuses: nobody gets in with it
        } finally {
            hashing.release();
        }
        synchronized (answers) {
            answers.put(key, verified);
        }
        return verified && known ? Verdict.ALLOWED : Verdict.DENIED;
    }

    /** bcrypt runs so far (tests: the cache works). */
    long hashes() {
        synchronized (answers) {
            return hashes;
        }
    }

    /** A digest, so that no password is kept in memory; the hash is part of it, so a changed hash is a new key. */
    private static String key(String user, String hash, byte[] password) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(user.getBytes(StandardCharsets.UTF_8));
            sha.update((byte) 0);
            sha.update(hash.getBytes(StandardCharsets.US_ASCII));
            sha.update((byte) 0);
            sha.update(password);
            return HexFormat.of().formatHex(sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}

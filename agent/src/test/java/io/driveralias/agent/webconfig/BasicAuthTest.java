package io.driveralias.agent.webconfig;

import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.webconfig.BasicAuth.Verdict;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class BasicAuthTest {

    /** htpasswd's $2y$ and Go's $2a$, at cost 10 as the toolkit's documentation shows. */
    private static final Map<String, String> USERS = Map.of(
            "prometheus", BCrypt.with(BCrypt.Version.VERSION_2Y).hashToString(10, "s3cret".toCharArray()),
            "grafana", BCrypt.with(BCrypt.Version.VERSION_2A).hashToString(10, "pässword".toCharArray()));

    private final BasicAuth auth = new BasicAuth();

    @Test
    void theRightPasswordGetsInAndIsHashedOnce() throws Exception {
        for (int i = 0; i < 50; i++) {
            assertThat(check(USERS, basic("prometheus", "s3cret"))).isEqualTo(Verdict.ALLOWED);
        }
        assertThat(check(USERS, basic("grafana", "pässword"))).isEqualTo(Verdict.ALLOWED);
        assertThat(auth.hashes()).isEqualTo(2);
    }

    @Test
    void wrongPasswordsUnknownUsersAndGarbageAreDenied() throws Exception {
        assertThat(check(USERS, basic("prometheus", "wrong"))).isEqualTo(Verdict.DENIED);
        assertThat(check(USERS, basic("nobody", "s3cret"))).isEqualTo(Verdict.DENIED);
        assertThat(check(USERS, basic("prometheus", "s3cret" + "x".repeat(100)))).isEqualTo(Verdict.DENIED);
        assertThat(check(USERS, null)).isEqualTo(Verdict.DENIED);
        assertThat(check(USERS, "Bearer abc")).isEqualTo(Verdict.DENIED);
        assertThat(check(USERS, "Basic !!!")).isEqualTo(Verdict.DENIED);
        assertThat(check(USERS, "Basic " + Base64.getEncoder().encodeToString("nocolon".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(Verdict.DENIED);
    }

    @Test
    void anUnknownUserCostsAHashLikeAKnownOneAndARepeatedGuessCostsNothing() throws Exception {
        check(USERS, basic("nobody", "guess"));
        assertThat(auth.hashes()).isEqualTo(1);
        check(USERS, basic("nobody", "guess"));
        check(USERS, basic("prometheus", "guess"));
        check(USERS, basic("prometheus", "guess"));
        assertThat(auth.hashes()).isEqualTo(2);
    }

    @Test
    void aRememberedAnswerIsNotUsedForAChangedHash() throws Exception {
        assertThat(check(USERS, basic("prometheus", "s3cret"))).isEqualTo(Verdict.ALLOWED);
        Map<String, String> changed = Map.of("prometheus", BCrypt.withDefaults().hashToString(4, "other".toCharArray()));
        assertThat(check(changed, basic("prometheus", "s3cret"))).isEqualTo(Verdict.DENIED);
        assertThat(check(changed, basic("prometheus", "other"))).isEqualTo(Verdict.ALLOWED);
    }

    @Test
    void newGuessesFromOneAddressRunOneAtATimeAndTheRestAreToldAtOnce() throws Exception {
        Map<String, String> slow = Map.of("prometheus", BCrypt.withDefaults().hashToString(14, "s3cret".toCharArray()));
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<Verdict>> guesses = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                String guess = "guess-" + i;
                guesses.add(() -> check(slow, basic("prometheus", guess)));
            }
            List<Verdict> verdicts = new ArrayList<>();
            long start = System.nanoTime();
            for (Future<Verdict> f : pool.invokeAll(guesses)) {
                verdicts.add(f.get());
            }
            long millis = (System.nanoTime() - start) / 1_000_000;
            System.out.printf("8 concurrent new guesses from one address at cost 14: %s in %d ms, %d hashes%n", verdicts, millis,
                    auth.hashes());
            assertThat(verdicts).doesNotContain(Verdict.ALLOWED).contains(Verdict.BUSY);
            assertThat(auth.hashes()).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aValidLoginStaysRememberedWhateverTheFailures() throws Exception {
        Map<String, String> cheap = Map.of("prometheus", BCrypt.withDefaults().hashToString(4, "s3cret".toCharArray()));
        assertThat(check(cheap, basic("prometheus", "s3cret"))).isEqualTo(Verdict.ALLOWED);
        for (int i = 0; i < 4 * BasicAuth.FAILURES; i++) {
            InetAddress from = InetAddress.getByAddress(new byte[] {10, 1, (byte) (i >> 8), (byte) i}); // each has its own turns
            assertThat(auth.check(cheap, basic("prometheus", "guess-" + i), from)).isEqualTo(Verdict.DENIED);
        }
        long hashes = auth.hashes();
        assertThat(check(cheap, basic("prometheus", "s3cret"))).isEqualTo(Verdict.ALLOWED);
        assertThat(auth.hashes()).as("remembered, not hashed again").isEqualTo(hashes);
    }

    private Verdict check(Map<String, String> users, String authorization) throws InterruptedException {
        return auth.check(users, authorization, InetAddress.getLoopbackAddress());
    }

    static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }
}

package io.driveralias.agent.webconfig;

import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.webconfig.BasicAuth.Verdict;
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
    void theRightPasswordGetsInAndIsHashedOnce() {
        for (int i = 0; i < 50; i++) {
            assertThat(auth.check(USERS, basic("prometheus", "s3cret"))).isEqualTo(Verdict.ALLOWED);
        }
        assertThat(auth.check(USERS, basic("grafana", "pässword"))).isEqualTo(Verdict.ALLOWED);
        assertThat(auth.hashes()).isEqualTo(2);
    }

    @Test
    void wrongPasswordsUnknownUsersAndGarbageAreDenied() {
        assertThat(auth.check(USERS, basic("prometheus", "wrong"))).isEqualTo(Verdict.DENIED);
        assertThat(auth.check(USERS, basic("nobody", "s3cret"))).isEqualTo(Verdict.DENIED);
        assertThat(auth.check(USERS, basic("prometheus", "s3cret" + "x".repeat(100)))).isEqualTo(Verdict.DENIED);
        assertThat(auth.check(USERS, null)).isEqualTo(Verdict.DENIED);
        assertThat(auth.check(USERS, "Bearer abc")).isEqualTo(Verdict.DENIED);
        assertThat(auth.check(USERS, "Basic !!!")).isEqualTo(Verdict.DENIED);
        assertThat(auth.check(USERS, "Basic " + Base64.getEncoder().encodeToString("nocolon".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(Verdict.DENIED);
    }

    @Test
    void anUnknownUserCostsAHashLikeAKnownOneAndARepeatedGuessCostsNothing() {
        auth.check(USERS, basic("nobody", "guess"));
        assertThat(auth.hashes()).isEqualTo(1);
        auth.check(USERS, basic("nobody", "guess"));
        auth.check(USERS, basic("prometheus", "guess"));
        auth.check(USERS, basic("prometheus", "guess"));
        assertThat(auth.hashes()).isEqualTo(2);
    }

    @Test
    void aRememberedAnswerIsNotUsedForAChangedHash() {
        assertThat(auth.check(USERS, basic("prometheus", "s3cret"))).isEqualTo(Verdict.ALLOWED);
        Map<String, String> changed = Map.of("prometheus", BCrypt.withDefaults().hashToString(4, "other".toCharArray()));
        assertThat(auth.check(changed, basic("prometheus", "s3cret"))).isEqualTo(Verdict.DENIED);
        assertThat(auth.check(changed, basic("prometheus", "other"))).isEqualTo(Verdict.ALLOWED);
    }

    @Test
    void aFloodOfNewGuessesRunsOneHashAtATimeAndTheRestAreToldToComeBack() throws Exception {
        Map<String, String> slow = Map.of("prometheus", BCrypt.withDefaults().hashToString(14, "s3cret".toCharArray()));
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Callable<Verdict>> guesses = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                String guess = "guess-" + i;
                guesses.add(() -> auth.check(slow, basic("prometheus", guess)));
            }
            List<Verdict> verdicts = new ArrayList<>();
            long start = System.nanoTime();
            for (Future<Verdict> f : pool.invokeAll(guesses)) {
                verdicts.add(f.get());
            }
            long millis = (System.nanoTime() - start) / 1_000_000;
            System.out.printf("8 concurrent new guesses at cost 14: %s in %d ms, %d hashes%n", verdicts, millis, auth.hashes());
            assertThat(verdicts).doesNotContain(Verdict.ALLOWED).contains(Verdict.BUSY);
            assertThat(auth.hashes()).isLessThan(8);
        } finally {
            pool.shutdownNow();
        }
    }

    static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }
}

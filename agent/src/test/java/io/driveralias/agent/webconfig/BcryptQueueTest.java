package io.driveralias.agent.webconfig;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.Timing;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The turns of the password hashes: per address, in total, and who goes first. Hashes are stand-ins that take what the test says. */
@Timeout(30)
@Timing
class BcryptQueueTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final BcryptQueue queue = new BcryptQueue(now::get);

    @Test
    void oneAddressHasOneCheckInFlightAndIsToldAtOnceForAnother() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Thread first = Thread.ofVirtual().start(() -> verifyQuietly(address(1), () -> await(release)));
        awaitHashes(1);

        long start = System.nanoTime();
        assertThat(queue.verify(address(1), () -> true)).as("the same address, while its check runs").isNull();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).as("told at once, no wait").isLessThan(500);

        release.countDown();
        first.join();
        assertThat(queue.verify(address(1), () -> true)).as("its turn is over: another").isTrue();
    }

    @Test
    void anAddressAloneGetsATenthOfACoreAndItsBankRefills() throws Exception {
        BooleanSupplier takes200Ms = () -> {
            now.addAndGet(TimeUnit.MILLISECONDS.toNanos(200));
            return false;
        };
        int granted = 0;
        while (queue.verify(address(1), takes200Ms) != null) {
            granted++;
        }
        // 1 s banked, plus a tenth of the time that passed meanwhile (20 ms per hash of 200 ms): 80 ms of debt.
        assertThat(granted).isEqualTo(6);
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(500));
        assertThat(queue.verify(address(1), takes200Ms)).as("50 ms earned: still in debt").isNull();
        assertThat(queue.verify(address(2), () -> false)).as("another address has its own bank").isFalse();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(500));
        assertThat(queue.verify(address(1), takes200Ms)).as("100 ms earned: out of debt").isFalse();
    }

    @Test
    void aFirstLoginGoesAheadOfAddressesThatGuessedWrong() throws Exception {
        for (int a = 1; a <= BcryptQueue.QUEUE_FOR_FAILED + 1; a++) {
            assertThat(queue.verify(address(a), () -> false)).isFalse(); // each address has guessed wrong once
        }
        CountDownLatch release = new CountDownLatch(1);
        Thread busy = Thread.ofVirtual().start(() -> verifyQuietly(address(100), () -> await(release)));
        awaitHashes(BcryptQueue.QUEUE_FOR_FAILED + 2);

        List<String> order = Collections.synchronizedList(new ArrayList<>());
        List<Thread> waiting = new ArrayList<>();
        List<Boolean> verdicts = Collections.synchronizedList(new ArrayList<>());
        for (int a = 1; a <= BcryptQueue.QUEUE_FOR_FAILED; a++) {
            InetAddress from = address(a);
            waiting.add(Thread.ofVirtual().start(() -> verdicts.add(verifyQuietly(from, () -> order.add("guess") && false))));
        }
        awaitWaiting(BcryptQueue.QUEUE_FOR_FAILED);
        assertThat(queue.verify(address(BcryptQueue.QUEUE_FOR_FAILED + 1), () -> false))
                .as("the places for addresses that guessed wrong are full: told at once").isNull();

        Thread login = Thread.ofVirtual().start(() -> verifyQuietly(address(200), () -> order.add("first login")));
        awaitWaiting(BcryptQueue.QUEUE_FOR_FAILED + 1);
        release.countDown();
        busy.join();
        login.join();
        for (Thread t : waiting) {
            t.join();
        }
        assertThat(order.getFirst()).isEqualTo("first login");
        assertThat(order).hasSize(BcryptQueue.QUEUE_FOR_FAILED + 1);
        assertThat(verdicts).containsOnly(false);
    }

    @Test
    void aWaiterThatIsInterruptedGivesUpItsTurnAndItsHashNeverRuns() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Thread busy = Thread.ofVirtual().start(() -> verifyQuietly(address(1), () -> await(release)));
        awaitHashes(1);
        List<String> ran = Collections.synchronizedList(new ArrayList<>());
        Thread evicted = Thread.ofVirtual().start(() -> {
            try {
                queue.verify(address(2), () -> ran.add("evicted"));
            } catch (InterruptedException expected) {
                ran.add("interrupted");
            }
        });
        awaitWaiting(1);
        evicted.interrupt();
        evicted.join();
        assertThat(queue.waiting()).isZero();
        release.countDown();
        busy.join();
        assertThat(queue.verify(address(2), () -> true)).as("the address may ask again").isTrue();
        assertThat(ran).containsExactly("interrupted");
    }

    @Test
    void aWaitEndsAfterItsBoundWithoutItsTurn() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Thread busy = Thread.ofVirtual().start(() -> verifyQuietly(address(1), () -> await(release)));
        awaitHashes(1);
        long start = System.nanoTime();
        assertThat(queue.verify(address(2), () -> true)).isNull();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isBetween(BcryptQueue.MAX_WAIT_MILLIS - 100,
                BcryptQueue.MAX_WAIT_MILLIS + 2000);
        assertThat(queue.waiting()).isZero();
        release.countDown();
        busy.join();
    }

    private Boolean verifyQuietly(InetAddress from, BooleanSupplier hash) {
        try {
            return queue.verify(from, hash);
        } catch (InterruptedException e) {
            return null;
        }
    }

    private void awaitHashes(long n) throws InterruptedException {
        for (int i = 0; i < 500 && queue.hashes() < n; i++) {
            Thread.sleep(10);
        }
        assertThat(queue.hashes()).isEqualTo(n);
    }

    private void awaitWaiting(int n) throws InterruptedException {
        for (int i = 0; i < 500 && queue.waiting() < n; i++) {
            Thread.sleep(10);
        }
        assertThat(queue.waiting()).isEqualTo(n);
    }

    private static boolean await(CountDownLatch latch) {
        try {
            return latch.await(20, TimeUnit.SECONDS) && false;
        } catch (InterruptedException e) {
            return false;
        }
    }

    static InetAddress address(int n) {
        try {
            return InetAddress.getByAddress(new byte[] {10, 0, (byte) (n >> 8), (byte) n});
        } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }
}

package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class HandshakeTurnsTest {

    private final HandshakeTurns turns = new HandshakeTurns();

    @Test
    void aQuietAddressHandshakesABurstAtOnceThenAtItsRate() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.1");
        for (int i = 0; i < HandshakeTurns.BURST; i++) {
            long start = System.nanoTime();
            turns.await(a, in(1000)).end();
            assertThat(millisSince(start)).as("turn %d of the burst", i).isLessThan(100);
        }
        long start = System.nanoTime();
        turns.await(a, in(2000)).end();
        assertThat(millisSince(start)).as("the next one waits its turn").isBetween(150L, 1000L);

        start = System.nanoTime();
        turns.await(InetAddress.getByName("10.0.0.2"), in(1000)).end();
        assertThat(millisSince(start)).as("another address does not wait behind it").isLessThan(100);
    }

    @Test
    void aTurnThatWouldComeAfterTheDeadlineIsRefusedAtOnceAndKeepsThePlace() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.3");
        for (int i = 0; i < HandshakeTurns.BURST; i++) {
            turns.await(a, in(1000)).end();
        }
        long start = System.nanoTime();
        assertThat(turns.await(a, in(50))).isNull();
        assertThat(millisSince(start)).isLessThan(100);
        start = System.nanoTime();
        turns.await(a, in(2000)).end();
        assertThat(millisSince(start)).as("the refused one took no place in the schedule").isLessThan(400);
    }

    @Test
    void anAddressHasAtMostTwoHandshakesInProgress() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.4");
        List<HandshakeTurns.Turn> held = new ArrayList<>();
        for (int i = 0; i < HandshakeTurns.IN_PROGRESS; i++) {
            held.add(turns.await(a, in(1000)));
        }
        assertThat(turns.await(a, in(300))).as("a third, until its deadline").isNull();
        Thread third = Thread.ofVirtual().start(() -> {
            try {
                turns.await(a, in(5000)).end();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        Thread.sleep(200);
        assertThat(third.isAlive()).isTrue();
        held.getFirst().end();
        third.join(2000);
        assertThat(third.isAlive()).as("in once one ended").isFalse();
    }

    @Test
    void anEvictedConnectionStopsWaitingForItsTurn() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.5");
        HandshakeTurns.Turn one = turns.await(a, in(1000));
        HandshakeTurns.Turn two = turns.await(a, in(1000));
        Thread waiting = Thread.ofVirtual().start(() -> {
            try {
                turns.await(a, in(20_000));
                throw new AssertionError("got a turn");
            } catch (InterruptedException expected) {
                // what eviction does
            }
        });
        Thread.sleep(100);
        waiting.interrupt();
        waiting.join(1000);
        assertThat(waiting.isAlive()).isFalse();
        one.end();
        two.end();
    }

    private static long in(long millis) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    }

    private static long millisSince(long start) {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }
}

package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.Timing;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
@Timing
class HandshakeTurnsTest {

    private final HandshakeTurns turns = new HandshakeTurns();

    @Test
    void aQuietAddressHandshakesABurstAtOnceThenAtItsRate() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.1");
        long burst = System.nanoTime();
        for (int i = 0; i < HandshakeTurns.BURST; i++) {
            long start = System.nanoTime();
            turns.await(a, false, in(1000)).end();
            assertThat(millisSince(start)).as("turn %d of the burst", i).isLessThan(100);
        }
        turns.await(a, false, in(2000)).end();
        assertThat(millisSince(burst)).as("the next one waits for its turn, 1/%d s after the burst began", HandshakeTurns.PER_SECOND)
                .isBetween(1000L / HandshakeTurns.PER_SECOND - 50, 1500L);

        long start = System.nanoTime();
        turns.await(InetAddress.getByName("10.0.0.2"), false, in(1000)).end();
        assertThat(millisSince(start)).as("another address does not wait behind it").isLessThan(100);
    }

    @Test
    void busyAddressesTogetherHandshakeAtTheirCommonRate() throws Exception {
        List<InetAddress> busy = new ArrayList<>();
        for (int a = 1; a <= 8; a++) {
            busy.add(InetAddress.getByName("10.0.3." + a));
        }
        long start = System.nanoTime();
        for (int round = 0; round < 4; round++) {
            for (InetAddress address : busy) {
                turns.await(address, true, in(10_000)).end(); // 32 in all, 4 per address: within each address's own rate
            }
        }
        assertThat(millisSince(start)).as("32 busy handshakes at %d a second", HandshakeTurns.BUSY_PER_SECOND)
                .isGreaterThanOrEqualTo(31 * 1000L / HandshakeTurns.BUSY_PER_SECOND - 50);
    }

    @Test
    void aTurnThatWouldComeAfterTheDeadlineIsRefusedAtOnceAndKeepsThePlace() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.3");
        for (int i = 0; i < HandshakeTurns.BURST; i++) {
            turns.await(a, false, in(1000)).end();
        }
        long start = System.nanoTime();
        assertThat(turns.await(a, false, in(50))).isNull();
        assertThat(millisSince(start)).isLessThan(100);
        start = System.nanoTime();
        turns.await(a, false, in(2000)).end();
        assertThat(millisSince(start)).as("the refused one took no place in the schedule").isLessThan(400);
    }

    @Test
    void anAddressHasAtMostTwoHandshakesInProgress() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.4");
        List<HandshakeTurns.Turn> held = new ArrayList<>();
        for (int i = 0; i < HandshakeTurns.IN_PROGRESS; i++) {
            held.add(turns.await(a, false, in(1000)));
        }
        assertThat(turns.await(a, false, in(300))).as("a third, until its deadline").isNull();
        Thread third = Thread.ofVirtual().start(() -> {
            try {
                turns.await(a, false, in(5000)).end();
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
    void busyAddressesShareAFewTurnsAndAQuietOneFindsNoneOfThemInItsWay() throws Exception {
        List<HandshakeTurns.Turn> held = new ArrayList<>();
        for (int a = 1; a <= HandshakeTurns.BUSY_IN_PROGRESS + 1; a++) {
            InetAddress busy = InetAddress.getByName("10.0.1." + a);
            if (a <= HandshakeTurns.BUSY_IN_PROGRESS) {
                held.add(turns.await(busy, true, in(1000)));
            } else {
                assertThat(turns.await(busy, true, in(300))).as("every turn of the busy addresses is taken").isNull();
            }
        }
        long start = System.nanoTime();
        HandshakeTurns.Turn quiet = turns.await(InetAddress.getByName("10.0.2.1"), false, in(1000));
        assertThat(quiet).isNotNull();
        assertThat(millisSince(start)).isLessThan(100);
        quiet.end();
        held.forEach(HandshakeTurns.Turn::end);
    }

    /**
     * A probe run back to back (a new connection each, as curl in a loop or the kubelet's probes
     * do) while stalled handshakes of a flood hold every busy turn: its handshakes wait only for
     * its own address's rate, never for the flood's turns.
     */
    @Test
    void aQuietAddressHandshakingBackToBackNeverWaitsForTheBusyTurns() throws Exception {
        List<HandshakeTurns.Turn> held = new ArrayList<>();
        for (int a = 1; a <= HandshakeTurns.BUSY_IN_PROGRESS; a++) {
            held.add(turns.await(InetAddress.getByName("10.0.4." + a), true, in(1000)));
        }
        InetAddress probe = InetAddress.getByName("10.0.5.1");
        long start = System.nanoTime();
        for (int i = 0; i < 10; i++) {
            HandshakeTurns.Turn t = turns.await(probe, false, in(1000));
            assertThat(t).as("handshake %d of the probe", i).isNotNull();
            t.end();
        }
        assertThat(millisSince(start)).as("ten handshakes: %d at once, then %d a second", HandshakeTurns.BURST, HandshakeTurns.PER_SECOND)
                .isLessThan(2 * 1000L / HandshakeTurns.PER_SECOND + 300);
        held.forEach(HandshakeTurns.Turn::end);
    }

    @Test
    void anEvictedConnectionStopsWaitingForItsTurn() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.5");
        HandshakeTurns.Turn one = turns.await(a, false, in(1000));
        HandshakeTurns.Turn two = turns.await(a, false, in(1000));
        Thread waiting = Thread.ofVirtual().start(() -> {
            try {
                turns.await(a, false, in(20_000));
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

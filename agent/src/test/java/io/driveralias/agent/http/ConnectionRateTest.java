package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ConnectionRateTest {

    private final AtomicLong now = new AtomicLong(5_000_000_000L);
    private final ConnectionRate rate = new ConnectionRate(now::get);

    @Test
    void anAddressGetsABurstThenItsRateAndOthersTheirOwn() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.1");
        for (int i = 0; i < ConnectionRate.BURST; i++) {
            assertThat(rate.admit(a)).as("connection %d of the burst", i).isTrue();
        }
        assertThat(rate.admit(a)).isFalse();
        assertThat(rate.admit(InetAddress.getByName("10.0.0.2"))).isTrue();

        now.addAndGet(TimeUnit.SECONDS.toNanos(1) / ConnectionRate.PER_SECOND);
        assertThat(rate.admit(a)).isTrue();
        assertThat(rate.admit(a)).isFalse();

        now.addAndGet(TimeUnit.SECONDS.toNanos(10));
        int admitted = 0;
        while (rate.admit(a)) {
            admitted++;
        }
        assertThat(admitted).as("a quiet spell earns the burst back, no more").isEqualTo(ConnectionRate.BURST);
    }

    @Test
    void refusedConnectionsDoNotPushTheScheduleFurther() throws Exception {
        InetAddress a = InetAddress.getByName("10.0.0.3");
        while (rate.admit(a)) {
            // the burst
        }
        for (int i = 0; i < 10_000; i++) {
            assertThat(rate.admit(a)).isFalse(); // a client looping on connect as fast as it can
        }
        now.addAndGet(TimeUnit.SECONDS.toNanos(1) / ConnectionRate.PER_SECOND);
        assertThat(rate.admit(a)).as("its rate, whatever it tried meanwhile").isTrue();
    }
}

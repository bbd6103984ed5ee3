package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.testing.Timing;
import io.driveralias.agent.webconfig.ServingPriority;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue: 8 addresses x 64 idle connections filled every slot and the kubelet's probes got
 * empty replies. Many addresses holding idle or slow connections must never starve
 * {@code /healthz} and {@code /readyz}, and the eviction that makes room must never cut a
 * request that is being answered.
 */
@Timing
class ProbeStarvationTest {

    private static final int ADDRESSES = 16;
    private static final int PER_ADDRESS = 64;

    private final FakeAgentStatus status = new FakeAgentStatus();
    private final List<Socket> held = new ArrayList<>();
    private AgentHttpServer server;

    @AfterEach
    void stop() {
        held.forEach(ProbeStarvationTest::closeQuietly);
        if (server != null) {
            server.close();
        }
    }

    @Test
    void healthzAnswersWithinASecondWhile16AddressesHold64IdleConnectionsEach() throws Exception {
        status.alive = true;
        status.ready = true;
        server = start(AgentHttpServer.Limits.DEFAULT, accept -> scrape(new byte[16]));
        List<Deque<Socket>> attackers = openIdle(ADDRESSES, PER_ADDRESS);
        // A probe while the port still takes in the 1,024 connections opened at once: printed, not
        // held to the second. The acceptor drains them at nice 10; on a machine where busy loops at
        // nice 0 share its cgroup (no pod of its own) that took up to 0.5 s beside two and 1.7 s
        // beside six (docs/threat-model.md).
        long setup = System.nanoTime();
        assertThat(probe("/healthz", "127.0.9.1")).startsWith("HTTP/1.1 200 ");
        setup = System.nanoTime() - setup;
        // Full but for one: the probe came after the 1,024, evicted one of them to get in, and
        // gave its slot back as it left. (Waiting for 512 open connections passed only when a
        // poll caught an evicted connection's thread still ending: 5 of 6 in CI, 0 of 7 alone.)
        awaitAccepted(ADDRESSES * PER_ADDRESS + 1);
        awaitHeldSlots(AgentHttpServer.Limits.DEFAULT.maxConnections() - 1);

        AtomicBoolean stop = new AtomicBoolean();
        Thread churn = Thread.ofPlatform().start(() -> keepReconnecting(attackers, stop));
        try {
            long worst = 0;
            for (int i = 0; i < 40; i++) {
                long start = System.nanoTime();
                assertThat(probe(i % 2 == 0 ? "/healthz" : "/readyz", "127.0.9.1")).startsWith("HTTP/1.1 200 ");
                worst = Math.max(worst, System.nanoTime() - start);
            }
            System.out.printf("/healthz and /readyz while %d addresses x %d idle connections are held (and reopened):"
                    + " worst of 40 %.1f ms (one while they were being taken in: %.1f ms)%n", ADDRESSES, PER_ADDRESS, worst / 1e6,
                    setup / 1e6);
            assertThat(Duration.ofNanos(worst)).isLessThan(Duration.ofSeconds(1));
            assertThat(server.heldSlots()).isLessThanOrEqualTo(AgentHttpServer.Limits.DEFAULT.maxConnections());
        } finally {
            stop.set(true);
            churn.join();
        }
    }

    @Test
    void slowlorisClientsAreEvictedUnderPressureAndCutAtTheHeadDeadline() throws Exception {
        status.alive = true;
        server = start(new AgentHttpServer.Limits(512, Duration.ofSeconds(3), Duration.ofSeconds(30), 8192, 64),
                accept -> scrape(new byte[16]));
        List<Socket> slow = new ArrayList<>();
        for (int a = 0; a < ADDRESSES; a++) {
            for (int i = 0; i < PER_ADDRESS; i++) {
                Socket s = connectFrom("127.0.8." + (a + 1));
                s.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
                slow.add(s);
            }
        }
        held.addAll(slow);
        Socket first = slow.getFirst();
        Thread dribble = Thread.ofPlatform().start(() -> {
            // One more header byte on every connection every 100 ms, never the blank line.
            while (!Thread.currentThread().isInterrupted()) {
                for (Socket s : slow) {
                    try {
                        s.getOutputStream().write('X');
                    } catch (IOException closed) {
                        // evicted or cut: what the test wants
                    }
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        try {
            // As above: one probe while the port takes them in, printed; then each held to the second.
            long setup = System.nanoTime();
            assertThat(probe("/healthz", "127.0.9.2")).startsWith("HTTP/1.1 200 ");
            setup = System.nanoTime() - setup;
            awaitAccepted(ADDRESSES * PER_ADDRESS + 1);
            long worst = 0;
            for (int i = 0; i < 20; i++) {
                long start = System.nanoTime();
                assertThat(probe("/healthz", "127.0.9.2")).startsWith("HTTP/1.1 200 ");
                worst = Math.max(worst, System.nanoTime() - start);
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
            }
            System.out.printf("/healthz while %d addresses x %d slowloris connections trickle: worst of 20 %.1f ms (one while they"
                    + " were being taken in: %.1f ms)%n", ADDRESSES, PER_ADDRESS, worst / 1e6, setup / 1e6);
            // The oldest one was evicted to make room, or at worst cut at the 3 s head deadline.
            first.setSoTimeout(5000);
            assertThat(readOrReset(first)).isEqualTo(-1);
            awaitOpenConnections(0, Duration.ofSeconds(8)); // every one of them cut at the deadline
        } finally {
            dribble.interrupt();
            dribble.join();
        }
    }

    @Test
    void aScrapeBeingAnsweredIsNeverEvictedWhateverFloodsTheServer() throws Exception {
        status.alive = true;
        byte[] big = new byte[8 << 20]; // far more than the socket buffers hold
        Arrays.fill(big, (byte) 'm');
        CountDownLatch rendering = new CountDownLatch(1);
        CountDownLatch flooded = new CountDownLatch(1);
        server = start(AgentHttpServer.Limits.DEFAULT, accept -> {
            rendering.countDown();
            await(flooded); // the flood arrives while this scrape waits for its body
            return scrape(big);
        });
        Socket scraper = new Socket();
        held.add(scraper);
        scraper.setReceiveBufferSize(4096);
        scraper.bind(new InetSocketAddress("127.0.7.1", 0));
        scraper.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()));
        scraper.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        assertThat(rendering.await(5, TimeUnit.SECONDS)).isTrue();

        // The scraper's own address fills its share too, and 16 others fill the server.
        Deque<Socket> sameAddress = new ArrayDeque<>();
        for (int i = 0; i < 2 * PER_ADDRESS; i++) {
            sameAddress.add(connectFrom("127.0.7.1"));
        }
        held.addAll(sameAddress);
        openIdle(ADDRESSES, PER_ADDRESS);
        awaitOpenConnections(AgentHttpServer.Limits.DEFAULT.maxConnections());
        flooded.countDown();

        InputStream in = scraper.getInputStream();
        byte[] head = readHead(in);
        assertThat(new String(head, StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 200 ");
        // Read the body slowly, while a second flood churns: every byte arrives.
        AtomicBoolean stop = new AtomicBoolean();
        List<Deque<Socket>> second = openIdle(ADDRESSES, PER_ADDRESS);
        Thread churn = Thread.ofPlatform().start(() -> keepReconnecting(second, stop));
        long body = 0;
        try {
            byte[] chunk = new byte[64 << 10];
            for (int n; (n = in.read(chunk)) >= 0; ) {
                body += n;
            }
        } finally {
            stop.set(true);
            churn.join();
        }
        assertThat(body).isEqualTo(big.length);
    }

    @Test
    void scrapesOfOneAddressAreBoundedSoThatTheyCannotPinEverySlot() throws Exception {
        status.alive = true;
        CountDownLatch release = new CountDownLatch(1);
        server = start(AgentHttpServer.Limits.DEFAULT, accept -> {
            await(release);
            return scrape(new byte[16]);
        });
        List<Socket> scrapes = new ArrayList<>();
        for (int i = 0; i < ConnectionSlots.SCRAPES_PER_CLIENT; i++) {
            Socket s = connectFrom("127.0.6.1");
            s.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            scrapes.add(s);
        }
        held.addAll(scrapes);
        awaitOpenConnections(ConnectionSlots.SCRAPES_PER_CLIENT);
        Thread.sleep(200);

        Socket extra = connectFrom("127.0.6.1");
        held.add(extra);
        extra.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        extra.setSoTimeout(5000);
        assertThat(new String(extra.getInputStream().readAllBytes(), StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 503 ");
        assertThat(probe("/healthz", "127.0.9.3")).startsWith("HTTP/1.1 200 ");

        release.countDown();
        for (Socket s : scrapes) {
            s.setSoTimeout(5000);
            assertThat(new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 200 ");
        }
    }

    private AgentHttpServer start(AgentHttpServer.Limits limits, MetricsSource metrics) throws IOException {
        AgentHttpServer s = new AgentHttpServer(new InetSocketAddress("0.0.0.0", 0), metrics, status, limits);
        s.start();
        return s;
    }

    /** {@code addresses} x {@code each} connections that send nothing, from 127.0.5.1, 127.0.5.2, ... */
    private List<Deque<Socket>> openIdle(int addresses, int each) throws IOException {
        List<Deque<Socket>> all = new ArrayList<>();
        for (int a = 0; a < addresses; a++) {
            Deque<Socket> sockets = new ArrayDeque<>();
            for (int i = 0; i < each; i++) {
                sockets.add(connectFrom("127.0.5." + (a + 1)));
            }
            all.add(sockets);
        }
        synchronized (held) {
            all.forEach(held::addAll);
        }
        return all;
    }

    /** An attacker that keeps its 64 per address: opens a new one and drops its own oldest, round the addresses. */
    private void keepReconnecting(List<Deque<Socket>> attackers, AtomicBoolean stop) {
        // At the port's nice, as PortFlood's attacker: in a cluster the attacker is a pod of its
        // own, where the agent's nice does not count against it. At nice 0 in the server's own
        // process, this loop alone had ten times the weight of the port's threads, and on a
        // machine loaded by others a probe waited over a second behind it.
        ServingPriority.lowerThisThread();
        for (int round = 0; !stop.get(); round++) {
            Deque<Socket> sockets = attackers.get(round % attackers.size());
            try {
                Socket fresh = connectFrom(sockets.getFirst().getLocalAddress().getHostAddress());
                closeQuietly(sockets.removeFirst());
                sockets.addLast(fresh);
                synchronized (held) {
                    held.add(fresh);
                }
            } catch (IOException e) {
                return;
            }
        }
    }

    /** A whole request from {@code from}, and the whole answer. */
    private String probe(String path, String from) throws IOException {
        try (Socket s = connectFrom(from)) {
            s.setSoTimeout(5000);
            s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
        }
    }

    private Socket connectFrom(String address) throws IOException {
        return new Socket(InetAddress.getLoopbackAddress(), server.port(), InetAddress.getByName(address), 0);
    }

    private void awaitOpenConnections(int atLeast) throws InterruptedException {
        awaitAtLeast("open connections", server::openConnections, atLeast);
    }

    private void awaitHeldSlots(int atLeast) throws InterruptedException {
        awaitAtLeast("held slots", server::heldSlots, atLeast);
    }

    /** Until the port has taken every connection opened so far from the kernel's queue. */
    private void awaitAccepted(int atLeast) throws InterruptedException {
        awaitAtLeast("accepted connections", server::acceptedConnections, atLeast);
    }

    /** Until {@code count} reaches {@code atLeast}, 20 s at most (also WebConfigServerTest's). */
    static void awaitAtLeast(String what, LongSupplier count, long atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (count.getAsLong() < atLeast) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": " + count.getAsLong() + ", expected " + atLeast);
            }
            Thread.sleep(20);
        }
    }

    private void awaitOpenConnections(int exactly, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (server.openConnections() != exactly) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("open connections: " + server.openConnections() + ", expected " + exactly);
            }
            Thread.sleep(20);
        }
    }

    private static byte[] readHead(InputStream in) throws IOException {
        byte[] buf = new byte[8192];
        int n = 0;
        while (n < 4 || !(buf[n - 4] == '\r' && buf[n - 3] == '\n' && buf[n - 2] == '\r' && buf[n - 1] == '\n')) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed after " + n + " bytes of head");
            }
            buf[n++] = (byte) b;
        }
        return Arrays.copyOf(buf, n);
    }

    private static int readOrReset(Socket s) throws IOException {
        try {
            return s.getInputStream().read();
        } catch (SocketException reset) {
            return -1;
        }
    }

    private static PrometheusScrape scrape(byte[] body) {
        return new PrometheusScrape("text/plain", body);
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // test cleanup
        }
    }
}

package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.PrometheusScrape;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The 16 kernel threads kept for quiet addresses (the kubelet's probes, Prometheus) go to any
 * address holding fewer than 8 connections, for as long as a connection lasts (the 10 s head
 * deadline, idle), 2 at most per address: two addresses (one dual-stack pod) holding 8 idle
 * connections each once took all of them, and the probe was served on a virtual thread, which
 * queues for a carrier behind a flood's connections (the threat model measured 1.09 s for that).
 */
class QuietThreadsTest {

    private AgentHttpServer server;

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void twoAddressesHoldingIdleConnectionsDoNotPushTheProbeOffTheKernelThreads() throws Exception {
        AtomicReference<Boolean> probeOnVirtualThread = new AtomicReference<>();
        AgentStatus status = new AgentStatus() {
            @Override
            public boolean alive() {
                probeOnVirtualThread.set(Thread.currentThread().isVirtual());
                return true;
            }

            @Override
            public boolean ready() {
                return true;
            }
        };
        server = new AgentHttpServer(new InetSocketAddress("127.0.0.1", 0),
                accept -> new PrometheusScrape("text/plain", "up_test 1\n".getBytes(StandardCharsets.UTF_8)), status);
        server.start();
        List<Socket> idle = new ArrayList<>();
        try {
            for (int a = 1; a <= 2; a++) {
                for (int i = 0; i < 8; i++) {
                    idle.add(new Socket(InetAddress.getByName("127.0.0.1"), server.port(), InetAddress.getByName("127.0.10." + a), 0));
                    awaitOpen(idle.size());
                }
            }
            String answer = probe();
            assertThat(answer).startsWith("HTTP/1.1 200");
            assertThat(probeOnVirtualThread.get()).as("the probe was served on a virtual thread").isFalse();
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
    }

    private void awaitOpen(int n) throws InterruptedException {
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (server.openConnections() < n && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(server.openConnections()).isEqualTo(n);
    }

    private String probe() throws IOException {
        try (Socket s = new Socket(InetAddress.getByName("127.0.0.1"), server.port(), InetAddress.getByName("127.0.0.1"), 0)) {
            s.setSoTimeout(5000);
            s.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }
}

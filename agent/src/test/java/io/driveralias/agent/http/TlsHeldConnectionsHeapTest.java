package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.testing.ShippedJvm;
import io.driveralias.agent.testing.TestCertificates;
import io.driveralias.agent.webconfig.WebSecurity;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The port in a JVM with the shipped options (32 MiB heap) and a ballast standing in
 * for the rest of the agent's live set (about 12 MiB, agent/image/jvm.options), while 64
 * addresses hold 8 TLS connections each (never busy: fewer than 8 held when each was accepted),
 * each handshaken and holding a request head of almost 8 KiB that never ends (one TLS record: the
 * JDK's socket keeps the record and its plaintext besides the head's own buffer). With 6 MiB of
 * ballast, heads of 8,000 bytes ended the JVM after 367 connections when 512 could be held over
 * TLS; at 128 it stays up. Heads of 0, 1,000 and 4,000 bytes, plain HTTP, and stalled handshakes
 * (even with 10 MiB) are the controls.
 */
class TlsHeldConnectionsHeapTest {

    /**
     * The agent's live set is ~12 MiB (agent/image/jvm.options), the port's own objects part of it:
     * half of it, to be conservative. With none, the port alone survives the 512 connections; with
     * 6 MiB the JVM ended (OutOfMemoryError) after 367 of them, with 10 MiB after 276.
     * {@code -Dredteam.ballast=N} tries another.
     */
    private static final int BALLAST_MIB = 6;

    @TempDir
    static Path dir;
    private static TestCertificates certs;

    @BeforeAll
    static void certificates() {
        certs = TestCertificates.create(dir);
    }

    @Test
    void theShippedHeapHoldsTheTlsConnectionsOf64Addresses() throws Exception {
        Path config = Files.writeString(dir.resolve("web.yml"), "tls_server_config: {cert_file: server.crt, key_file: server.key}\n");
        run(config.toString(), certs.clientContext(null));
    }

    /** The same over plain HTTP, the default: a control (it held 512 of 512, with 6 and with 12 MiB of ballast). */
    @Test
    void theShippedHeapHoldsThePlainConnectionsOf64Addresses() throws Exception {
        run("none", null);
    }

    /** Handshakes that stall after the ClientHello: at most 2 in progress per address, 128 in all here. */
    @Test
    void theShippedHeapHoldsTheStalledHandshakesOf64Addresses() throws Exception {
        Path config = Files.writeString(dir.resolve("web-stall.yml"), "tls_server_config: {cert_file: server.crt, key_file: server.key}\n");
        stall = true;
        run(config.toString(), certs.clientContext(null));
    }

    private static volatile boolean stall;
    /** Bytes of the unfinished header each connection sends ({@code -Dredteam.head=N}). */
    private static final int HEAD = Integer.getInteger("redteam.head", 8000);

    private void run(String config, SSLContext tls) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(ShippedJvm.commandLineOptions());
        command.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                TlsHeldConnectionsHeapTest.class.getName(), config, System.getProperty("redteam.ballast", String.valueOf(BALLAST_MIB))));
        Process agent = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            var out = new java.io.BufferedReader(new java.io.InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
            int port = -1;
            for (String line; port < 0 && (line = out.readLine()) != null; ) {
                if (line.startsWith("port ")) {
                    port = Integer.parseInt(line.substring(5).trim());
                }
            }
            assertThat(port).isPositive();
            StringBuilder log = new StringBuilder();
            Thread.ofVirtual().start(() -> out.lines().forEach(l -> {
                synchronized (log) {
                    log.append(l).append('\n');
                }
            }));
            List<Socket> held = hold(port, tls);
            Thread.sleep(stall ? 3000 : 1000);
            String answer = agent.isAlive() ? probe(port, tls) : "(agent gone)";
            for (Socket s : held) {
                s.close();
            }
            agent.waitFor(1, TimeUnit.SECONDS);
            String exit = agent.isAlive() ? "alive" : "exited " + agent.exitValue();
            synchronized (log) {
                System.out.printf("%d connections held; agent %s; probe: %s%nagent's output:%n%s%n", held.size(), exit,
                        answer.lines().findFirst().orElse(""), log.toString().lines().filter(l -> !l.contains(" DEBUG "))
                                .limit(20).reduce("", (a, b) -> a + b + "\n"));
            }
            assertThat(exit).as("the agent's JVM after the connections").isEqualTo("alive");
            assertThat(answer).startsWith("HTTP/1.1 200");
        } finally {
            agent.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static List<Socket> hold(int port, SSLContext client) throws InterruptedException {
        List<Socket> held = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            List<Future<Socket>> opening = new ArrayList<>();
            for (int a = 1; a <= 64; a++) {
                for (int i = 0; i < 8; i++) {
                    String from = "127.0.12." + a;
                    opening.add(pool.submit(() -> {
                        Socket raw = new Socket(InetAddress.getByName("127.0.0.1"), port, InetAddress.getByName(from), 0);
                        Socket ssl = raw;
                        if (stall) {
                            raw.getOutputStream().write(clientHello(client, port));
                            return raw;
                        }
                        if (client != null) {
                            SSLSocket tlsSocket = (SSLSocket) client.getSocketFactory().createSocket(raw, "localhost", port, true);
                            tlsSocket.setSoTimeout(9000);
                            tlsSocket.startHandshake();
                            ssl = tlsSocket;
                        }
                        ssl.getOutputStream().write(("GET /healthz HTTP/1.1\r\nX: " + "a".repeat(HEAD)).getBytes(StandardCharsets.US_ASCII));
                        return ssl;
                    }));
                }
            }
            for (Future<Socket> f : opening) {
                try {
                    held.add(f.get());
                } catch (java.util.concurrent.ExecutionException e) {
                    // refused, cut or the agent gone: not held
                }
            }
        }
        return held;
    }

    private static byte[] clientHello(SSLContext client, int port) throws IOException {
        javax.net.ssl.SSLEngine engine = client.createSSLEngine("localhost", port);
        engine.setUseClientMode(true);
        java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(java.nio.ByteBuffer.allocate(0), out);
        out.flip();
        byte[] hello = new byte[out.remaining()];
        out.get(hello);
        return hello;
    }

    private static String probe(int port, SSLContext client) throws IOException {
        try (Socket s = client == null ? new Socket(InetAddress.getByName("127.0.0.1"), port)
                : client.getSocketFactory().createSocket(InetAddress.getByName("127.0.0.1"), port)) {
            s.setSoTimeout(5000);
            s.getOutputStream().write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return "(no answer: " + e + ")";
        }
    }

    /** The agent's side: the port with {@code args[0]} as its web configuration, and the ballast. */
    public static void main(String[] args) throws Exception {
        byte[][] ballast = new byte[Integer.parseInt(args[1])][];
        for (int i = 0; i < ballast.length; i++) {
            ballast[i] = new byte[1 << 20];
        }
        FakeAgentStatus status = new FakeAgentStatus();
        status.alive = true;
        AgentHttpServer server = new AgentHttpServer(new InetSocketAddress("127.0.0.1", 0),
                accept -> new PrometheusScrape("text/plain", "up_test 1\n".getBytes(StandardCharsets.UTF_8)), status,
                args[0].equals("none") ? WebSecurity.NONE : WebSecurity.load(Optional.of(args[0])));
        server.start();
        System.out.println("port " + server.port());
        System.out.flush();
        while (ballast.length >= 0) {
            Thread.sleep(60_000);
        }
    }
}

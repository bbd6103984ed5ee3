package io.driveralias.agent.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.webconfig.ServerTls;
import io.driveralias.agent.webconfig.WebSecurity;
import java.lang.management.ManagementFactory;
import java.util.Collections;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSessionContext;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every full TLS handshake of a client without session tickets leaves a session in the server's
 * cache, and any pod can handshake (an address 4 a second, every address on its own): the cache
 * is global state that grows with what clients send. The JDK's default, 20,480 sessions for 24
 * hours, takes far more than the 32 MiB heap; the server keeps a few, briefly.
 */
class TlsSessionCacheTest extends TlsPortTest {

    @ParameterizedTest
    @CsvSource({"-tls1_2, NoClientCert, ", "-tls1_2, RequireAnyClientCert, client"})
    void handshakesOfNewClientsDoNotPileUpSessions(String protocol, String clientAuth, String clientCert) throws Exception {
        WebSecurity security = start("tls_server_config: {cert_file: server.crt, key_file: server.key, client_auth_type: "
                + clientAuth + "}\n");
        SSLSessionContext cache = serverContext(security.current().tls().orElseThrow()).getServerSessionContext();
        int addresses = 16;
        int sessions = addresses * 8; // each address's burst: no waiting for a turn
        long before = usedHeapAfterGc();
        for (int wave = 0; wave < 8; wave++) {
            java.util.List<Process> running = new java.util.ArrayList<>();
            for (int a = 1; a <= addresses; a++) {
                // openssl without session tickets, as any client may: the server keeps the session itself
                java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of("openssl", "s_client", "-connect",
                        "127.0.0.1:" + server.port(), "-bind", "127.0.9." + a + ":0", protocol, "-no_ticket"));
                if (clientCert != null) {
                    cmd.addAll(java.util.List.of("-cert", certs.path(clientCert + ".crt").toString(), "-key",
                            certs.path(clientCert + ".key").toString()));
                }
                Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
                p.getOutputStream().close();
                running.add(p);
            }
            for (Process p : running) {
                p.waitFor();
            }
        }
        int cached = Collections.list(cache.getIds()).size();
        long grown = usedHeapAfterGc() - before;
        long each = cached == 0 ? 0 : grown / cached;
        long atBound = cache.getSessionCacheSize() == 0 ? Long.MAX_VALUE : each * cache.getSessionCacheSize();
        System.out.printf("%s %s: %d handshakes left %d sessions cached, heap +%d KiB (%d bytes each); cache bound %d sessions for %d s:"
                + " about %d MiB at the bound%n", protocol, clientAuth, sessions, cached, grown / 1024, each,
                cache.getSessionCacheSize(), cache.getSessionTimeout(), atBound / (1 << 20));
        assertThat(atBound).as("heap the session cache may take at its bound (bytes)").isLessThan(4L << 20);
    }

    private static SSLContext serverContext(ServerTls tls) throws ReflectiveOperationException {
        var field = ServerTls.class.getDeclaredField("context");
        field.setAccessible(true);
        return (SSLContext) field.get(tls);
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}

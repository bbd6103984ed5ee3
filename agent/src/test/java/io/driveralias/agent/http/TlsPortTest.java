package io.driveralias.agent.http;

import io.driveralias.agent.metrics.PrometheusScrape;
import io.driveralias.agent.testing.TestCertificates;
import io.driveralias.agent.webconfig.WebSecurity;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/** What the tests of the port over TLS share: certificates, and a server of a web configuration of their own. */
abstract class TlsPortTest {

    @TempDir
    static Path dir;
    static TestCertificates certs;
    AgentHttpServer server;

    @BeforeAll
    static void certificates() {
        certs = TestCertificates.create(dir);
    }

    @AfterEach
    void stop() {
        if (server != null) {
            server.close();
        }
    }

    /** Starts {@link #server} with the web configuration {@code yaml} (paths relative to the certificates' directory). */
    WebSecurity start(String yaml) throws Exception {
        Path config = Files.writeString(dir.resolve("web-" + System.nanoTime() + ".yml"), yaml);
        WebSecurity security = WebSecurity.load(Optional.of(config.toString()));
        server = new AgentHttpServer(new InetSocketAddress("127.0.0.1", 0),
                accept -> new PrometheusScrape("text/plain", "up_test 1\n".getBytes(StandardCharsets.UTF_8)), new FakeAgentStatus(), security);
        server.start();
        return security;
    }
}

package io.driveralias.agent.webconfig;

import static org.assertj.core.api.Assertions.assertThat;

import at.favre.lib.crypto.bcrypt.BCrypt;
import io.driveralias.agent.webconfig.BasicAuth.Verdict;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The password is checked as the bytes the client sent. Decoded as UTF-8 and encoded back, its bytes were
 * not the ones sent: a password that is not valid UTF-8 (Latin-1, as older clients
 * send) never matched its own hash, and distinct invalid byte sequences collapsed into the same
 * U+FFFD password. Go's toolkit compares the raw bytes.
 */
class BasicAuthRawPasswordTest {

    @Test
    void aPasswordIsCheckedAsTheBytesTheClientSent() throws Exception {
        byte[] latin1 = "caf\u00e9".getBytes(StandardCharsets.ISO_8859_1); // 63 61 66 e9: not UTF-8
        String hash = new String(BCrypt.with(BCrypt.Version.VERSION_2Y).hash(4, latin1), StandardCharsets.US_ASCII);
        ByteArrayOutputStream credentials = new ByteArrayOutputStream();
        credentials.writeBytes("prometheus:".getBytes(StandardCharsets.US_ASCII));
        credentials.writeBytes(latin1);
        String header = "Basic " + Base64.getEncoder().encodeToString(credentials.toByteArray());
        Verdict verdict = new BasicAuth().check(Map.of("prometheus", hash), header, InetAddress.getByName("127.0.0.1"));
        assertThat(verdict).as("the right password, sent as its Latin-1 bytes").isEqualTo(Verdict.ALLOWED);
    }
}

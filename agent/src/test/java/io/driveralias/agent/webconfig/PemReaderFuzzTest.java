package io.driveralias.agent.webconfig;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.TestCertificates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Mutated keys and certificates: only the reader's own error, never another exception, a hang or a huge allocation. */
class PemReaderFuzzTest {

    @TempDir
    Path dir;

    @Test
    void mutatedKeysAndCertificatesFailWithTheReadersOwnError() throws Exception {
        TestCertificates certs = TestCertificates.create(dir);
        certs.openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "sec1.key");
        certs.openssl("genrsa", "-traditional", "-out", "pkcs1.key", "1024");
        Random random = new Random(20261201);
        int refused = 0;
        for (String file : new String[] {"sec1.key", "pkcs1.key", "server.key", "server.crt"}) {
            String pem = Files.readString(dir.resolve(file));
            String type = pem.substring(11, pem.indexOf("-----", 11));
            byte[] der = Base64.getMimeDecoder().decode(pem.replaceAll("-----[A-Z ]+-----", ""));
            for (int i = 0; i < 500; i++) {
                byte[] mutant = der.clone();
                for (int flips = 1 + random.nextInt(4); flips > 0; flips--) {
                    mutant[random.nextInt(mutant.length)] = (byte) random.nextInt(256);
                }
                if (random.nextInt(5) == 0) {
                    mutant = java.util.Arrays.copyOf(mutant, random.nextInt(mutant.length));
                }
                String text = "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder().encodeToString(mutant)
                        + "\n-----END " + type + "-----\n";
                try {
                    if (type.equals("CERTIFICATE")) {
                        PemReader.certificates(text);
                    } else {
                        PemReader.privateKey(text);
                    }
                } catch (PemReader.PemException expected) {
                    refused++;
                }
            }
        }
        assertThat(refused).as("most mutants are refused").isGreaterThan(1000);
    }
}

package io.driveralias.agent.mount;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** The mountinfo files under src/test/resources/mountinfo, read as the agent reads /proc. */
final class Fixtures {

    static final String DOCKER_FILES = "docker-overlay2-nvidia-files.txt";
    static final String LIB64_DIRECTORY = "docker-nvidia-lib64-directory.txt";
    static final String RHEL = "rhel-docker-usr-lib64.txt";
    static final String WEIRD = "weird-mount-points.txt";
    static final String REAL_VM = "real-vm-self.txt";

    static final List<String> ALL = List.of(DOCKER_FILES, LIB64_DIRECTORY, RHEL, WEIRD, REAL_VM);

    private Fixtures() {
    }

    static List<MountEntry> parse(String name) throws MountInfoException {
        try (InputStream in = open(name)) {
            return MountInfoParser.parse(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String text(String name) {
        try (InputStream in = open(name)) {
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static MountEntry byId(List<MountEntry> mounts, int mountId) {
        return mounts.stream().filter(m -> m.mountId() == mountId).findFirst().orElseThrow();
    }

    private static InputStream open(String name) throws IOException {
        InputStream in = Fixtures.class.getResourceAsStream("/mountinfo/" + name);
        if (in == null) {
            throw new IOException("no fixture " + name);
        }
        return in;
    }
}

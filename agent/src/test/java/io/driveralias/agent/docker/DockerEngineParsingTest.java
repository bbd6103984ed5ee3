package io.driveralias.agent.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.core.DockerApiVersions;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class DockerEngineParsingTest {

    private static InputStream text(String s) {
        return new ByteArrayInputStream(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void listsReadOnlyTheIdsSkippingEverythingElse() throws IOException {
        String list = "[{\"Names\":[\"/a\"],\"Id\":\"new\",\"Labels\":{\"Id\":\"not-this\"},\"Mounts\":[{\"Id\":\"x\"}]},"
                + "{\"Id\":\"old\",\"Command\":\"sh\"}]";
        assertThat(DockerEngine.ids(text(list))).containsExactly("new", "old");
        assertThat(DockerEngine.ids(text("[]"))).isEmpty();
    }

    @Test
    void aListThatIsNotOneIsAnError() {
        assertThatThrownBy(() -> DockerEngine.ids(text("{\"message\":\"no\"}"))).isInstanceOf(IOException.class);
    }

    @Test
    void aBoundedBodyStopsAtItsLimit() {
        String list = "[" + "{\"Id\":\"c\"},".repeat(1000) + "{\"Id\":\"c\"}]";
        assertThatThrownBy(() -> DockerEngine.ids(new BoundedInput(text(list), 1000)))
                .isInstanceOf(IOException.class).hasMessageContaining("larger than 1000 bytes");
    }

    @Test
    void versionsAreComparedAsNumbersAndAgreedDownToTheDaemons() {
        assertThat(DockerApiVersions.compare("1.9", "1.24")).isNegative();
        assertThat(DockerApiVersions.agreed("1.51")).isEqualTo(DockerApiVersions.NEWEST_KNOWN);
        assertThat(DockerApiVersions.agreed("1.30")).isEqualTo("1.30");
        assertThat(DockerApiVersions.isSupported("1.24")).isTrue();
        assertThat(DockerApiVersions.isSupported("1.23")).isFalse();
        assertThat(DockerApiVersions.isSupported("1.44")).isFalse();
        assertThat(DockerApiVersions.isSupported("1.x")).isFalse();
        assertThat(DockerApiVersions.isVersion("1.43-rc")).isFalse();
    }
}

package io.driveralias.agent.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * docker-java drags in slf4j 1.7 and Jackson 2.18; the parent pom pins slf4j 2 and one
 * Jackson for everybody. Without the pins the agent would log nothing, or fabric8 would fail
 * on an old jackson-annotations: this proves the classpath is the pinned one.
 */
class LoggingBindingTest {

    @Test
    void slf4jLogsThroughLogback() {
        assertThat(LoggerFactory.getILoggerFactory()).isInstanceOf(LoggerContext.class);

        ListAppender<ILoggingEvent> captured = new ListAppender<>();
        Logger logger = (Logger) LoggerFactory.getLogger("test.binding");
        captured.setContext(logger.getLoggerContext());
        captured.start();
        logger.addAppender(captured);
        try {
            // The fluent API exists only in slf4j 2.
            LoggerFactory.getLogger("test.binding").atWarn().addKeyValue("container_id", "abc").log("bound");
        } finally {
            logger.detachAppender(captured);
        }

        assertThat(captured.list).singleElement().satisfies(event -> {
            assertThat(event.getFormattedMessage()).isEqualTo("bound");
            assertThat(event.getKeyValuePairs()).singleElement().satisfies(kv -> assertThat(kv.key).isEqualTo("container_id"));
        });
    }

    record Alias(String name, String target) {
    }

    @Test
    void jacksonSerialisesForUsDockerJavaAndFabric8() throws Exception {
        assertThat(com.fasterxml.jackson.databind.cfg.PackageVersion.VERSION.getMinorVersion())
                .as("jackson-databind and jackson-core from the same release")
                .isEqualTo(com.fasterxml.jackson.core.json.PackageVersion.VERSION.getMinorVersion());
        ObjectMapper mapper = new ObjectMapper();

        String alias = mapper.writeValueAsString(new Alias("libcuda.so.1", "libcuda.so.535.104.05"));
        assertThat(mapper.readValue(alias, Alias.class)).isEqualTo(new Alias("libcuda.so.1", "libcuda.so.535.104.05"));

        // Docker's answers are read as trees (inspect) or streamed (events, lists) with the same Jackson.
        assertThat(mapper.readTree("{\"Type\":\"container\",\"Action\":\"start\",\"id\":\"abc\"}").path("Action")
                .asText()).isEqualTo("start");

        Pod pod = new PodBuilder().withNewMetadata().withName("train-0").withNamespace("ml").endMetadata().build();
        String podJson = Serialization.asJson(pod);
        assertThat(mapper.readValue(podJson, Map.class)).containsEntry("kind", "Pod");
        assertThat(Serialization.unmarshal(podJson, Pod.class).getMetadata().getName()).isEqualTo("train-0");
    }
}

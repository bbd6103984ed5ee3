package io.driveralias.agent.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.driveralias.agent.config.AgentConfig.LogFormat;
import io.driveralias.agent.config.AgentConfig.LogLevel;
import io.driveralias.agent.config.BuildVersion;
import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.core.PodRef;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

class LogSetupTest {

    private static final ContainerRef CONTAINER = new ContainerRef("3f2a9c1b7d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5061728394a5b6c7d8e",
            "k8s_trainer_train-0_ml_uid_0", "pytorch:24.01", Optional.of(new PodRef("ml", "train-0", "uid", "trainer")));

    private final LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    private final ObjectMapper json = new ObjectMapper();

    /**
     * What log pipelines read without configuration (the Elastic Common Schema): an ISO-8601
     * {@code @timestamp}, {@code log.level}, {@code message}, {@code log.logger}, and the
     * container the line is about in keys of its own.
     */
    @Test
    void jsonIsOneEcsObjectPerLineWithTheContainerAsItsOwnKeys() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Logger logger = privateLogger(out, LogSetup.jsonEncoder(context));
        Instant before = Instant.now().truncatedTo(ChronoUnit.MILLIS);

        try (var ignored = Mdc.container(CONTAINER)) {
            logger.warn("cannot repair {}: \"{}\"\nsecond line", "libcuda.so.1", "read-only", new IOException("EROFS"));
        }
        logger.info("reconcile finished");

        List<JsonNode> lines = lines(out);
        assertThat(lines).hasSize(2);
        JsonNode warning = lines.get(0);
        assertThat(Instant.parse(warning.path("@timestamp").asText())).isBetween(before, Instant.now());
        assertThat(warning.path("@timestamp").asText()).endsWith("Z");
        assertThat(warning.path("log.level").asText()).isEqualTo("WARN");
        assertThat(warning.path("message").asText()).isEqualTo("cannot repair libcuda.so.1: \"read-only\"\nsecond line");
        assertThat(warning.path("log.logger").asText()).isEqualTo(logger.getName());
        assertThat(warning.path("container_id").asText()).isEqualTo(CONTAINER.id());
        assertThat(warning.path("pod").asText()).isEqualTo("ml/train-0");
        assertThat(warning.path("error.type").asText()).isEqualTo("java.io.IOException");
        assertThat(warning.path("error.message").asText()).isEqualTo("EROFS");
        assertThat(warning.path("error.stack_trace").asText()).contains("EROFS", "LogSetupTest");
        assertThat(warning.path("service.name").asText()).isEqualTo("driver-alias-agent");
        assertThat(warning.path("service.version").asText()).isEqualTo(BuildVersion.get());
        assertThat(warning.path("ecs.version").asText()).isNotBlank();
        JsonNode info = lines.get(1);
        assertThat(info.path("log.level").asText()).isEqualTo("INFO");
        assertThat(info.has("container_id")).isFalse();
        assertThat(info.has("pod")).isFalse();
        assertThat(info.has("error.type")).isFalse();
    }

    /** Container data in a message or the MDC cannot break out of its string or its line. */
    @Test
    void hostileTextStaysInsideItsJsonString() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Logger logger = privateLogger(out, LogSetup.jsonEncoder(context));
        String hostile = "\"}\n{\"log.level\":\"ERROR\",\"message\":\"forged\u2028\u0000\u001b[31m";

        try (var ignored = Mdc.containerId(hostile)) {
            logger.info("image {}", hostile);
        }

        assertThat(lines(out)).singleElement().satisfies(line -> {
            assertThat(line.path("message").asText()).isEqualTo("image " + hostile);
            assertThat(line.path("container_id").asText()).isEqualTo(hostile);
            assertThat(line.path("log.level").asText()).isEqualTo("INFO");
        });
    }

    @Test
    void configureJsonSwitchesTheStderrAppender() throws IOException {
        @SuppressWarnings("unchecked")
        OutputStreamAppender<ILoggingEvent> stderr = (OutputStreamAppender<ILoggingEvent>)
                context.getLogger(Logger.ROOT_LOGGER_NAME).getAppender(LogSetup.APPENDER);
        Encoder<ILoggingEvent> text = stderr.getEncoder();
        PrintStream realErr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            LogSetup.configure(LogFormat.JSON, LogLevel.INFO);
            try (var ignored = Mdc.container(CONTAINER)) {
                LoggerFactory.getLogger("io.driveralias.agent.test").info("created {}", "libcuda.so.1");
            }
        } finally {
            System.setErr(realErr);
            stderr.stop();
            stderr.setEncoder(text);
            text.start();
            stderr.start();
        }

        assertThat(lines(captured)).singleElement().satisfies(line -> {
            assertThat(line.path("message").asText()).isEqualTo("created libcuda.so.1");
            assertThat(line.path("container_id").asText()).isEqualTo(CONTAINER.id());
        });
    }

    @Test
    void configureTextKeepsLogbackXml() {
        Encoder<ILoggingEvent> before = ((OutputStreamAppender<ILoggingEvent>)
                context.getLogger(Logger.ROOT_LOGGER_NAME).getAppender(LogSetup.APPENDER)).getEncoder();

        LogSetup.configure(LogFormat.TEXT, LogLevel.INFO);

        assertThat(((OutputStreamAppender<ILoggingEvent>) context.getLogger(Logger.ROOT_LOGGER_NAME)
                .getAppender(LogSetup.APPENDER)).getEncoder()).isSameAs(before);
    }

    @Test
    void textNamesTheContainerAndPodWhenKnown() {
        Encoder<ILoggingEvent> text = ((OutputStreamAppender<ILoggingEvent>)
                context.getLogger(Logger.ROOT_LOGGER_NAME).getAppender(LogSetup.APPENDER)).getEncoder();
        Logger logger = context.getLogger("io.driveralias.agent.repair.RootRepairer");

        String with;
        try (var ignored = Mdc.container(CONTAINER)) {
            with = new String(text.encode(event(logger, "conflict at libcuda.so.1")), StandardCharsets.UTF_8);
        }
        String without = new String(text.encode(event(logger, "reconcile finished")), StandardCharsets.UTF_8);

        assertThat(with).contains("WARN").endsWith(" container=3f2a9c1b7d4e pod=ml/train-0 - conflict at libcuda.so.1\n");
        assertThat(without).doesNotContain("container=", "pod=").endsWith("RootRepairer - reconcile finished\n");
    }

    @Test
    void theLogLevelSetsTheAgentsThresholdAndLeavesTheLibrariesAtWarn() {
        Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
        Level before = root.getLevel();
        try {
            LogSetup.configure(LogFormat.TEXT, LogLevel.DEBUG);
            assertThat(context.getLogger("io.driveralias.agent.live.Agent").isDebugEnabled()).isTrue();
            assertThat(context.getLogger("com.github.dockerjava.Something").getEffectiveLevel()).isEqualTo(Level.WARN);

            LogSetup.configure(LogFormat.TEXT, LogLevel.ERROR);
            assertThat(context.getLogger("io.driveralias.agent.live.Agent").isWarnEnabled()).isFalse();
            assertThat(context.getLogger("io.driveralias.agent.live.Agent").isErrorEnabled()).isTrue();
        } finally {
            root.setLevel(before);
        }
    }

    @Test
    void chattyLibrariesSayOnlyWarnings() {
        for (String name : List.of("com.github.dockerjava", "org.apache.hc", "org.apache.http", "io.fabric8", "okhttp3", "com.sun.jna")) {
            assertThat(context.getLogger(name + ".Something").getEffectiveLevel()).as(name).isEqualTo(Level.WARN);
        }
        assertThat(context.getLogger("io.driveralias.agent.Main").getEffectiveLevel()).isEqualTo(Level.INFO);
    }

    @Test
    void mdcScopesNestAndClear() {
        ContainerRef plain = new ContainerRef("abc", "/plain", "img", Optional.empty());
        try (var outer = Mdc.container(CONTAINER)) {
            try (var inner = Mdc.container(plain)) {
                assertThat(MDC.get(Mdc.CONTAINER_ID)).isEqualTo("abc");
                assertThat(MDC.get(Mdc.POD)).isNull();
            }
            assertThat(MDC.get(Mdc.CONTAINER_ID)).isEqualTo(CONTAINER.id());
            assertThat(MDC.get(Mdc.POD)).isEqualTo("ml/train-0");
        }
        assertThat(MDC.get(Mdc.CONTAINER_ID)).isNull();
        assertThat(MDC.get(Mdc.POD)).isNull();
    }

    private Logger privateLogger(ByteArrayOutputStream out, Encoder<ILoggingEvent> encoder) {
        OutputStreamAppender<ILoggingEvent> appender = new OutputStreamAppender<>();
        appender.setContext(context);
        appender.setEncoder(encoder);
        appender.setOutputStream(out);
        appender.start();
        Logger logger = context.getLogger("test." + getClass().getSimpleName() + "." + System.nanoTime());
        logger.setAdditive(false);
        logger.setLevel(Level.INFO);
        logger.addAppender(appender);
        return logger;
    }

    private static LoggingEvent event(Logger logger, String message) {
        LoggingEvent event = new LoggingEvent(Logger.FQCN, logger, Level.WARN, message, null, null);
        event.getMDCPropertyMap();
        return event;
    }

    private List<JsonNode> lines(ByteArrayOutputStream out) throws IOException {
        List<JsonNode> lines = new ArrayList<>();
        for (String line : out.toString(StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty()) {
                JsonNode node = json.readTree(line);
                assertThat(node.isObject()).as(line).isTrue();
                lines.add(node);
            }
        }
        return lines;
    }
}

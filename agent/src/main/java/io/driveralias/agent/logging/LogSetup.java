package io.driveralias.agent.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.Context;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import co.elastic.logging.logback.EcsEncoder;
import io.driveralias.agent.config.AgentConfig.LogFormat;
import io.driveralias.agent.config.AgentConfig.LogLevel;
import io.driveralias.agent.config.BuildVersion;
import org.slf4j.LoggerFactory;

/**
 * Applies {@code --log-format} and {@code --log-level}. {@code logback.xml} writes text to stderr through the
 * appender {@value #APPENDER}; {@code json} gives that appender a JSON encoder instead: one
 * object per line in the Elastic Common Schema, which log pipelines (Filebeat, Fluent Bit,
 * Vector, Loki, ...) read without configuration: {@code @timestamp} (ISO-8601, UTC),
 * {@code log.level}, {@code message}, {@code log.logger}, {@code process.thread.name},
 * {@code service.name} and {@code service.version}, the MDC's {@code container_id} and
 * {@code pod} as keys of their own, and an exception as {@code error.type},
 * {@code error.message} and {@code error.stack_trace}.
 *
 * <p>A logback configuration of one's own ({@code -Dlogback.configurationFile}) without that
 * appender is left as it is.
 */
public final class LogSetup {

    static final String APPENDER = "STDERR";

    private LogSetup() {
    }

    /** Call once at startup, before threads log. */
    public static void configure(LogFormat format, LogLevel level) {
        if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
            return;
        }
        // The root's level: the agent's own loggers follow it; the chatty libraries keep the
        // WARN that logback.xml gives them, so debug shows the agent's decisions, not HTTP.
        context.getLogger(Logger.ROOT_LOGGER_NAME).setLevel(Level.toLevel(level.name(), Level.INFO));
        if (format != LogFormat.JSON) {
            return;
        }
        Appender<ILoggingEvent> appender = context.getLogger(Logger.ROOT_LOGGER_NAME).getAppender(APPENDER);
        if (appender instanceof OutputStreamAppender<ILoggingEvent> stream) {
            stream.stop();
            stream.setEncoder(jsonEncoder(context));
            stream.start();
        }
    }

    /** The encoder {@code json} uses, started. */
    static Encoder<ILoggingEvent> jsonEncoder(Context context) {
        EcsEncoder encoder = new EcsEncoder();
        encoder.setContext(context);
        encoder.setServiceName("driver-alias-agent");
        encoder.setServiceVersion(BuildVersion.get());
        // The caller's file and line would cost a stack walk per line; the logger names the class.
        encoder.setIncludeOrigin(false);
        encoder.setIncludeMarkers(false);
        encoder.setStackTraceAsArray(false);
        encoder.start();
        return encoder;
    }
}

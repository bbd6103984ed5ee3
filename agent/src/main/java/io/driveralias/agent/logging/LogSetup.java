package io.driveralias.agent.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.Context;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import io.driveralias.agent.config.AgentConfig.LogFormat;
import io.driveralias.agent.config.AgentConfig.LogLevel;
import org.slf4j.LoggerFactory;

/**
 * Applies {@code --log-format} and {@code --log-level}. {@code logback.xml} writes text to stderr through the
 * appender {@value #APPENDER}; {@code json} gives that appender a JSON encoder instead: one
 * object per line with the time, level, thread, logger, MDC ({@code container_id},
 * {@code pod}), the formatted message and the exception.
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
        JsonEncoder encoder = new JsonEncoder();
        encoder.setContext(context);
        encoder.setWithSequenceNumber(false);
        encoder.setWithNanoseconds(false);
        encoder.setWithContext(false);
        // The message as people read it, not the template and its arguments apart.
        encoder.setWithMessage(false);
        encoder.setWithArguments(false);
        encoder.setWithFormattedMessage(true);
        encoder.start();
        return encoder;
    }
}

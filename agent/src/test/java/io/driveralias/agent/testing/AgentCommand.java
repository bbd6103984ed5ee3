package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code driver-alias-agent run} as {@link AgentProcess#start(DockerHarness, String...)} starts it,
 * with some of the agent's loggers at DEBUG (through logback's own configuration property), for
 * tests that assert what the agent says only at DEBUG.
 */
public final class AgentCommand {

    private AgentCommand() {
    }

    public static AgentProcess startWithDebug(DockerHarness docker, List<String> debugLoggers, String... extraArgs) {
        return start(List.of(), docker, debugLoggers, extraArgs);
    }

    /** The same, in the JVM the agent ships with ({@link ShippedJvm}: its options, the pod's memory limit). */
    public static AgentProcess startShippedWithDebug(DockerHarness docker, List<String> debugLoggers, String... extraArgs) {
        return start(ShippedJvm.commandLineOptions(), docker, debugLoggers, extraArgs);
    }

    private static AgentProcess start(List<String> jvmOptions, DockerHarness docker, List<String> debugLoggers,
                                      String... extraArgs) {
        int port = AgentProcess.freePort();
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java()));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-Dlogback.configurationFile=" + debugConfig(debugLoggers), "-jar", AgentProcess.jar().toString(),
                "run", "--listen", "127.0.0.1:" + port, "--resync-interval", "5s", "--docker-host", docker.host()));
        cmd.addAll(TestImages.hostLibraryArguments());
        cmd.addAll(List.of(extraArgs));
        return AgentProcess.start(cmd, port);
    }

    /** The packaged logback.xml's format, at INFO, with {@code loggers} at DEBUG. */
    private static Path debugConfig(List<String> loggers) {
        StringBuilder xml = new StringBuilder("""
                <configuration>
                  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
                    <target>System.err</target>
                    <encoder><pattern>%d %-5level [%thread] %logger{30} container=%X{container_id} pod=%X{pod} - %msg%n</pattern></encoder>
                  </appender>
                """);
        for (String logger : loggers) {
            xml.append("  <logger name=\"").append(logger).append("\" level=\"DEBUG\"/>\n");
        }
        xml.append("  <root level=\"INFO\"><appender-ref ref=\"STDERR\"/></root>\n</configuration>\n");
        try {
            Path file = Files.createTempFile("daa-logback-", ".xml");
            file.toFile().deleteOnExit();
            Files.writeString(file, xml);
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

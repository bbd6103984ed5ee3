package io.driveralias.agent.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import java.io.IOException;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The packaged jar (what the image ships) speaks to containerd through the agent's own client:
 * grpc-java, its shaded netty with its native transport, and Guava are the tests' alone (the CRI
 * client), never the agent's.
 */
class AgentJarContentsIT {

    @Test
    void theTestsGrpcJavaAndNettyAreNotInTheAgentsJar() throws IOException {
        try (JarFile jar = new JarFile(AgentProcess.jar().toFile())) {
            List<String> foreign = jar.stream().map(JarEntry::getName)
                    .filter(n -> n.startsWith("io/grpc/") || n.startsWith("io/netty/") || n.startsWith("com/google/common/")
                            || n.startsWith("META-INF/native/"))
                    .limit(5).toList();
            assertThat(foreign).as("grpc-java, netty or Guava in the agent's jar").isEmpty();
            assertThat(jar.getEntry("io/driveralias/agent/grpc/GrpcClient.class")).isNotNull();
            assertThat(jar.getEntry("com/google/protobuf/CodedInputStream.class")).as("protobuf, for the messages").isNotNull();
        }
    }
}

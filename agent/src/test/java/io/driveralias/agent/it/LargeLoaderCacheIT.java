package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.ldcache.BigCaches;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.ShippedJvm;
import io.driveralias.agent.testing.TestImages;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Images that ship a large, valid loader cache, against the agent with the JVM options it ships
 * with (32 MiB heap, exit on OutOfMemoryError). It used to read the whole cache and copy it
 * twice over: one image with a 4 MB cache, or three GPU containers with 2 MB ones started
 * together, killed it, and it died again at every restart while they ran.
 */
@Timeout(600)
class LargeLoaderCacheIT {

    @Test
    void threeGpuContainersWith4MbCachesStartedTogetherAreRepairedAndTheAgentStaysUp() throws Exception {
        DockerHarness docker = DockerHarness.get();
        String image = TestImages.image(docker, "cache-4mb", DEBIAN_LIB, root -> {
            BigCaches.addLibraries(root, 4_000_000, 180);
            assertThat(Files.size(root.resolve("etc/ld.so.cache"))).isBetween(3_500_000L, 4_500_000L);
        });
        int port = AgentProcess.freePort();
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java()));
        cmd.addAll(ShippedJvm.commandLineOptions());
        cmd.addAll(List.of("-jar", AgentProcess.jar().toString(), "run", "--listen", "127.0.0.1:" + port,
                "--resync-interval", "5s", "--docker-host", docker.host(), "--ldconfig", "cache"));
        try (AgentProcess agent = AgentProcess.start(cmd, port); GpuContainers containers = new GpuContainers(docker)) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            List<String> ids = List.of(containers.start(image, DEBIAN_LIB), containers.start(image, DEBIAN_LIB),
                    containers.start(image, DEBIAN_LIB));

            for (String id : ids) {
                containers.awaitNvidiaSmi(id);
                AgentProcess.awaitTrue("ld.so.cache lists libcuda.so.1 in " + id, Duration.ofSeconds(30),
                        () -> containers.exec(id, "sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '").exitCode() == 0);
            }
            assertThat(agent.isAlive()).as(agent.log()).isTrue();
            assertThat(agent.log()).doesNotContain("OutOfMemoryError");
            assertThat(containers.exec(ids.getFirst(), "sh", "-c", "ldconfig -p | wc -l").output().trim())
                    .as("the image's own entries are all still there").matches("\\d{5,}");
        }
    }
}

package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.ldcache.BigCaches;
import io.driveralias.agent.ldcache.LdCacheFormatException;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.ShippedJvm;
import io.driveralias.agent.testing.TestImages;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Images that ship a large, valid loader cache, against the agent with the JVM options it ships
 * with (32 MiB heap, exit on OutOfMemoryError). It used to read the whole cache and copy it
 * twice over: one image with a 4 MB cache, or three GPU containers with 2 MB ones started
 * together, killed it, and it died again at every restart while they ran.
 */
@Timeout(600)
@ResourceLock(SharedEngines.DOCKER)
class LargeLoaderCacheIT {

    @Test
    void threeGpuContainersWith4MbCachesStartedTogetherAreRepairedAndTheAgentStaysUp() throws Exception {
        DockerHarness docker = DockerHarness.get();
        // 65,000 entries (glibc's ldconfig -p reads it): many small entries are what the old
        // whole-file codec paid for in objects.
        long[] imageEntries = new long[1];
        String image = TestImages.image(docker, "cache-4mb", DEBIAN_LIB, root -> {
            // A file named like the driver's too: without a GPU request, this image is none of the agent's business.
            TestImages.compileLibrary(root.resolve("usr/lib/x86_64-linux-gnu"), "libcuda.so." + TestImages.VERSION,
                    "libcuda.so.1", "int image_own(void) { return 0; }\n");
            try {
                Path cache = Files.write(root.resolve("etc/ld.so.cache"), BigCaches.manyEntries(4_000_000));
                imageEntries[0] = Processes.check(List.of("ldconfig", "-p", "-C", cache.toString())).lines()
                        .filter(l -> l.contains(" => /opt/q/")).count();
            } catch (LdCacheFormatException e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(imageEntries[0]).isGreaterThan(60_000);
        int port = AgentProcess.freePort();
        List<String> cmd = new ArrayList<>(List.of(AgentProcess.java()));
        cmd.addAll(ShippedJvm.commandLineOptions());
        cmd.addAll(List.of("-jar", AgentProcess.jar().toString(), "run", "--listen", "127.0.0.1:" + port,
                "--resync-interval", "5s", "--docker-host", docker.host(), "--ldconfig", "cache"));
        cmd.addAll(TestImages.hostLibraryArguments());
        try (AgentProcess agent = AgentProcess.start(cmd, port); GpuContainers containers = new GpuContainers(docker)) {
            agent.awaitLog("first reconcile", Duration.ofSeconds(30));
            List<String> ids;
            try (ExecutorService together = Executors.newFixedThreadPool(3)) {
                List<Future<String>> starts = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    starts.add(together.submit(() -> containers.start(image, DEBIAN_LIB)));
                }
                ids = new ArrayList<>();
                for (Future<String> start : starts) {
                    ids.add(start.get());
                }
            }

            try {
                for (String id : ids) {
                    containers.awaitNvidiaSmi(id);
                    AgentProcess.awaitTrue("ld.so.cache lists libcuda.so.1 in " + id, Duration.ofSeconds(30),
                            () -> containers.exec(id, "sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '").exitCode() == 0);
                }
            } catch (AssertionError e) {
                List<String> log = agent.log().lines().toList();
                throw new AssertionError(e.getMessage() + "; the agent is " + (agent.isAlive() ? "up" : "gone") + ", its log ends:\n"
                        + String.join("\n", log.subList(Math.max(0, log.size() - 15), log.size())), e);
            }
            // The same image with no GPU request at all, three more at once: never opened.
            List<String> plain = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                String id = containers.run(image, null, List.of("sleep", "600"));
                plain.add(id);
            }
            // The agent still repairs the others.
            String next = containers.start(image, DEBIAN_LIB);
            containers.awaitNvidiaSmi(next);
            for (String id : plain) {
                assertThat(containers.readlink(id, DEBIAN_LIB + "/libcuda.so.1")).as("no GPU request: nothing written").isEmpty();
            }
            assertThat(agent.isAlive()).as(agent.log()).isTrue();
            assertThat(agent.log()).doesNotContain("OutOfMemoryError");
            for (String id : ids) {
                assertThat(containers.exec(id, "sh", "-c", "ldconfig -p | grep -c ' => /opt/q/'").output().trim())
                        .as("the image's own entries are all still there").isEqualTo(String.valueOf(imageEntries[0]));
            }
        }
    }
}

package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.docker.DockerApi;
import io.driveralias.agent.docker.DockerException;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Refreshes a container's {@code ld.so.cache} after links were made, so that
 * {@code ldconfig -p | grep libcuda.so.1} (NVIDIA's entrypoint check) finds them. It runs the
 * container's OWN ldconfig through {@code docker exec}, as the container's root, inside the
 * container's sandbox: never a binary from the image with the agent's privileges. {@code -X}
 * rebuilds the cache without touching the image's other links. Runs on its own thread so a
 * slow exec never holds up the next repair; a missing ldconfig is a warning, not a failure.
 */
public final class LdconfigRunner implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LdconfigRunner.class);
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    private final DockerApi docker;
    private final ThreadPoolExecutor executor;

    public LdconfigRunner(DockerApi docker) {
        this.docker = docker;
        this.executor = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new ArrayBlockingQueue<>(256),
                r -> {
                    Thread t = new Thread(r, "ldconfig");
                    t.setDaemon(true);
                    return t;
                }, new ThreadPoolExecutor.DiscardPolicy());
    }

    public void refreshLater(ContainerRef container) {
        executor.execute(() -> refresh(container));
    }

    /** Returns true if the cache was rebuilt. */
    public boolean refresh(ContainerRef container) {
        try {
            DockerApi.ExecResult result = docker.exec(container.id(), "0", TIMEOUT, "ldconfig", "-X");
            if (result.exitCode() == 0) {
                return true;
            }
            LOG.warn("ldconfig in container {} ({}) did not refresh ld.so.cache (exit {}): {}",
                    container.shortId(), container.displayName(), result.exitCode(), result.output());
        } catch (DockerException e) {
            String message = String.valueOf(e.getMessage());
            if (message.contains("executable file not found") || message.contains("no such file")) {
                LOG.warn("container {} ({}) has no ldconfig: links are in place, ld.so.cache not refreshed",
                        container.shortId(), container.displayName());
            } else {
                LOG.warn("ldconfig in container {} ({}) failed: {}", container.shortId(), container.displayName(), message);
            }
        }
        return false;
    }

    @Override
    public void close() {
        executor.shutdown();
        try {
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerRef;
import io.driveralias.agent.docker.DockerApi;
import io.driveralias.agent.docker.DockerException;
import java.time.Duration;
import java.util.Optional;
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
    private static final Duration POLL = Duration.ofMillis(25);

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
            String exec = docker.execDetached(container.id(), "0", "ldconfig", "-X");
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            Optional<Integer> exit;
            // ldconfig takes some milliseconds; a few cheap polls instead of an attached stream.
            while ((exit = docker.execExitCode(exec)).isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(POLL.toMillis());
            }
            if (exit.isPresent() && exit.get() == 0) {
                return true;
            }
            if (exit.isPresent() && (exit.get() == 126 || exit.get() == 127)) {
                warnNoLdconfig(container);
            } else {
                LOG.warn("ldconfig in container {} ({}) did not refresh ld.so.cache ({})", container.shortId(),
                        container.displayName(), exit.map(c -> "exit " + c).orElse("still running after " + TIMEOUT));
            }
        } catch (DockerException.NotFoundInContainer e) {
            warnNoLdconfig(container);
        } catch (DockerException e) {
            LOG.warn("ldconfig in container {} ({}) failed: {}", container.shortId(), container.displayName(),
                    e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    private static void warnNoLdconfig(ContainerRef container) {
        LOG.warn("container {} ({}) has no ldconfig: links are in place, ld.so.cache not refreshed",
                container.shortId(), container.displayName());
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

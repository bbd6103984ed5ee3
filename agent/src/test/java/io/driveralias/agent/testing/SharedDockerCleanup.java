package io.driveralias.agent.testing;

import java.util.List;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * After each IT class, the shared Docker engine is emptied and what a class left behind is
 * named: a leak stays visible, and never slows the classes after it (each container running
 * at a later daemon restart added seconds to it). Registered for the ITs by the failsafe
 * configuration (JUnit's extension auto-detection).
 */
public final class SharedDockerCleanup implements AfterAllCallback {

    @Override
    public void afterAll(ExtensionContext context) {
        List<String> left = DockerHarness.removeSharedLeftovers();
        if (!left.isEmpty()) {
            System.out.printf("[docker-harness] %s left %d containers in the shared engine; removed%n",
                    context.getRequiredTestClass().getSimpleName(), left.size());
        }
    }
}

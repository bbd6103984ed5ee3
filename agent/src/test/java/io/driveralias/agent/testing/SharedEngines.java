package io.driveralias.agent.testing;

import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.ClassDescriptor;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.ClassOrdererContext;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The engines the IT classes share (one Docker engine, one containerd per release), and the JUnit
 * locks that let the classes run two at a time (the failsafe configuration) without two of them
 * using one engine at once: a class that restarts, kills or empties an engine, or counts its
 * containers, would break another's. A class using a shared engine says so with
 * {@code @ResourceLock(SharedEngines.DOCKER)} or {@code @ResourceLock(SharedEngines.CONTAINERD)};
 * classes that start private engines need neither and run beside any other.
 *
 * <p>After each class (JUnit's extension auto-detection registers this), the shared Docker engine
 * is emptied and what the class left behind is named: a leak stays visible and never slows the
 * classes after it (each container running at a later daemon restart added seconds to it). A class
 * that used a shared engine without its lock fails here, so a missing annotation cannot go unseen.
 */
public final class SharedEngines implements AfterAllCallback {

    /** The lock of the shared Docker engine ({@link DockerHarness#get()}). */
    public static final String DOCKER = "driver-alias-agent.shared-docker";
    /** The lock of the shared containerd instances ({@link ContainerdHarness#of}). */
    public static final String CONTAINERD = "driver-alias-agent.shared-containerd";

    // A class runs on one thread, its @BeforeAll to its @AfterAll (methods run in the class's thread).
    private static final ThreadLocal<Set<String>> USED = ThreadLocal.withInitial(HashSet::new);

    /** Called by the harnesses when a shared engine is handed out. */
    static void used(String lock) {
        USED.get().add(lock);
    }

    /**
     * The order in which the IT classes are handed to the two threads: those holding both engines'
     * locks, then those holding one, then those holding none, by name within each. (A class that
     * runs alone, {@code @Isolated}, is not ordered here: JUnit holds it until every other class
     * has finished.) A class
     * that needs a lock held by the other thread waits, and the thread takes the next class it can
     * run; the classes without locks, last, fill what would otherwise be idle at the end. Measured:
     * the full ITs in 1,719 s when JUnit's default order left the containerd classes to the end,
     * one after another; a simulation of this order with the classes' measured times, on JUnit's
     * executor: within 2 % of the best packing.
     */
    public static final class ClassOrder implements ClassOrderer {
        @Override
        public void orderClasses(ClassOrdererContext context) {
            context.getClassDescriptors().sort(Comparator
                    .comparingInt((ClassDescriptor d) -> -d.findRepeatableAnnotations(ResourceLock.class).size())
                    .thenComparing(d -> d.getTestClass().getName()));
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        Class<?> testClass = context.getRequiredTestClass();
        Set<String> used = new TreeSet<>(USED.get());
        USED.remove();
        Set<String> held = new HashSet<>();
        for (ResourceLock lock : AnnotationSupport.findRepeatableAnnotations(testClass, ResourceLock.class)) {
            held.add(lock.value());
        }
        if (held.contains(DOCKER)) {
            List<String> left = DockerHarness.removeSharedLeftovers();
            if (!left.isEmpty()) {
                System.out.printf("[docker-harness] %s left %d containers in the shared engine; removed%n",
                        testClass.getSimpleName(), left.size());
            }
        }
        used.removeAll(held);
        if (!used.isEmpty()) {
            throw new AssertionError(testClass.getSimpleName() + " used a shared engine without its lock: add "
                    + used.stream().map(l -> "@ResourceLock(SharedEngines." + (l.equals(DOCKER) ? "DOCKER" : "CONTAINERD") + ")")
                            .toList()
                    + "; the ITs run two classes at a time, and another could restart or empty the engine meanwhile");
        }
    }
}

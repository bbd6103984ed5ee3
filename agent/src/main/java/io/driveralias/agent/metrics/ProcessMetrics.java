package io.driveralias.agent.metrics;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmInfoMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.logging.LogbackMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.core.instrument.config.MeterFilter;
import java.lang.management.ManagementFactory;
import java.util.Set;

/**
 * The JVM and process meters the agent exposes next to its own: memory, GC, threads,
 * class loading, CPU, uptime, file descriptors and log events per level.
 *
 * <p>Two of Micrometer's processor meters fail {@code promtool check metrics}:
 * {@code process_cpu_time_ns_total} (an abbreviated unit) and {@code system_cpu_count} (a
 * gauge ending in {@code _count}). They are left out, and the process CPU time is exposed
 * under the name every Prometheus client uses, {@code process_cpu_seconds_total}.
 */
final class ProcessMetrics implements AutoCloseable {

    private static final Set<String> REJECTED = Set.of("process.cpu.time", "system.cpu.count");

    private final JvmGcMetrics gc;
    private final LogbackMetrics logback;

    private ProcessMetrics(JvmGcMetrics gc, LogbackMetrics logback) {
        this.gc = gc;
        this.logback = logback;
    }

    /** Binds everything to {@code registry}; {@link #close()} detaches the listeners again. */
    static ProcessMetrics bindTo(MeterRegistry registry) {
        registry.config().meterFilter(MeterFilter.deny(id -> REJECTED.contains(id.getName())));
        new JvmInfoMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        bindProcessCpuSeconds(registry);
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        LogbackMetrics logback = new LogbackMetrics();
        logback.bindTo(registry);
        return new ProcessMetrics(gc, logback);
    }

    private static void bindProcessCpuSeconds(MeterRegistry registry) {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                && os.getProcessCpuTime() >= 0) {
            FunctionCounter.builder("process.cpu.seconds", os, o -> o.getProcessCpuTime() / 1e9)
                    .description("CPU time used by the agent's process, user and system")
                    .register(registry);
        }
    }

    @Override
    public void close() {
        gc.close();
        logback.close();
    }
}

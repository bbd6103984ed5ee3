package io.driveralias.agent.live;

import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.DriverLoad;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.loader.LoaderView;
import io.driveralias.agent.repair.HostDriverFiles;
import io.driveralias.agent.repair.RepairReport;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The loader's view of a GPU container ({@link LoaderView}), taken once its examination is over:
 * what its reporter (after the runtime was answered: nothing of it runs inside NRI's hold) or
 * {@code check} asks of an {@link Examination}. The container is opened again, as its examination
 * opened it, and read only. Not taken where the repair found none of the node's files in it (on a
 * host without them, every library would look like an image's own, and the missing driver is the news).
 */
public final class DriverLooks {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DriverLooks.class);

    /** One container's look, to be taken later; it holds nothing open meanwhile. */
    @FunctionalInterface
    public interface Look {
        Optional<DriverLoad> take();

        Look NONE = Optional::empty;
    }

    /** Looks at nothing: one-shot roots and tests that are not about the loader. */
    public static final DriverLooks OFF = new DriverLooks(null, (LoaderView) null, Optional::empty);

    private final ContainerRoots roots;
    private final LoaderView view;
    private final Supplier<Optional<String>> reference;

    /** @param reference the version the node's driver must have: its kernel module's (else the host's files') */
    public DriverLooks(ContainerRoots roots, HostDriverFiles hostFiles, Supplier<Optional<String>> reference) {
        this(roots, new LoaderView(hostFiles), reference);
    }

    private DriverLooks(ContainerRoots roots, LoaderView view, Supplier<Optional<String>> reference) {
        this.roots = roots;
        this.view = view;
        this.reference = reference;
    }

    /** The look at a container whose examination opened it and made {@code report}. */
    Look of(ContainerInfo info, RepairReport report, OpenedContainer.Liveness liveness) {
        if (view == null || report.driverFiles().isEmpty()) {
            // Without the node's files the repair found in this root, which file is the node's is a
            // guess (the host's files of another version than the one repaired with are not known):
            // no verdict rather than a false alarm.
            return Look.NONE;
        }
        return () -> take(info, report, liveness);
    }

    private Optional<DriverLoad> take(ContainerInfo info, RepairReport report, OpenedContainer.Liveness liveness) {
        try (OpenedContainer container = roots.open(info, liveness)) {
            if (!ContainerRoots.VIA_PROCESS.equals(container.via())) {
                // The overlay's merged directory shows the runtime's bind mounts as empty placeholders,
                // not the files the loader opens: a look there would call the node's driver an image's copy.
                return Optional.empty();
            }
            DriverLoad load = view.look(container.root(), report.driverFiles(), reference.get());
            // A process that ended meanwhile (a crash loop, an instant exit) leaves nothing to say
            // about what it loads: its mounts may have gone before the look, leaving placeholders.
            container.requireMountsLive();
            return Optional.of(load);
        } catch (ErrnoException e) {
            // Gone, or not to be opened any more: nothing to say about what it loads.
            return Optional.empty();
        } catch (RuntimeException e) {
            // A bug met in a stranger's files must not end the report of its repair.
            LOG.warn("the loader of container {} could not be looked at: {}", Printable.of(info.id(), 64), e.toString());
            return Optional.empty();
        }
    }
}

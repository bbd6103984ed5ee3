package io.driveralias.agent.live;

import io.driveralias.agent.core.CgroupNames;
import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;
import io.driveralias.agent.fs.FileStat;
import io.driveralias.agent.fs.KernelFiles;
import io.driveralias.agent.fs.Libc;
import io.driveralias.agent.fs.OpenFlags;
import io.driveralias.agent.fs.PathResolver;
import io.driveralias.agent.fs.ProcessStartTime;
import io.driveralias.agent.fs.RootFs;
import io.driveralias.agent.mount.DriverMounts;
import io.driveralias.agent.mount.MountEntry;
import io.driveralias.agent.mount.MountInfoException;
import io.driveralias.agent.mount.MountInfoParser;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a running container's root filesystem. First choice: {@code /proc/<pid>/root}, held
 * together with a pid handle, after checking that the process belongs to the container (its
 * cgroup names the container id) and reading the driver mounts from its mountinfo. Where
 * host PIDs are not visible, the overlay's merged directory its runtime reports.
 */
public final class ContainerRoots {

    /** {@link OpenedContainer#via} of a root reached through the container's own process (not its merged directory). */
    static final String VIA_PROCESS = "proc";

    private static final Logger LOG = LoggerFactory.getLogger(ContainerRoots.class);
    private static final int MAX_CGROUP = 64 * 1024;
    private static final int MAX_MOUNTINFO = 4 << 20;

    private final String hostProc;
    private final PathResolver resolver;
    private final ProcessStartTime startTime;
    private final Namespaces hostNamespaces;

    public ContainerRoots(String hostProc, PathResolver resolver) {
        this.hostProc = hostProc.endsWith("/") ? hostProc.substring(0, hostProc.length() - 1) : hostProc;
        this.resolver = resolver;
        this.startTime = new ProcessStartTime(this.hostProc, java.time.Clock.systemUTC());
        this.hostNamespaces = Namespaces.of(this.hostProc);
    }

    /** Where the host's processes are visible ({@code --host-proc}). */
    String hostProc() {
        return hostProc;
    }

    public PathResolver resolver() {
        return resolver;
    }

    /**
     * Throws ESRCH when the container is gone; other errno values for everything else.
     * {@code stillRunning} is asked after the work when no process handle could be held
     * (the merged-directory view), typically a fresh inspect.
     */
    public OpenedContainer open(ContainerInfo info, OpenedContainer.Liveness stillRunning) throws ErrnoException {
        if (!info.running() || info.pid() <= 0) {
            throw new ErrnoException("container", info.id() + " (not running)", Errno.ESRCH);
        }
        int procFd;
        try {
            procFd = Libc.openHost(hostProc + "/" + info.pid(), OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        } catch (ErrnoException e) {
            return openMerged(info, stillRunning);
        }
        int pidFd = -1;
        OpenedContainer opened;
        try {
            if (!belongsTo(procFd, info.pid(), info.id())) {
                // Not the container's process: the pid was reused after it exited, or this /proc
                // shows another PID namespace. The merged directory tells which.
                Libc.close(procFd);
                return openMerged(info, stillRunning);
            }
            pidFd = pidHandle(info.pid());
            List<MountEntry> mounts = mountTable(procFd);
            List<String> injected = mountPoints(DriverMounts.driverFiles(mounts));
            RootFs root = RootFs.adopt(openRoot(procFd, info.pid()), resolver);
            // From here the opened container owns (and closes) the three fds.
            opened = new OpenedContainer(root, VIA_PROCESS, injected, Map.of(), procFd, pidFd, null, startTime.of(info.pid()));
        } catch (ErrnoException e) {
            Libc.close(procFd);
            Libc.close(pidFd);
            throw e.is(Errno.ENOENT) ? new ErrnoException("container", info.id() + " (exited)", Errno.ESRCH) : e;
        }
        return aliveOrClosed(opened);
    }

    /** The container as opened, if its process still lives; else closed, and ESRCH. */
    private static OpenedContainer aliveOrClosed(OpenedContainer opened) throws ErrnoException {
        try {
            opened.requireAlive();
            return opened;
        } catch (ErrnoException e) {
            opened.close();
            throw e.is(Errno.ENOENT) ? new ErrnoException("container", "exited", Errno.ESRCH) : e;
        }
    }

    /**
     * {@code /proc/<pid>/root} of another process passes the kernel's ptrace access check:
     * refused, it is the agent's privileges that are missing, and the message says which.
     */
    private int openRoot(int procFd, int pid) throws ErrnoException {
        try {
            return Libc.openat(procFd, "root", OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        } catch (ErrnoException e) {
            if (e.is(Errno.EACCES) || e.is(Errno.EPERM)) {
                throw new ErrnoException("open", hostProc + "/" + pid
                        + "/root (the agent needs CAP_SYS_PTRACE and the host's PID namespace)", e.errno());
            }
            throw e;
        }
    }

    /** What this /proc says of a container's process. */
    public enum ProcessState { RUNNING, ENDED, NOT_VISIBLE }

    /**
     * ENDED for a zombie (exited, its runtime has not reaped it yet); NOT_VISIBLE when there is
     * no such process here: exited and reaped, or never visible (no host PID namespace), which
     * only Docker can tell apart. Docker may still call a container running for some
     * milliseconds after its process exited.
     */
    public ProcessState processState(int pid) {
        if (pid <= 0) {
            return ProcessState.NOT_VISIBLE;
        }
        int fd;
        try {
            fd = Libc.openHost(hostProc + "/" + pid, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
        } catch (ErrnoException e) {
            return ProcessState.NOT_VISIBLE;
        }
        try {
            String stat = new String(KernelFiles.read(fd, "stat", 4096), StandardCharsets.ISO_8859_1);
            return ProcessStartTime.hasEnded(stat) ? ProcessState.ENDED : ProcessState.RUNNING;
        } catch (ErrnoException e) {
            return ProcessState.NOT_VISIBLE;
        } finally {
            Libc.close(fd);
        }
    }

    /**
     * The process is the container's: its cgroup names the container by a whole path element
     * (cgroupfs, systemd and kubelet layouts: {@link CgroupNames}), and it is none of the processes
     * whose root is the host's or the agent's own, whatever the runtime said: not pid 1, not the
     * agent, not a process in the host's or the agent's mount namespace (every container has its own).
     */
    private boolean belongsTo(int procFd, int pid, String containerId) throws ErrnoException {
        if (pid == 1 || hostProc.equals("/proc") && pid == ProcessHandle.current().pid()) {
            return false;
        }
        String cgroup = new String(KernelFiles.read(procFd, "cgroup", MAX_CGROUP), StandardCharsets.ISO_8859_1);
        if (!CgroupNames.namesContainer(cgroup, containerId)) {
            return false;
        }
        Optional<Namespace> namespace = mountNamespace(procFd);
        return namespace.isEmpty() || !namespace.equals(hostNamespaces.host()) && !namespace.equals(hostNamespaces.own());
    }

    /** A namespace, as the kernel identifies it: its nsfs inode. */
    private record Namespace(long dev, long inode) {
    }

    /** The mount namespace a /proc/<pid> fd's process is in, if the kernel tells. */
    private static Optional<Namespace> mountNamespace(int procFd) {
        try {
            FileStat stat = Libc.statx(procFd, "ns/mnt", true);
            return Optional.of(new Namespace(stat.dev(), stat.inode()));
        } catch (ErrnoException e) {
            return Optional.empty();
        }
    }

    /** The host's mount namespace (its pid 1's) and the agent's own, read once. */
    private record Namespaces(Optional<Namespace> host, Optional<Namespace> own) {
        static Namespaces of(String hostProc) {
            return new Namespaces(read(hostProc + "/1"), read("/proc/self"));
        }

        private static Optional<Namespace> read(String procDir) {
            int fd;
            try {
                fd = Libc.openHost(procDir, OpenFlags.O_PATH | OpenFlags.O_DIRECTORY);
            } catch (ErrnoException e) {
                return Optional.empty();
            }
            try {
                return mountNamespace(fd);
            } finally {
                Libc.close(fd);
            }
        }
    }

    /** A pidfd where this process shares the host's PID namespace, else the /proc fd serves. */
    private int pidHandle(int pid) throws ErrnoException {
        if (!hostProc.equals("/proc")) {
            return -1;
        }
        try {
            return Libc.pidfdOpen(pid);
        } catch (ErrnoException e) {
            if (e.is(Errno.ENOSYS) || e.is(Errno.EPERM)) {
                return -1;
            }
            throw e.is(Errno.ESRCH) ? e : new ErrnoException("pidfd_open", String.valueOf(pid), e.errno());
        }
    }

    /**
     * The container's own mount table. One the agent will not read whole (over its size
     * bound) or cannot parse still leaves the library-directory scan: an empty table, logged.
     */
    private static List<MountEntry> mountTable(int procFd) throws ErrnoException {
        try {
            byte[] text = KernelFiles.read(procFd, "mountinfo", MAX_MOUNTINFO);
            return MountInfoParser.parse(new String(text, StandardCharsets.ISO_8859_1));
        } catch (MountInfoException e) {
            LOG.debug("mount table not used: {}", e.getMessage());
            return List.of();
        } catch (ErrnoException e) {
            if (e.is(Errno.EINVAL)) {
                // The kernel has no mount namespace for a process that has exited: gone, not unsafe.
                throw new ErrnoException("container", "exited (its mount table went with it)", Errno.ESRCH);
            }
            if (!e.is(Errno.EFBIG)) {
                throw e;
            }
            LOG.debug("mount table not used: {}", e.getMessage());
            return List.of();
        }
    }

    private static List<String> mountPoints(List<MountEntry> mounts) {
        return mounts.stream().map(MountEntry::mountPoint).distinct().toList();
    }

    /**
     * The overlay's merged directory, as the runtime reports it. Bind-mounted driver files show
     * there as empty placeholders, so their SONAMEs are read from the mount's host source.
     */
    private OpenedContainer openMerged(ContainerInfo info, OpenedContainer.Liveness stillRunning) throws ErrnoException {
        String merged = info.overlay().map(ContainerInfo.OverlayLayers::mergedDir).orElseThrow(() ->
                new ErrnoException("container", info.id() + " (no /proc/<pid> and no MergedDir)", Errno.ENOENT));
        RootFs root;
        try {
            root = RootFs.openHostDirectory(merged, resolver);
        } catch (ErrnoException e) {
            throw e.is(Errno.ENOENT) ? new ErrnoException("container", info.id() + " (exited)", Errno.ESRCH) : e;
        }
        Map<String, String> sources = new LinkedHashMap<>();
        for (ContainerInfo.Mount m : info.mounts()) {
            if ("bind".equals(m.type()) && FileNames.versionOf(FileNames.baseName(m.destination())).isPresent()) {
                sources.put(m.destination(), m.source());
            }
        }
        return aliveOrClosed(new OpenedContainer(root, "merged", List.copyOf(sources.keySet()), sources, -1, -1,
                stillRunning, Optional.empty()));
    }
}

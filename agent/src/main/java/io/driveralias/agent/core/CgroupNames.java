package io.driveralias.agent.core;

/**
 * Whether a process's {@code /proc/<pid>/cgroup} places it in a container's cgroup: some line's
 * path has an element that names the container id whole, as the runtimes and cgroup drivers lay
 * them out: {@code /docker/<id>}, {@code /k8s.io/<id>}, {@code /kubepods/besteffort/pod<uid>/<id>}
 * (cgroupfs), {@code docker-<id>.scope}, {@code cri-containerd-<id>.scope}, {@code crio-<id>.scope},
 * {@code libpod-<id>.scope} (systemd), {@code libpod-<id>}, {@code crio-<id>} (cgroupfs). A text
 * that merely contains the id is not enough: a short id ({@code init}, valid for {@code ctr})
 * would match the host's {@code /init.scope}.
 */
public final class CgroupNames {

    private static final String SCOPE = ".scope";

    private CgroupNames() {
    }

    /** Whether any line of {@code cgroupFile} ({@code hierarchy:controllers:path}) names {@code containerId} by a whole element. */
    public static boolean namesContainer(String cgroupFile, String containerId) {
        if (containerId.isEmpty()) {
            return false;
        }
        for (String line : cgroupFile.split("\n")) {
            int second = line.indexOf(':', line.indexOf(':') + 1);
            if (second < 0) {
                continue;
            }
            for (String element : line.substring(second + 1).split("/")) {
                if (namedBy(element, containerId)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** {@code <id>}, {@code <prefix>-<id>} or {@code <prefix>-<id>.scope}, a prefix being at least one character. */
    private static boolean namedBy(String element, String id) {
        if (element.equals(id)) {
            return true;
        }
        String name = element.endsWith(SCOPE) ? element.substring(0, element.length() - SCOPE.length()) : element;
        return name.length() > id.length() + 1 && name.endsWith(id) && name.charAt(name.length() - id.length() - 1) == '-';
    }
}

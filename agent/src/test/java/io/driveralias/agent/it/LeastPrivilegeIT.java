package io.driveralias.agent.it;

import static io.driveralias.agent.testing.TestImages.DEBIAN_LIB;
import static io.driveralias.agent.testing.TestImages.VERSION;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.driveralias.agent.testing.AgentImage;
import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.DaemonSetAgent;
import io.driveralias.agent.testing.DockerHarness;
import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.Processes;
import io.driveralias.agent.testing.SharedEngines;
import io.driveralias.agent.testing.TestImages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * The DaemonSet's privileges are enough, and each one is needed. The agent runs in a container
 * of the test dockerd, from its registry-less image ({@link AgentImage}), with exactly the
 * agent container's settings in {@code k8s/base/040-daemonset.yaml} ({@link DaemonSetAgent}:
 * capabilities, uid 0, no-new-privileges, read-only root, host PID namespace, seccomp, the
 * Docker socket and Docker's layer directory, a size-limited /tmp, the environment, the memory
 * limit), and repairs sibling containers through the socket. Then once without each added
 * capability: what breaks must break visibly, with a message naming the capability.
 *
 * <p>Where the test deviates from the manifest, and why:
 * <ul>
 * <li>{@code --network host} and {@code DRIVER_ALIAS_LISTEN=127.0.0.1:<free port>}: the test
 *     asks /readyz itself; the harness dockerd runs with {@code --bridge=none}, so a container
 *     has no network of its own to publish a port from.</li>
 * <li>{@code DRIVER_ALIAS_KUBERNETES=off}, {@code NODE_NAME} fixed: no API server, no token.</li>
 * <li>hostPaths: {@code /var/run/docker.sock} is the harness' socket, {@code /var/lib/docker} its
 *     data root (mounted at the harness' own path, as the manifest mounts the node's at the
 *     node's); the emptyDir is a tmpfs of the same size.</li>
 * <li>The stand-in driver directory, read-only at its own path, named by
 *     {@code DRIVER_ALIAS_HOST_LIB_DIR}. The agent finds the host's driver files through
 *     /proc/1/root; in this sandbox the host's pid 1 refuses that, so the agent falls back to its
 *     own root, where this mount makes them visible, as on a node. {@link Case#UNSEEN_SOURCES}
 *     gets copies the agent cannot see as the host's: a container mounting them is not a GPU
 *     container to the agent, and nothing is written into it.</li>
 * </ul>
 *
 * <p>The experiment (kernel 6.18, Docker 28.2, cgroup v1; one agent container per row, the
 * cases are at {@link Case}; "repaired": at start, through /proc/&lt;pid&gt;/root; BEFORE_START's
 * image directory is 1234:1234 mode 2755, and its first instruction prints that mode and the alias):
 * <pre>
 * without      | ROOT      | NON_ROOT  | FOREIGN_DIR | STICKY_DIR | BEFORE_START
 * -------------+-----------+-----------+-------------+------------+--------------------------------------------
 * (none)       | repaired  | repaired  | repaired    | repaired   | seeded: alias and 2755 at the first instruction
 * SYS_PTRACE   | refused P | refused P | refused P   | refused P  | seeded, then refused P at start
 * DAC_OVERRIDE | repaired  | repaired  | refused D   | repaired   | not seeded, refused D at start
 * CHOWN        | repaired  | repaired  | repaired    | repaired   | not seeded (fchownat: EPERM), repaired at start
 * FOWNER       | repaired  | repaired  | repaired    | refused F  | seeded: alias and 2755 at the first instruction
 * -------------+-----------+-----------+-------------+------------+--------------------------------------------
 * DAC_READ_SEARCH, in the manifest before this experiment: without it (and added back, see
 * droppedCapabilities...) nothing changes in any case; DAC_OVERRIDE grants every lookup and read
 * it would. FSETID was needed (setgid lost: 755) while the agent changed a new directory's owner
 * before its mode; it sets the mode first now, and FSETID changes nothing either. FOWNER was also
 * needed before start then (fchmod of another user's directory: EPERM).
 *
 * P: "container ID (NAME) is not repaired: permission: /: cannot open the container: open
 *    /proc/PID/root (the agent needs CAP_SYS_PTRACE and the host's PID namespace): EACCES (permission
 *    denied) after 5 ms"; before the message was improved: "... openat root: EACCES (permission denied)"
 * D: "... is not repaired: permission: /usr/lib/x86_64-linux-gnu: EACCES (permission denied): the
 *    directory's owner and mode refuse the agent; writing there needs CAP_DAC_OVERRIDE (libcuda.so.1,
 *    ...)"; before: one group per link, "symlinkat .libcuda.so.1.driver-alias-RANDOM: EACCES (...)"
 * F: "... is not repaired: permission: /usr/lib/x86_64-linux-gnu: EPERM (operation not permitted): in
 *    a sticky directory, replacing another user's link needs CAP_FOWNER (libcuda.so.1)"; before:
 *    "renameat2 libcuda.so.1: EPERM (permission denied)"
 * </pre>
 * The create-time path falls back to the start path on any error and says so at DEBUG only
 * ("container ID: not seeded before start: fchownat x86_64-linux-gnu: EPERM ..."): without
 * CHOWN such containers are still repaired, seconds later. That row is asserted on what can be
 * seen instead.
 */
@Timeout(900)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@ResourceLock(SharedEngines.DOCKER)
class LeastPrivilegeIT {

    static final String TARGET = "libcuda.so." + VERSION;
    static final String ALIAS = DEBIAN_LIB + "/libcuda.so.1";
    static final String FOREIGN_MODE = "2755";

    /** The sibling containers each agent container must deal with. */
    enum Case {
        /** Root, Docker's default capabilities (which the agent lacks): ptrace access needs SYS_PTRACE. */
        ROOT,
        /** {@code --user 1000:1000}: another uid, ptrace access needs SYS_PTRACE. */
        NON_ROOT,
        /** The image's library directory belongs to 1234:1234, mode 2755: root may not write there. */
        FOREIGN_DIR,
        /** Library directory 1234:1234 mode 1777 with a stale libcuda.so.1 of user 1234. */
        STICKY_DIR,
        /** {@code docker create} of FOREIGN_DIR's image, driver sources visible: repair before start. */
        BEFORE_START,
        /**
         * {@code docker create} with copies of the driver files the agent cannot see as the
         * host's, created after the others: left alone, never written (scenario A only).
         */
        UNSEEN_SOURCES,
        /**
         * {@code docker run} of FOREIGN_DIR's image, after the others: the aliases through its
         * overlay, mounted on the node after the agent's
         * container started, before its first instruction (scenario A only).
         */
        DOCKER_RUN
    }

    /**
     * What one case must show: the agent's line about it (a regex), whether the alias is right in
     * the end, and for a created container whether it was seeded and what its first instruction
     * saw (a regex). Null: does not apply (the start-path cases have no "before start").
     */
    record Expect(String line, boolean linked, Boolean seeded, String firstOutput) {
    }

    /** At start, or before it when `docker run` left the agent time to win the race (now and then). */
    static final String REPAIRED = "repaired container %s \\([^)]*\\)( before start)?: \\d+ link";
    static final String BEFORE_START_LINE = "repaired container %s \\([^)]*\\) before start: \\d+ link";
    static final String REFUSED = "container %s \\([^)]*\\) is not repaired: ";
    static final String NO_PTRACE = "permission: /: cannot open the container: open /proc/\\d+/root \\(the agent needs"
            + " CAP_SYS_PTRACE and the host's PID namespace\\): EACCES";
    static final String NO_DAC_OVERRIDE = "permission: " + DEBIAN_LIB + ": EACCES \\(permission denied\\): the"
            + " directory's owner and mode refuse the agent; writing there needs CAP_DAC_OVERRIDE";
    static final String NO_FOWNER = "permission: " + DEBIAN_LIB + ": EPERM \\(operation not permitted\\): in a sticky"
            + " directory, replacing another user's link needs CAP_FOWNER \\(libcuda.so.1\\)";

    static Expect repaired() {
        return new Expect(REPAIRED, true, null, null);
    }

    static Expect refused(String why) {
        return new Expect(REFUSED + why, false, null, null);
    }

    static Expect seeded(String mode) {
        return new Expect(BEFORE_START_LINE, true, true, firstOutput(mode, ""));
    }

    static Expect seededThenRefused(String why) {
        return new Expect(REFUSED + why, true, true, firstOutput(FOREIGN_MODE, ""));
    }

    /** Not seeded: the first instruction usually runs before the start path repairs, but may not. */
    static Expect notSeeded(String line, boolean linked) {
        return new Expect(line, linked, false, firstOutput(FOREIGN_MODE, "?"));
    }

    /** The directory's owner and mode, then the alias (optional with "?"), then "end". */
    static String firstOutput(String mode, String aliasQuantifier) {
        return "1234:1234 " + mode + "\n(" + Pattern.quote(TARGET) + "\n)" + aliasQuantifier + "end";
    }

    /** Scenario A: the manifest's capabilities. */
    static final Map<Case, Expect> ALL = cases(repaired(), repaired(), repaired(), repaired(), seeded(FOREIGN_MODE));

    /** Scenario B: the manifest's capabilities but one. Every row must differ from {@link #ALL}. */
    static final Map<String, Map<Case, Expect>> WITHOUT = Map.of(
            "SYS_PTRACE", cases(refused(NO_PTRACE), refused(NO_PTRACE), refused(NO_PTRACE), refused(NO_PTRACE),
                    seededThenRefused(NO_PTRACE)),
            "DAC_OVERRIDE", cases(repaired(), repaired(), refused(NO_DAC_OVERRIDE), repaired(),
                    notSeeded(REFUSED + NO_DAC_OVERRIDE, false)),
            "CHOWN", cases(repaired(), repaired(), repaired(), repaired(), notSeeded(REPAIRED, true)),
            "FOWNER", cases(repaired(), repaired(), repaired(), refused(NO_FOWNER), seeded(FOREIGN_MODE)));

    static Map<Case, Expect> cases(Expect root, Expect nonRoot, Expect foreign, Expect sticky, Expect beforeStart) {
        Map<Case, Expect> m = new EnumMap<>(Case.class);
        m.put(Case.ROOT, root);
        m.put(Case.NON_ROOT, nonRoot);
        m.put(Case.FOREIGN_DIR, foreign);
        m.put(Case.STICKY_DIR, sticky);
        m.put(Case.BEFORE_START, beforeStart);
        return m;
    }

    static DockerHarness docker;
    static DaemonSetAgent manifest;
    static String agentImage;
    static String plainImage;
    static String foreignImage;
    static String stickyImage;
    static Path seenDriver;
    static Path unseenDriver;
    static Path unseenRoot;
    static UnaryOperator<String> hostPaths;
    static UnaryOperator<String> mountPaths;
    static final Map<String, String> RESULTS = new LinkedHashMap<>();
    static final Map<String, String> RUN_COMMANDS = new LinkedHashMap<>();
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    @BeforeAll
    static void setUp() throws IOException {
        docker = DockerHarness.get();
        assumeTrue(docker.host().startsWith("unix://"), "the agent container needs the engine's socket");
        manifest = DaemonSetAgent.load();
        hostPaths = DaemonSetAgent.hostPathsOf(docker);
        // The agent follows the layer paths Docker reports: they must be where the harness has them.
        mountPaths = DaemonSetAgent.mountPathsOf(docker);
        agentImage = AgentImage.get(docker);
        plainImage = TestImages.image(docker, "debian-layout", DEBIAN_LIB, root -> { });
        foreignImage = TestImages.image(docker, "lp-foreign-dir", DEBIAN_LIB, root -> {
            Path lib = root.resolve(DEBIAN_LIB.substring(1));
            Processes.check(List.of("chown", "1234:1234", lib.toString()));
            Processes.check(List.of("chmod", FOREIGN_MODE, lib.toString()));
        });
        stickyImage = TestImages.image(docker, "lp-sticky-dir", DEBIAN_LIB, root -> {
            Path lib = root.resolve(DEBIAN_LIB.substring(1));
            Files.createSymbolicLink(lib.resolve("libcuda.so.1"), Path.of("libcuda.so.470.57.02"));
            Processes.check(List.of("chown", "-h", "1234:1234", lib.resolve("libcuda.so.1").toString()));
            Processes.check(List.of("chown", "1234:1234", lib.toString()));
            Processes.check(List.of("chmod", "1777", lib.toString()));
        });
        seenDriver = TestImages.driverDir();
        // A host library directory, as the driver's are: the agent learns SONAMEs only from binds
        // out of such directories (lib, lib64, a multiarch triplet), never from an arbitrary path.
        unseenRoot = Files.createTempDirectory("daa-lp-driver-");
        unseenDriver = Files.createDirectories(unseenRoot.resolve("usr/lib/x86_64-linux-gnu"));
        for (String file : TestImages.DRIVER.keySet()) {
            NativeLibraries.copy(seenDriver.resolve(file), unseenDriver, file);
        }
    }

    @AfterAll
    static void report() {
        if (unseenRoot != null) {
            Processes.run(List.of("rm", "-rf", unseenRoot.toString()));
        }
        StringBuilder table = new StringBuilder("LeastPrivilegeIT: what each agent container did\n");
        RESULTS.forEach((run, result) -> table.append(String.format("%-18s %s%n", run, result)));
        table.append("docker ").append(RUN_COMMANDS.getOrDefault("manifest", "(not run)")).append('\n');
        System.out.println(table);
    }

    @Test
    @Order(1)
    void withTheManifestsPrivilegesTheAgentIsReadyRepairsEveryCaseAndStopsCleanly() {
        Map<Case, Expect> expected = new EnumMap<>(ALL);
        // Copies the agent cannot see as the host's: not the driver, nothing written, before or after the start.
        expected.put(Case.UNSEEN_SOURCES, new Expect(null, false, false, firstOutput(FOREIGN_MODE, "{0}")));
        // Through the overlay Docker mounts on the node just before runc runs the process: the link is
        // there at the first instruction. The agent says "before start" only where it can prove it; on
        // Docker 20.10 without Docker's containerd it cannot always tell the process's start (once in
        // CI the container found its link and the agent's line said 22 ms after the start).
        expected.put(Case.DOCKER_RUN, new Expect(REPAIRED, true, null, firstOutput(FOREIGN_MODE, "")));
        trial("(none)", Set.of(), expected, true);
    }

    @TestFactory
    @Order(2)
    Stream<DynamicTest> withoutEachCapabilitySomethingBreaksAndSaysWhy() {
        List<String> added = manifest.addedCapabilities();
        assertThat(added).as("the manifest's capabilities are those whose experiment is recorded in WITHOUT"
                + " (a new one: run it, record what breaks without it)").containsExactlyInAnyOrderElementsOf(WITHOUT.keySet());
        for (Map.Entry<String, Map<Case, Expect>> row : WITHOUT.entrySet()) {
            assertThat(row.getValue()).as("without %s something must differ, or it is not needed", row.getKey())
                    .isNotEqualTo(ALL);
        }
        return added.stream().map(capability -> DynamicTest.dynamicTest("without " + capability,
                () -> trial("-" + capability, Set.of(capability), WITHOUT.get(capability), false)));
    }

    @Test
    @Order(3)
    void droppedCapabilitiesChangeNothingWhenAddedBack() {
        for (String dropped : List.of("DAC_READ_SEARCH", "FSETID")) {
            assertThat(manifest.addedCapabilities()).doesNotContain(dropped);
            trial("+" + dropped, Set.of(), Set.of(dropped), ALL, false);
        }
    }

    /** One agent container, every case against it, then everything removed. */
    private static void trial(String label, Set<String> without, Map<Case, Expect> expected, boolean stopCleanly) {
        trial(label, without, Set.of(), expected, stopCleanly);
    }

    private static void trial(String label, Set<String> without, Set<String> extra, Map<Case, Expect> expected,
                              boolean stopCleanly) {
        try (GpuContainers containers = new GpuContainers(docker)) {
            // The running cases are started before the agent: its first reconcile finds them, so
            // they are repaired through their own process (the start path), which is what these
            // capabilities are about; the early path has cases of its own below.
            Map<Case, String> ids = new EnumMap<>(Case.class);
            ids.put(Case.ROOT, run(containers, plainImage));
            ids.put(Case.NON_ROOT, run(containers, plainImage, "--user", "1000:1000"));
            ids.put(Case.FOREIGN_DIR, run(containers, foreignImage));
            ids.put(Case.STICKY_DIR, run(containers, stickyImage));
            trial(label, without, extra, expected, stopCleanly, containers, ids);
        }
    }

    private static void trial(String label, Set<String> without, Set<String> extra, Map<Case, Expect> expected,
                              boolean stopCleanly, GpuContainers containers, Map<Case, String> ids) {
        try (AgentContainer agent = AgentContainer.start(without, extra)) {
            try {
                agent.awaitReady(Duration.ofSeconds(30));
                // Created first: by the time the running cases are through, its create event
                // has long been handled, and whether it was seeded can be told at once.
                ids.put(Case.BEFORE_START, create(containers, foreignImage, seenDriver));

                List<String> observed = new ArrayList<>();
                for (Case c : List.of(Case.ROOT, Case.NON_ROOT, Case.FOREIGN_DIR, Case.STICKY_DIR)) {
                    observed.add(c + "=" + checkRunning(agent, containers, c, ids.get(c), expected.get(c)));
                }
                // Created once the running cases were repaired: what they showed teaches nothing
                // about files that are not the host's.
                if (expected.containsKey(Case.UNSEEN_SOURCES)) {
                    ids.put(Case.UNSEEN_SOURCES, create(containers, foreignImage, unseenDriver));
                }
                for (Case c : List.of(Case.BEFORE_START, Case.UNSEEN_SOURCES)) {
                    if (ids.containsKey(c)) {
                        observed.add(c + "=" + checkCreated(agent, containers, c, ids.get(c), expected.get(c)));
                    }
                }
                if (expected.containsKey(Case.DOCKER_RUN)) {
                    String id = runProbing(containers, foreignImage, seenDriver);
                    observed.add(Case.DOCKER_RUN + "=" + checkRun(agent, containers, id, expected.get(Case.DOCKER_RUN)));
                }
                RESULTS.put(label, String.join("  ", observed));
                if (stopCleanly) {
                    assertThat(agent.stop(manifest.terminationGraceSeconds()))
                            .as("exit code after SIGTERM, within terminationGracePeriodSeconds").isZero();
                }
            } catch (AssertionError | RuntimeException e) {
                throw new AssertionError("agent container " + label + ": " + e.getMessage()
                        + "\n--- its log ---\n" + agent.rawLog(), e);
            }
        }
    }

    private static String run(GpuContainers containers, String image, String... options) {
        List<String> args = new ArrayList<>(driverMounts(seenDriver));
        args.addAll(List.of(options));
        return containers.run(image, null, List.of("sleep", "600"), args.toArray(String[]::new));
    }

    /** docker create; its first instruction prints the library directory's owner and mode, and the alias. */
    private static String create(GpuContainers containers, String image, Path driver) {
        return probing(containers, List.of("create"), image, driver);
    }

    /** docker run -d; its first instruction prints what {@link #create}'s does. */
    private static String runProbing(GpuContainers containers, String image, Path driver) {
        return probing(containers, List.of("run", "-d"), image, driver);
    }

    private static String probing(GpuContainers containers, List<String> verb, String image, Path driver) {
        List<String> args = new ArrayList<>(verb);
        args.addAll(driverMounts(driver));
        args.addAll(List.of(image, "sh", "-c", "stat -c '%u:%g %a' " + DEBIAN_LIB + "; readlink " + ALIAS
                + "; echo end; sleep 600"));
        String id = docker.run(args.toArray(String[]::new));
        containers.adopt(id);
        return id;
    }

    private static String checkRun(AgentContainer agent, GpuContainers containers, String id, Expect e) {
        AgentProcess.awaitTrue("DOCKER_RUN: the first output of " + id, Duration.ofSeconds(20),
                () -> docker.run("logs", id).contains("end"));
        String first = docker.run("logs", id);
        assertThat(first).as("DOCKER_RUN: at the first instruction (mode of %s, then %s)", DEBIAN_LIB, ALIAS)
                .matches(e.firstOutput());
        String line = agent.awaitLineAbout(id, Duration.ofSeconds(30));
        assertThat(line).as("DOCKER_RUN: the agent's line about %s", id).matches(lineRegex(e.line(), id));
        String link = containers.readlink(id, ALIAS);
        assertThat(link.equals(TARGET)).as("DOCKER_RUN: %s -> %s (reads '%s')", ALIAS, TARGET, link).isEqualTo(e.linked());
        return (first.contains(TARGET) ? "link-at-first-instruction" : "no-link-at-first-instruction") + "/"
                + (line.contains("before start") ? "before-start" : "at-start");
    }

    private static List<String> driverMounts(Path dir) {
        List<String> args = new ArrayList<>();
        for (String file : TestImages.DRIVER.keySet()) {
            args.addAll(List.of("-v", dir.resolve(file) + ":" + DEBIAN_LIB + "/" + file + ":ro"));
        }
        return args;
    }

    private static String checkRunning(AgentContainer agent, GpuContainers containers, Case c, String id, Expect e) {
        String line = agent.awaitLineAbout(id, Duration.ofSeconds(30));
        String link = containers.readlink(id, ALIAS);
        assertThat(line).as("%s: the agent's line about %s", c, id).matches(lineRegex(e.line(), id));
        assertThat(link.equals(TARGET)).as("%s: %s -> %s (reads '%s')", c, ALIAS, TARGET, link).isEqualTo(e.linked());
        return line.startsWith("repaired") ? "repaired" : "refused";
    }

    private static String checkCreated(AgentContainer agent, GpuContainers containers, Case c, String id, Expect e) {
        Path upper = Path.of(docker.run("inspect", "-f", "{{.GraphDriver.Data.UpperDir}}", id));
        Path alias = upper.resolve(ALIAS.substring(1));
        if (e.seeded()) {
            AgentProcess.awaitTrue(c + ": the alias in the writable layer of " + id, Duration.ofSeconds(20),
                    () -> Files.isSymbolicLink(alias));
        }
        boolean seeded = Files.isSymbolicLink(alias);
        assertThat(seeded).as("%s: seeded into the writable layer before start", c).isEqualTo(e.seeded());
        docker.run("start", id);
        AgentProcess.awaitTrue(c + ": the first output of " + id, Duration.ofSeconds(20),
                () -> docker.run("logs", id).contains("end"));
        String first = docker.run("logs", id);
        assertThat(first).as("%s: at the first instruction (mode of %s, then %s)", c, DEBIAN_LIB, ALIAS)
                .matches(e.firstOutput());
        if (e.line() == null) {
            // Not the agent's business: counted, never written.
            agent.awaitCounted("no_driver", Duration.ofSeconds(30));
            assertThat(containers.readlink(id, ALIAS)).as("%s: nothing written after the start", c).isEmpty();
            return "left-alone";
        }
        String line = agent.awaitLineAbout(id, Duration.ofSeconds(30));
        assertThat(line).as("%s: the agent's line about %s", c, id).matches(lineRegex(e.line(), id));
        String link = containers.readlink(id, ALIAS);
        assertThat(link.equals(TARGET)).as("%s: %s -> %s after start (reads '%s')", c, ALIAS, TARGET, link)
                .isEqualTo(e.linked());
        return (seeded ? "seeded" : "not-seeded") + "/" + first.lines().findFirst().orElse("").split(" ")[1]
                + (first.contains(TARGET) ? "+link" : "") + "/"
                + (line.contains("before start") ? "before-start"
                        : line.startsWith("repaired") ? "at-start" : "refused");
    }

    private static String lineRegex(String template, String id) {
        return "(?s)" + template.formatted(id.substring(0, 12)) + ".*";
    }

    /** The agent's container, started with the manifest's settings (less some capabilities). */
    static final class AgentContainer implements AutoCloseable {

        private final String id;
        private final int port;

        private AgentContainer(String id, int port) {
            this.id = id;
            this.port = port;
        }

        static AgentContainer start(Set<String> without, Set<String> extra) {
            int port = AgentProcess.freePort();
            DaemonSetAgent.Substitutions substitutions = new DaemonSetAgent.Substitutions(hostPaths, mountPaths,
                    Map.of("spec.nodeName", "least-privilege-it", "metadata.uid", ""),
                    Map.of("DRIVER_ALIAS_KUBERNETES", "off", "DRIVER_ALIAS_LISTEN", "127.0.0.1:" + port,
                            "DRIVER_ALIAS_HOST_LIB_DIR", seenDriver.toString()),
                    without);
            List<String> args = new ArrayList<>(List.of("run", "-d", "--label", "daa-test=least-privilege"));
            args.addAll(manifest.dockerRunOptions(substitutions));
            extra.forEach(capability -> args.addAll(List.of("--cap-add", capability)));
            // Not in the manifest, see the class comment.
            args.addAll(List.of("--network", "host"));
            args.addAll(List.of("--mount", "type=bind,source=" + seenDriver + ",target=" + seenDriver + ",readonly"));
            args.add(agentImage);
            args.addAll(manifest.args());
            String kind = without.isEmpty() && extra.isEmpty() ? "manifest" : "variant";
            RUN_COMMANDS.putIfAbsent(kind, String.join(" ", args));
            return new AgentContainer(docker.run(args.toArray(String[]::new)), port);
        }

        void awaitReady(Duration timeout) {
            AgentProcess.awaitTrue("/readyz of the agent container", timeout, () -> {
                requireRunning();
                try {
                    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                            + "/readyz")).timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                    return r.statusCode() == 200;
                } catch (IOException e) {
                    return false;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(e);
                }
            });
        }

        private void requireRunning() {
            if (!"true".equals(docker.run("inspect", "-f", "{{.State.Running}}", id))) {
                throw new AssertionError("the agent container exited ("
                        + docker.run("inspect", "-f", "{{.State.ExitCode}} OOMKilled={{.State.OOMKilled}}", id) + ")");
            }
        }

        /** The one line the agent logs about a container it examined: repaired, or not and why. */
        String awaitLineAbout(String containerId, Duration timeout) {
            String shortId = containerId.substring(0, 12);
            Pattern about = Pattern.compile("^(repaired container|container) " + shortId + " .*");
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                Optional<String> line = messages().stream()
                        .filter(m -> about.matcher(m).matches() && !m.startsWith("ldconfig")).findFirst();
                if (line.isPresent()) {
                    return line.get();
                }
                requireRunning();
                sleep(100);
            }
            throw new AssertionError("no line about " + shortId + " within " + timeout.toMillis() + " ms");
        }

        /** Waits until the agent has counted a container with this outcome ({@code driver_alias_containers_total}). */
        void awaitCounted(String outcome, Duration timeout) {
            String series = "driver_alias_containers_total{outcome=\"" + outcome + "\"} ";
            AgentProcess.awaitTrue("a container counted " + outcome, timeout, () -> {
                requireRunning();
                try {
                    String text = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                            java.net.http.HttpResponse.BodyHandlers.ofString()).body();
                    return text.lines().filter(l -> l.startsWith(series))
                            .anyMatch(l -> Double.parseDouble(l.substring(series.length()).split(" ")[0]) >= 1);
                } catch (IOException e) {
                    return false;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            });
        }

        /** The messages of its JSON log lines ({@code DRIVER_ALIAS_LOG_FORMAT=json}, the Elastic Common Schema). */
        List<String> messages() {
            List<String> messages = new ArrayList<>();
            for (String line : rawLog().split("\n")) {
                if (line.isEmpty()) {
                    continue;
                }
                // Nothing but JSON on the container's output (the JVM's options come from the
                // image's argument file, not from JAVA_TOOL_OPTIONS, which it would announce).
                if (!line.startsWith("{")) {
                    throw new AssertionError("not a JSON line in the agent's output: " + line);
                }
                try {
                    JsonNode node = JSON.readTree(line);
                    messages.add(node.path("message").asText());
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            return messages;
        }

        String rawLog() {
            return Processes.run(docker.docker("logs", id)).output();
        }

        /** SIGTERM as the kubelet sends it, then SIGKILL after the grace period; the exit code. */
        int stop(long graceSeconds) {
            docker.run("stop", "-t", String.valueOf(graceSeconds), id);
            return Integer.parseInt(docker.run("inspect", "-f", "{{.State.ExitCode}}", id));
        }

        @Override
        public void close() {
            docker.tryRun("rm", "-f", id);
        }

        private static void sleep(long millis) {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }
}

package io.driveralias.agent.ldcache;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.ShippedJvm;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Large caches against the agent's shipped heap: a JVM started with exactly the options the
 * image and the DaemonSet give the agent (32 MiB heap, serial GC, exit on OutOfMemoryError),
 * three updates at once of valid 4 MB caches and of valid 16 MB ones (made by the real
 * ldconfig). The JVM must survive, the 4 MB caches must be updated and readable by glibc's own
 * {@code ldconfig -p}, the 16 MB ones updated or refused with a reason.
 */
class LdCacheShippedHeapTest {

    private static final long MB = 1_000_000;
    private static final String LISTED = "libcuda.so.1 (libc6,x86-64) => " + BigCaches.LIB_DIR + "/libcuda.so.1";

    @TempDir
    static Path tmp;

    private static Path small;
    private static Path fourMb;
    private static Path sixteenMb;
    private static Path sixteenMbOfEntries;
    private static Path sixteenMbScattered;

    @BeforeAll
    static void caches() throws Exception {
        long start = System.nanoTime();
        small = BigCaches.make(tmp.resolve("gen-100k"), 100_000, 180);
        fourMb = BigCaches.make(tmp.resolve("gen-4m"), 4 * MB, 180);
        sixteenMb = BigCaches.make(tmp.resolve("gen-16m"), 16 * MB, 1000);
        sixteenMbOfEntries = Files.write(tmp.resolve("codec-16m"), BigCaches.manyEntries(16 * MB));
        sixteenMbScattered = Files.write(tmp.resolve("scattered-16m"), BigCaches.scattered(16 * MB));
        assertThat(LoaderRoot.printCache(sixteenMbScattered)).contains("libc.so.6 (libc6,x86-64) => " + BigCaches.LIB_DIR);
        assertThat(LoaderRoot.printCache(sixteenMbOfEntries)).contains("libc.so.6 (libc6,x86-64) => " + BigCaches.LIB_DIR);
        System.out.printf("caches made in %d s: %d, %d, %d bytes (ldconfig), %d bytes (codec)%n",
                (System.nanoTime() - start) / 1_000_000_000, small.toFile().length(), fourMb.toFile().length(),
                sixteenMb.toFile().length(), sixteenMbOfEntries.toFile().length());
    }

    @Test
    void threeUpdatesAtOnceOf4And16MbCachesFitTheShippedHeap() throws Exception {
        List<Path> four = roots("four", fourMb, 3);
        List<Path> sixteen = roots("sixteen", sixteenMb, 2);
        sixteen.addAll(roots("sixteen-entries", sixteenMbOfEntries, 1));

        String fours = probe("together", four);
        String sixteens = probe("together", sixteen);

        for (Path root : four) {
            assertThat(updateLine(fours, root)).contains("outcome=UPDATED");
            assertThat(LoaderRoot.printCache(root.resolve("etc/ld.so.cache"))).contains(LISTED);
        }
        for (Path root : sixteen) {
            String line = updateLine(sixteens, root);
            if (line.contains("outcome=UPDATED")) {
                assertThat(LoaderRoot.printCache(root.resolve("etc/ld.so.cache"))).contains(LISTED);
            } else {
                assertThat(line).contains("outcome=FAILED", "reason=IO");
                assertThat(root.resolve("etc/ld.so.cache")).hasSameBinaryContentAs(
                        root.getFileName().toString().startsWith("sixteen-entries") ? sixteenMbOfEntries : sixteenMb);
            }
        }
    }

    @Test
    void oneUpdateAtATimeHeapAndTimeByCacheSize() throws Exception {
        List<Path> roots = new ArrayList<>();
        roots.addAll(roots("each-100k-cold", small, 1)); // the first update loads and links the code
        roots.addAll(roots("each-100k", small, 1));
        roots.addAll(roots("each-4m", fourMb, 1));
        roots.addAll(roots("each-16m", sixteenMb, 1));
        roots.addAll(roots("each-16m-entries", sixteenMbOfEntries, 1));
        roots.addAll(roots("each-16m-scattered", sixteenMbScattered, 1));

        String out = probe("each", roots);

        for (Path root : roots) {
            assertThat(updateLine(out, root)).contains("outcome=UPDATED");
            assertThat(LoaderRoot.printCache(root.resolve("etc/ld.so.cache"))).contains(LISTED);
        }
    }

    private static List<Path> roots(String name, Path cache, int count) throws IOException {
        List<Path> roots = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Path etc = Files.createDirectories(tmp.resolve(name + "-" + i).resolve("etc"));
            Files.copy(cache, etc.resolve("ld.so.cache"));
            roots.add(etc.getParent());
        }
        return roots;
    }

    /** Runs the probe in a JVM with the shipped options; returns its output; it must exit 0. */
    private static String probe(String mode, List<Path> roots) throws Exception {
        List<String> command = new ArrayList<>(List.of(AgentProcess.java()));
        command.addAll(ShippedJvm.commandLineOptions());
        command.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                LdCacheHeapProbe.class.getName(), mode));
        roots.forEach(r -> command.add(r.toString()));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        Process p = builder.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        System.out.print(out);
        assertThat(p.exitValue()).as("the probe JVM (shipped options) survived:\n" + out).isZero();
        assertThat(out).doesNotContain("OutOfMemoryError");
        return out;
    }

    private static String updateLine(String out, Path root) {
        Matcher m = Pattern.compile("(?m)^update root=" + Pattern.quote(root.toString()) + " .*$").matcher(out);
        assertThat(m.find()).as("a line for " + root + " in:\n" + out).isTrue();
        return m.group();
    }

}

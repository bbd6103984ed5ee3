package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * NVIDIA's real user-space driver (Debian bookworm non-free, 535.x, amd64 and arm64) and a
 * real debootstrapped Debian root, fetched once by {@code src/test/fixtures/prepare-fixtures.sh}
 * into a cache that survives {@code mvn clean} ({@code $DRIVER_ALIAS_FIXTURES}, else
 * {@code ~/.cache/driver-alias-agent/fixtures}); a warm cache costs nothing and needs no network.
 */
public final class RealDriver {

    public enum Arch {
        AMD64("amd64", "x86_64-linux-gnu"), ARM64("arm64", "aarch64-linux-gnu");

        final String debian;
        public final String triplet;

        Arch(String debian, String triplet) {
            this.debian = debian;
            this.triplet = triplet;
        }

        /** The Debian multiarch library directory, e.g. /usr/lib/x86_64-linux-gnu. */
        public String libDir() {
            return "/usr/lib/" + triplet;
        }
    }

    private static Path cache;
    private static final Map<String, String> IMPORTED = new ConcurrentHashMap<>();

    private RealDriver() {
    }

    /** Runs the fixture script (a no-op when the cache is complete) and returns the cache. */
    public static synchronized Path cache() {
        if (cache == null) {
            Path script = moduleDir().resolve("src/test/fixtures/prepare-fixtures.sh");
            Processes.Result r = Processes.run(List.of("bash", script.toString()), 900);
            if (r.exitCode() != 0) {
                throw new AssertionError("the real-driver fixtures could not be prepared (" + script
                        + "; needs debootstrap and the Debian archive once):\n" + r.output());
            }
            List<String> lines = r.output().lines().toList();
            cache = Path.of(lines.getLast().trim());
        }
        return cache;
    }

    /**
     * The packages' library directory ({@code .../usr/lib/x86_64-linux-gnu}, whose
     * {@code nvidia/current} holds the files) if the fixtures were fetched already; nothing is
     * fetched here.
     */
    public static java.util.Optional<Path> fetchedLibraryRoot(Arch arch) {
        Path drivers = (cache != null ? cache : defaultCache()).resolve("drivers/" + arch.debian);
        return Files.isRegularFile(drivers.resolve(".complete"))
                ? java.util.Optional.of(drivers.resolve("usr/lib/" + arch.triplet)) : java.util.Optional.empty();
    }

    /**
     * Where prepare-fixtures.sh keeps its cache unless it has no writable home:
     * {@code $DRIVER_ALIAS_FIXTURES}, else {@code ~/.cache/driver-alias-agent/fixtures}.
     */
    public static Path defaultCache() {
        String given = System.getenv("DRIVER_ALIAS_FIXTURES");
        String xdg = System.getenv("XDG_CACHE_HOME");
        return given != null && !given.isBlank() ? Path.of(given)
                : Path.of(xdg != null && !xdg.isBlank() ? xdg : System.getProperty("user.home") + "/.cache",
                        "driver-alias-agent", "fixtures");
    }

    /** The driver's package version's upstream part, e.g. 535.261.03. */
    public static String version(Arch arch) {
        try {
            String full = Files.readString(cache().resolve("drivers/" + arch.debian + "/.version")).trim();
            return full.replaceFirst("-.*", "");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The older branch bookworm also carries (amd64): see {@link #legacyLibraryDir}. */
    public static final String LEGACY_BRANCH = "tesla-470";

    /**
     * Where the older branch's packages ({@code libnvidia-tesla-470-cuda1}, {@code -ml1}) unpack
     * libcuda and NVML: another driver's real user space, for mismatched hosts and stale copies.
     */
    public static Path legacyLibraryDir() {
        return cache().resolve("drivers/" + LEGACY_BRANCH + "/amd64/usr/lib/x86_64-linux-gnu/nvidia/" + LEGACY_BRANCH);
    }

    /** The older branch's upstream version, e.g. 470.256.02. */
    public static String legacyVersion() {
        try {
            return Files.readString(cache().resolve("drivers/" + LEGACY_BRANCH + "/amd64/.version")).trim()
                    .replaceFirst("-.*", "");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Where the packages unpack the libraries (Debian's alternatives directory). */
    public static Path libraryDir(Arch arch) {
        return cache().resolve("drivers/" + arch.debian + "/usr/lib/" + arch.triplet + "/nvidia/current");
    }

    public static Path nvidiaSmi(Arch arch) {
        return cache().resolve("drivers/" + arch.debian + "/usr/lib/nvidia/current/nvidia-smi");
    }

    /**
     * The versioned library files only ({@code lib*.so.535.261.03}), which are what the NVIDIA
     * container runtime mounts; the packages' own SONAME and dev links are left behind.
     */
    public static List<Path> versionedLibraries(Arch arch) {
        Pattern versioned = Pattern.compile("lib[A-Za-z0-9_-]+\\.so\\." + Pattern.quote(version(arch)));
        try (Stream<Path> files = Files.list(libraryDir(arch))) {
            return files.filter(f -> Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS))
                    .filter(f -> versioned.matcher(f.getFileName().toString()).matches()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** docker run options: each versioned library read-only into {@code libDir}, nvidia-smi into /usr/bin. */
    public static List<String> mounts(String libDir) {
        List<String> args = new ArrayList<>();
        for (Path lib : versionedLibraries(Arch.AMD64)) {
            args.addAll(List.of("-v", lib + ":" + libDir + "/" + lib.getFileName() + ":ro"));
        }
        args.addAll(List.of("-v", nvidiaSmi(Arch.AMD64) + ":/usr/bin/nvidia-smi:ro"));
        return args;
    }

    /** The debootstrapped Debian bookworm root (python3 with ctypes), imported into {@code docker} once. */
    public static String debianImage(DockerHarness docker) {
        return IMPORTED.computeIfAbsent(docker.host(), h -> {
            String tag = "daa-test/debian-bookworm-minbase:1";
            if (docker.tryRun("image", "inspect", tag).exitCode() != 0) {
                docker.run("import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                        cache().resolve("debian-bookworm-minbase.tar").toString(), tag);
            }
            return tag;
        });
    }

    /** The Maven module directory (the ITs run there; {@code basedir} says so under Maven). */
    public static Path moduleDir() {
        Path base = Path.of(System.getProperty("basedir", ".")).toAbsolutePath();
        if (Files.isDirectory(base.resolve("src/test/fixtures"))) {
            return base;
        }
        return base.resolve("agent");
    }
}

package io.driveralias.agent.core;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Which file a GPU container's loader takes for each of the driver's libraries, and what that
 * means for the programs in it: the node's driver (the files its runtime injected), an image's
 * own copy, or CUDA's forward-compatibility libraries, used rightly or not, each judged against
 * the node's kernel module. Pure: the files are found elsewhere ({@code loader.LoaderView}).
 *
 * @param libraries what the loader takes, one per library asked about
 * @param verdict   the container's, the worst of its libraries'
 * @param principal the library the verdict is about (libcuda.so.1 first, then NVML's)
 * @param reference the version the driver must have on this node: the kernel module's, else the host's files'
 */
public record DriverLoad(List<Loaded> libraries, Verdict verdict, Optional<Loaded> principal, Optional<String> reference) {

    /** Where a library the loader takes comes from. */
    public enum Source { NODE, IMAGE, COMPAT, NOT_FOUND }

    /**
     * CUDA's forward-compatibility libraries a library was found among.
     *
     * @param directory   the compat directory, as the loader reached it
     * @param cudaVersion the CUDA version NVIDIA's note says they bring (CUDA 12.9 and later), if it says
     * @param branches    the driver branches the note says they run on; empty without a note
     * @param byHook      NVIDIA's enable-cuda-compat hook configured them ({@code 00-compat-*.conf})
     */
    public record Compat(String directory, Optional<String> cudaVersion, List<Integer> branches, boolean byHook) {

        public Compat {
            branches = List.copyOf(branches);
        }
    }

    /**
     * One library as the loader takes it.
     *
     * @param path    the file it ends at (links followed); empty when not found
     * @param version the driver version that file's name carries, if it carries one
     * @param via     how the loader reaches it, in words ("its /etc/ld.so.cache")
     */
    public record Loaded(String soname, String path, Source source, Optional<String> version, Optional<Compat> compat,
                         String via) {
    }

    /** The container's verdict: the {@code loads} label of {@code driver_alias_container_driver_total}. */
    public enum Verdict {
        /** The loader finds none of the driver's libraries (their aliases are missing: the repair's business). */
        NONE("none", false),
        /** The node's driver, of the kernel module's version. */
        NODE("node", false),
        /** CUDA's forward-compatibility libraries, newer than the module and made for its branch. */
        COMPAT("compat", false),
        /** The node's files, of another version than its kernel module: the node's mismatch. */
        NODE_MISMATCH("node_mismatch", true),
        /** Forward-compatibility libraries newer than the module, but not made for its branch. */
        COMPAT_UNSUPPORTED("compat_unsupported", true),
        /** Forward-compatibility libraries no newer than the module: they shadow a newer driver for nothing. */
        COMPAT_OLDER("compat_older", true),
        /** An image's own copy, of another version than the module (or of none it tells). */
        IMAGE("image", true);

        private final String label;
        private final boolean mismatch;

        Verdict(String label, boolean mismatch) {
            this.label = label;
            this.mismatch = mismatch;
        }

        public String label() {
            return label;
        }

        /** Programs in the container will load a library that does not match the node's kernel module. */
        public boolean mismatch() {
            return mismatch;
        }
    }

    public DriverLoad {
        libraries = List.copyOf(libraries);
    }

    /** The libraries asked about first, the others in name order. */
    private static final List<String> FIRST = List.of("libcuda.so.1", "libnvidia-ml.so.1");

    /** What the container's loader takes, judged against the version the node's driver must have. */
    public static DriverLoad judge(List<Loaded> libraries, Optional<String> reference) {
        List<Loaded> ordered = new ArrayList<>(libraries);
        ordered.sort(Comparator.comparingInt((Loaded l) -> FIRST.contains(l.soname()) ? FIRST.indexOf(l.soname()) : FIRST.size())
                .thenComparing(Loaded::soname));
        Verdict worst = Verdict.NONE;
        Loaded principal = null;
        for (Loaded l : ordered) {
            Verdict v = verdict(l, reference);
            if (principal == null || v.ordinal() > worst.ordinal()) {
                worst = v;
                principal = l;
            }
        }
        return new DriverLoad(ordered, worst, Optional.ofNullable(principal), reference);
    }

    /** One library's verdict. */
    public static Verdict verdict(Loaded l, Optional<String> reference) {
        boolean matches = reference.isEmpty() || l.version().equals(reference);
        return switch (l.source()) {
            case NOT_FOUND -> Verdict.NONE;
            case NODE -> matches ? Verdict.NODE : Verdict.NODE_MISMATCH;
            // A copy of exactly the module's version works, whoever put it there.
            case IMAGE -> l.version().isPresent() && l.version().equals(reference) ? Verdict.NODE : Verdict.IMAGE;
            case COMPAT -> reference.isEmpty() ? Verdict.COMPAT : compat(l, reference.get());
        };
    }

    /**
     * NVIDIA's rule (its enable-cuda-compat hook): with the note, the module's branch must be one
     * the compat libraries run on and they must be newer; without it, of a newer branch.
     */
    private static Verdict compat(Loaded l, String module) {
        if (l.version().isEmpty() || DriverVersions.compareVersions(l.version().get(), module) <= 0) {
            return Verdict.COMPAT_OLDER;
        }
        List<Integer> branches = l.compat().map(Compat::branches).orElse(List.of());
        boolean right = branches.isEmpty() ? major(l.version().get()) > major(module) : branches.contains(major(module));
        return right ? Verdict.COMPAT : Verdict.COMPAT_UNSUPPORTED;
    }

    private static int major(String version) {
        int dot = version.indexOf('.');
        try {
            return Integer.parseInt(dot < 0 ? version : version.substring(0, dot));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** The verdict about one library, for {@code check}. */
    public Verdict verdictOf(Loaded library) {
        return verdict(library, reference);
    }
}

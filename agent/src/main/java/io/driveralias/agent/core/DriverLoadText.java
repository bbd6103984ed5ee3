package io.driveralias.agent.core;

import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * What a {@link DriverLoad} means, in the words of the person who runs the GPU job: which
 * library their programs load, whether it is the node's driver, and what will fail. The same
 * sentence goes into the log, {@code check} and the pod's Event; the advice, into the Event.
 * Names from the image are escaped and capped ({@link Printable}).
 */
public final class DriverLoadText {

    private DriverLoadText() {
    }

    /** One sentence: "the image's own libcuda.so.1 (470.57.02) is loaded instead of the node's driver 535.104.05 (...)". */
    public static String sentence(DriverLoad load) {
        Optional<DriverLoad.Loaded> principal = load.principal();
        if (principal.isEmpty() || load.verdict() == DriverLoad.Verdict.NONE) {
            return "the loader finds none of the driver's libraries";
        }
        DriverLoad.Loaded l = principal.get();
        String name = Printable.of(l.soname());
        String node = load.reference().map(v -> "the node's driver " + v).orElse("the node's driver");
        String where = " (" + Printable.of(l.path()) + ", through " + l.via() + ")";
        return switch (load.verdict()) {
            case NONE -> "the loader finds none of the driver's libraries";
            case NODE -> node + " (" + Printable.list(load.libraries().stream()
                    .filter(x -> x.source() != DriverLoad.Source.NOT_FOUND).map(DriverLoad.Loaded::soname).toList()) + ")";
            case NODE_MISMATCH -> "the node's " + name + " (" + l.version().orElse("?") + ") does not match its kernel module "
                    + load.reference().orElse("?") + where;
            case IMAGE -> "the image's own " + name + " (" + version(l) + ") is loaded instead of " + node + where;
            case COMPAT -> "CUDA forward compatibility: the image's " + name + " (" + compat(l) + ") is loaded over " + node
                    + where;
            case COMPAT_OLDER -> "the image's CUDA forward-compatibility " + name + " (" + compat(l) + ") is older than " + node
                    + " and is loaded in its place" + where;
            case COMPAT_UNSUPPORTED -> "the image's CUDA forward-compatibility " + name + " (" + compat(l) + ") is loaded over "
                    + node + ", whose branch it does not run on (it runs on " + branches(l) + ")" + where;
        };
    }

    /** What will fail, and what to change: for the pod's owner. Empty where nothing is wrong. */
    public static String advice(DriverLoad load) {
        String dir = load.principal().flatMap(DriverLoad.Loaded::compat).map(DriverLoad.Compat::directory)
                .map(Printable::of).orElse("/usr/local/cuda/compat");
        return switch (load.verdict()) {
            case NONE, NODE -> "";
            case COMPAT -> "this works on data center GPUs that support forward compatibility; on others CUDA fails with"
                    + " error 804 (\"forward compatibility was attempted on non supported HW\")";
            case NODE_MISMATCH -> "NVML and CUDA fail with \"Driver/library version mismatch\" until the node's kernel module is"
                    + " reloaded or the node rebooted: a matter for the node's operator (alert DriverAliasDriverLibraryMismatch)";
            case IMAGE -> "CUDA then fails (\"CUDA driver version is insufficient for CUDA runtime version\", or NVML's"
                    + " \"Driver/library version mismatch\"): remove the driver's libraries from the image; the node provides them";
            case COMPAT_OLDER, COMPAT_UNSUPPORTED -> "CUDA then fails with error 803 (\"system has unsupported display driver /"
                    + " cuda driver combination\"): take " + dir + " out of the image's loader configuration (ld.so.conf.d,"
                    + " LD_LIBRARY_PATH) or the cuda-compat package out of the image";
        };
    }

    /** One line per library, for {@code check}: "libcuda.so.1 -> /path: the image's own copy (470.57.02)". */
    public static List<String> lines(DriverLoad load) {
        return load.libraries().stream().map(l -> Printable.of(l.soname()) + " -> "
                + (l.source() == DriverLoad.Source.NOT_FOUND ? "(not found)" : Printable.of(l.path()) + ": " + what(l)
                + " [" + load.verdictOf(l).label() + "]")).collect(Collectors.toList());
    }

    private static String what(DriverLoad.Loaded l) {
        return switch (l.source()) {
            case NODE -> "the node's driver" + l.version().map(v -> " (" + v + ")").orElse("");
            case IMAGE -> "the image's own copy (" + version(l) + ")";
            case COMPAT -> "CUDA forward-compatibility library (" + compat(l) + ")";
            case NOT_FOUND -> "not found";
        } + ", through " + l.via();
    }

    private static String version(DriverLoad.Loaded l) {
        return l.version().orElse("no driver version in its name: a stub or a copy");
    }

    private static String compat(DriverLoad.Loaded l) {
        String cuda = l.compat().flatMap(DriverLoad.Compat::cudaVersion).map(v -> ", CUDA " + v).orElse("");
        String hook = l.compat().map(DriverLoad.Compat::byHook).orElse(false) ? ", enabled by NVIDIA's hook" : "";
        return l.version().orElse("?") + cuda + hook;
    }

    private static String branches(DriverLoad.Loaded l) {
        List<Integer> b = l.compat().map(DriverLoad.Compat::branches).orElse(List.of());
        return b.isEmpty() ? "newer branches only" : b.stream().map(String::valueOf).collect(Collectors.joining(", "));
    }
}

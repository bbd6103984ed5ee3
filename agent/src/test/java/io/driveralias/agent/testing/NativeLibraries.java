package io.driveralias.agent.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Stand-in driver libraries, compiled with gcc at test time with the SONAME a real driver
 * file carries: the agent must read it from the ELF, exactly as ldconfig does.
 */
public final class NativeLibraries {

    private NativeLibraries() {
    }

    /** Compiles {@code dir/fileName} with {@code -Wl,-soname,soname} (no SONAME when null). */
    public static Path compile(Path dir, String fileName, String soname) {
        try {
            Files.createDirectories(dir);
            Path source = Files.createTempFile("stand-in", ".c");
            String symbol = fileName.replaceAll("[^A-Za-z0-9]", "_");
            Files.writeString(source, "int " + symbol + "_version(void) { return 42; }\n");
            Path out = dir.resolve(fileName);
            List<String> cmd = soname == null
                    ? List.of("gcc", "-shared", "-fPIC", "-o", out.toString(), source.toString())
                    : List.of("gcc", "-shared", "-fPIC", "-Wl,-soname," + soname, "-o", out.toString(), source.toString());
            Processes.check(cmd);
            Files.delete(source);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A CUDA forward-compatibility {@code libcuda.so.<version>} as NVIDIA ships it from CUDA 12.9 on:
     * SONAME {@code libcuda.so.1} and the note {@code .note.cuda.fwd_compatibility} (owner "NVIDIA
     * Corporation", type 0, a JSON description: the CUDA version, the driver branches it runs on,
     * the GPU brands that support it), laid out byte for byte like the note of NVIDIA's own files.
     */
    public static Path compileCompat(Path dir, String version, String cudaVersion, List<Integer> branches) {
        String json = "{\"format\":1,\"CUDA version\":\"" + cudaVersion + "\",\"driver\":"
                + branches.toString().replace(" ", "") + ",\"device\":[1,2,7,8,9,10,11,12,13,14]}";
        int descSize = json.length() + 1;
        int descPadded = (descSize + 3) & ~3;
        String c = "struct cuda_note { unsigned namesz, descsz, type; char name[20]; char desc[" + descPadded + "]; };\n"
                + "__attribute__((section(\".note.cuda.fwd_compatibility\"), aligned(4), used))\n"
                + "static const struct cuda_note note = {19, " + descSize + ", 0, \"NVIDIA Corporation\", \""
                + json.replace("\"", "\\\"") + "\"};\n"
                + "int cuInit(unsigned flags) { return 0; }\n";
        try {
            Files.createDirectories(dir);
            Path source = Files.createTempFile("compat", ".c");
            Files.writeString(source, c);
            Path out = dir.resolve("libcuda.so." + version);
            Processes.check(List.of("gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", out.toString(),
                    source.toString()));
            Files.delete(source);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Copies a compiled library (faster than compiling the same thing twice). */
    public static Path copy(Path library, Path dir, String fileName) {
        try {
            Files.createDirectories(dir);
            return Files.copy(library, dir.resolve(fileName));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

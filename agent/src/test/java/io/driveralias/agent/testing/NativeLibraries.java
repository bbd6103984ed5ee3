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

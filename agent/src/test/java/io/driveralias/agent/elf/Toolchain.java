package io.driveralias.agent.elf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Builds real shared objects with the host's gcc/binutils, because a reader that only ever saw
 * the test's own ELF writer could share that writer's misunderstandings. A missing toolchain
 * fails the test loudly rather than skipping it: silent skips would hide lost coverage.
 */
final class Toolchain {

    private static final String SOURCE = "int nv_probe(void) { return 42; }\n";

    private Toolchain() {
    }

    /** {@code gcc -shared -fPIC [-Wl,-soname,SONAME] -o dir/fileName}; a null soname omits the flag. */
    static Path sharedLibrary(Path dir, String fileName, String soname) throws IOException {
        Path source = source(dir);
        Path out = dir.resolve(fileName);
        List<String> cmd = new ArrayList<>(List.of("gcc", "-shared", "-fPIC"));
        if (soname != null) {
            cmd.add("-Wl,-soname," + soname);
        }
        cmd.addAll(List.of("-o", out.toString(), source.toString()));
        run(cmd);
        return out;
    }

    /**
     * A real ELF32 object. {@code gcc -m32} cannot link here (no 32-bit libgcc/crt files), but
     * compiling with {@code -m32 -c} and linking with {@code ld -m elf_i386} needs no 32-bit
     * libraries, so this works wherever an x86 binutils is installed.
     */
    static Path sharedLibrary32(Path dir, String fileName, String soname) throws IOException {
        Path source = source(dir);
        Path object = dir.resolve(fileName + ".o");
        Path out = dir.resolve(fileName);
        run(List.of("gcc", "-m32", "-fPIC", "-c", "-o", object.toString(), source.toString()));
        run(List.of("ld", "-m", "elf_i386", "-shared", "-soname", soname, "-o", out.toString(), object.toString()));
        return out;
    }

    static Path strip(Path file, Path out) throws IOException {
        run(List.of("strip", "--strip-all", "-o", out.toString(), file.toString()));
        return out;
    }

    private static Path source(Path dir) throws IOException {
        Path source = dir.resolve("nv_probe.c");
        if (!Files.exists(source)) {
            Files.writeString(source, SOURCE, StandardCharsets.US_ASCII);
        }
        return source;
    }

    private static void run(List<String> cmd) throws IOException {
        Process process;
        try {
            process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new AssertionError("'" + cmd.getFirst() + "' is required to build the ELF test fixtures"
                    + " but could not be started (install gcc/binutils): " + e.getMessage(), e);
        }
        try {
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("timed out: " + String.join(" ", cmd));
            }
            if (process.exitValue() != 0) {
                throw new AssertionError(String.join(" ", cmd) + " failed (exit " + process.exitValue() + "):\n"
                        + output);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            throw new IOException("interrupted while running " + cmd.getFirst(), e);
        }
    }
}

package io.driveralias.agent.ldcache;

import io.driveralias.agent.elf.ByteSource;
import java.io.IOException;
import java.util.OptionalInt;

/**
 * The {@code flags} word of a cache entry, as ldconfig computes it: FLAG_ELF_LIBC6 in the low
 * byte, the ABI in the high byte. The loader accepts only its own ABI's value (x86-64:
 * 0x0303), so an entry with the wrong flags is as good as missing.
 */
public final class LoaderFlags {

    public static final int FLAG_ELF_LIBC6 = 0x0003;
    public static final int FLAG_X8664_LIB64 = 0x0300;
    public static final int FLAG_X8664_LIBX32 = 0x0800;
    public static final int FLAG_AARCH64_LIB64 = 0x0a00;
    static final int FLAG_TYPE_MASK = 0x00ff;

    private static final int EM_386 = 3;
    private static final int EM_X86_64 = 62;
    private static final int EM_AARCH64 = 183;

    private LoaderFlags() {
    }

    /**
     * Flags for a shared object from its ELF header (class, byte order, e_machine), for the
     * ABIs the agent runs on; empty for anything else (32-bit ARM needs its float ABI from
     * e_flags, which this does not guess).
     */
    public static OptionalInt ofElf(ByteSource file) throws IOException {
        if (file.size() < 20) {
            return OptionalInt.empty();
        }
        byte[] h = new byte[20];
        file.readFully(0, h, 20);
        if (h[0] != 0x7f || h[1] != 'E' || h[2] != 'L' || h[3] != 'F' || h[5] != 1) {
            return OptionalInt.empty(); // not ELF, or big-endian: no ABI the agent supports
        }
        int elfClass = h[4];
        int machine = (h[18] & 0xff) | (h[19] & 0xff) << 8;
        if (elfClass == 2 && machine == EM_X86_64) {
            return OptionalInt.of(FLAG_ELF_LIBC6 | FLAG_X8664_LIB64);
        }
        if (elfClass == 1 && machine == EM_X86_64) {
            return OptionalInt.of(FLAG_ELF_LIBC6 | FLAG_X8664_LIBX32);
        }
        if (elfClass == 1 && machine == EM_386) {
            return OptionalInt.of(FLAG_ELF_LIBC6);
        }
        if (elfClass == 2 && machine == EM_AARCH64) {
            return OptionalInt.of(FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64);
        }
        return OptionalInt.empty();
    }
}

package io.driveralias.agent.fs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The native memory of one system call: errno's capture slot, two NUL-terminated names, a
 * struct and an I/O buffer. A confined arena per call cost an allocation, a {@code malloc} and
 * a {@code free} each time; these are made once and lent out. A caller holds one only for the
 * length of a call (try-with-resources), never while it waits for anything but the kernel, so a
 * few serve every thread, virtual or platform. When all the pooled ones are lent, a fresh one
 * is made and dropped after use; the GC frees its memory ({@link Arena#ofAuto()}).
 */
final class NativeScratch implements AutoCloseable {

    /** PATH_MAX with its NUL: the kernel refuses longer names (ENAMETOOLONG) before looking at them. */
    static final int NAME_BYTES = 4096;
    /** struct statx (256 bytes), struct statfs (120), struct open_how (24). */
    static final int STRUCT_BYTES = 256;
    /** getdents64, pread, write: one buffer, large enough for a directory in a few calls. */
    static final int IO_BYTES = 64 * 1024;

    private static final int POOLED = 16;
    private static final AtomicReferenceArray<NativeScratch> POOL = new AtomicReferenceArray<>(POOLED);

    private final Arena arena = Arena.ofAuto();
    final MemorySegment errno = arena.allocate(Linker.Option.captureStateLayout());
    private final MemorySegment first = arena.allocate(NAME_BYTES);
    private final MemorySegment second = arena.allocate(NAME_BYTES);
    final MemorySegment struct = arena.allocate(STRUCT_BYTES, 8);
    /** Made on first use: most calls (open, stat, close) need none. */
    private MemorySegment io;
    /** Bytes of one name on their way between the heap and native memory. */
    final byte[] bytes = new byte[NAME_BYTES];

    private NativeScratch() {
    }

    /**
     * One scratch, for this caller alone until {@link #close}. Starting the search at the
     * thread's own slot gives each worker the same one time after time.
     */
    static NativeScratch acquire() {
        int start = (int) Thread.currentThread().threadId();
        for (int i = 0; i < POOLED; i++) {
            int slot = (start + i) & (POOLED - 1);
            NativeScratch s = POOL.getPlain(slot);
            if (s != null && POOL.compareAndSet(slot, s, null)) {
                return s;
            }
        }
        return new NativeScratch();
    }

    /** Gives it back: into a free slot of the pool, or to the GC if there is none. */
    @Override
    public void close() {
        int start = (int) Thread.currentThread().threadId();
        for (int i = 0; i < POOLED; i++) {
            int slot = (start + i) & (POOLED - 1);
            if (POOL.getPlain(slot) == null && POOL.compareAndSet(slot, null, this)) {
                return;
            }
        }
    }

    MemorySegment io() {
        if (io == null) {
            io = arena.allocate(IO_BYTES, 8);
        }
        return io;
    }

    /** A container's name (chars are bytes, ISO-8859-1) as a C string in the first name buffer. */
    MemorySegment name(String s) throws ErrnoException {
        return latin1(first, s);
    }

    /** The same in the second buffer, for calls that take two names. */
    MemorySegment secondName(String s) throws ErrnoException {
        return latin1(second, s);
    }

    /** A host path the operator chose (UTF-8) as a C string in the first name buffer. */
    MemorySegment hostPath(String s) throws ErrnoException {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 0x80) {
                byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
                requireFits(utf8.length);
                requireNoNul(s);
                MemorySegment.copy(utf8, 0, first, JAVA_BYTE, 0, utf8.length);
                first.set(JAVA_BYTE, utf8.length, (byte) 0);
                return first;
            }
        }
        return latin1(first, s);
    }

    private MemorySegment latin1(MemorySegment into, String s) throws ErrnoException {
        int n = s.length();
        requireFits(n);
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c == 0) {
                throw new ErrnoException("path", "(contains NUL)", Errno.EINVAL);
            }
            if (c > 0xff) {
                throw new ErrnoException("path", s, Errno.EINVAL);
            }
            bytes[i] = (byte) c;
        }
        bytes[n] = 0;
        MemorySegment.copy(bytes, 0, into, JAVA_BYTE, 0, n + 1);
        return into;
    }

    private static void requireFits(int length) throws ErrnoException {
        if (length >= NAME_BYTES) {
            throw new ErrnoException("path", "(" + length + " bytes)", Errno.ENAMETOOLONG);
        }
    }

    private static void requireNoNul(String s) throws ErrnoException {
        if (s.indexOf('\0') >= 0) {
            throw new ErrnoException("path", "(contains NUL)", Errno.EINVAL);
        }
    }

    /** {@code length} bytes of {@code from} at {@code offset} as a string of bytes (ISO-8859-1). */
    String string(MemorySegment from, long offset, int length) {
        MemorySegment.copy(from, JAVA_BYTE, offset, bytes, 0, length);
        return new String(bytes, 0, length, StandardCharsets.ISO_8859_1);
    }
}

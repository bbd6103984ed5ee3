package io.driveralias.agent.nri;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;

/**
 * Off-heap buffers whose pages become resident only once written: private anonymous {@code mmap}.
 * {@link ByteBuffer#allocateDirect} fills what it allocates with zeros, so the plugin's 4 MiB
 * message buffer (NRI's bound on one message) was 4 MiB of the agent's RSS from its start, although
 * a pod's messages are a few KiB (measured: RssAnon +4.1 MiB at the allocation). Where {@code mmap}
 * cannot be linked or fails, {@code allocateDirect} as before. Never unmapped: the plugin allocates
 * its buffers once for the life of the process; but the pages one big message made resident are
 * given back ({@link #release}), so that one 4 MiB Synchronize does not cost 4 MiB of RSS for good.
 */
final class UntouchedBuffers {

    private static final int PROT_READ = 0x1;
    private static final int PROT_WRITE = 0x2;
    private static final int MAP_PRIVATE = 0x02;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final long MAP_FAILED = -1L;
    private static final int MADV_DONTNEED = 4;
    private static final long PAGE = 4096;
    private static final MethodHandle MMAP = link("mmap",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MADVISE = link("madvise", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    /** Where the mappings this class made start: only their pages are given back. */
    private static final java.util.Set<Long> MAPPED = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private UntouchedBuffers() {
    }

    private static MethodHandle link(String name, FunctionDescriptor descriptor) {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.downcallHandle(linker.defaultLookup().find(name).orElseThrow(), descriptor);
        } catch (RuntimeException e) {
            return null; // native access refused, or no such function: allocateDirect, nothing given back
        }
    }

    /** A direct buffer of {@code size} bytes, zero on first read, resident only where written. */
    static ByteBuffer allocate(int size) {
        if (MMAP != null) {
            try {
                MemorySegment at = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, (long) size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
                if (at.address() != MAP_FAILED && at.address() != 0) {
                    MAPPED.add(at.address());
                    return at.reinterpret(size).asByteBuffer();
                }
            } catch (Throwable e) {
                // fall through to the zero-filled kind
            }
        }
        return ByteBuffer.allocateDirect(size);
    }

    /**
     * Gives the whole pages between {@code from} and {@code to} of a buffer of {@link #allocate}
     * back to the kernel: they read as zeros again and are no longer resident. A buffer that is not
     * one of this class's mappings is left as it is. Only for bytes nothing refers to any more.
     */
    static void release(ByteBuffer buffer, int from, int to) {
        if (MADVISE == null || !buffer.isDirect()) {
            return;
        }
        MemorySegment segment = MemorySegment.ofBuffer(buffer);
        if (!MAPPED.contains(segment.address())) {
            return;
        }
        long first = (from + PAGE - 1) / PAGE * PAGE;
        long end = Math.min((to + PAGE - 1) / PAGE * PAGE, buffer.capacity() / PAGE * PAGE);
        if (end <= first) {
            return;
        }
        try {
            int ignored = (int) MADVISE.invokeExact(segment.asSlice(first, end - first), end - first, MADV_DONTNEED);
        } catch (Throwable e) {
            // The pages stay resident: the next message reuses them.
        }
    }
}

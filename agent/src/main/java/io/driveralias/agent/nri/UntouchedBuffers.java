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
 * its buffers once for the life of the process.
 */
final class UntouchedBuffers {

    private static final int PROT_READ = 0x1;
    private static final int PROT_WRITE = 0x2;
    private static final int MAP_PRIVATE = 0x02;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final long MAP_FAILED = -1L;
    private static final MethodHandle MMAP = link();

    private UntouchedBuffers() {
    }

    private static MethodHandle link() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.downcallHandle(linker.defaultLookup().find("mmap").orElseThrow(),
                    FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
        } catch (RuntimeException e) {
            return null; // native access refused, or no mmap: allocateDirect
        }
    }

    /** A direct buffer of {@code size} bytes, zero on first read, resident only where written. */
    static ByteBuffer allocate(int size) {
        if (MMAP != null) {
            try {
                MemorySegment at = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, (long) size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
                if (at.address() != MAP_FAILED && at.address() != 0) {
                    return at.reinterpret(size).asByteBuffer();
                }
            } catch (Throwable e) {
                // fall through to the zero-filled kind
            }
        }
        return ByteBuffer.allocateDirect(size);
    }
}

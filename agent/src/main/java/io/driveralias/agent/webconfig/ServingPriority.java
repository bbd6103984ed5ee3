package io.driveralias.agent.webconfig;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The metrics port's threads run below the repairs: at nice {@value #NICE}. Any pod can make
 * the port busy (a flood of connections, of ClientHellos, of passwords), and the agent's reason
 * to exist is to write a GPU container's aliases in the 150 ms between its create and its
 * start: measured under a flood of wrong passwords, 1 of 6 GPU containers started meanwhile
 * missed its aliases while the port's threads ran at the repairs' priority. At nice 10 a busy
 * thread weighs about a tenth of one at nice 0, so the port takes the CPU the repairs leave,
 * and answers a probe within milliseconds still (one at a time, a probe costs microseconds).
 * Linux priorities are per thread: the port's virtual threads lower the carrier they run on,
 * once per carrier (the agent runs no other virtual threads), and its platform threads lower
 * themselves as they start (a thread started by a lowered one starts lowered). Best effort: where
 * the system calls are not reachable, nothing changes.
 */
public final class ServingPriority {

    static final int NICE = 10;
    private static final int PRIO_PROCESS = 0;
    private static final MethodHandle GETTID;
    private static final MethodHandle SETPRIORITY;
    private static final int REMEMBERED = 256;
    private static final Set<Integer> LOWERED = ConcurrentHashMap.newKeySet();

    static {
        MethodHandle gettid = null;
        MethodHandle setpriority = null;
        try {
            Linker linker = Linker.nativeLinker();
            gettid = linker.downcallHandle(linker.defaultLookup().find("gettid").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
            setpriority = linker.downcallHandle(linker.defaultLookup().find("setpriority").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
        } catch (RuntimeException | Error unavailable) {
            gettid = null; // not Linux, an old glibc, or native access refused: the threads keep their priority
        }
        GETTID = gettid;
        SETPRIORITY = setpriority;
    }

    private ServingPriority() {
    }

    /**
     * Lowers the kernel thread running the caller, a virtual thread's carrier, once per carrier:
     * the carriers are few and live long. The set of those lowered is cleared past
     * {@value #REMEMBERED} (thread ids are reused): a carrier is then lowered once more, harmlessly.
     */
    public static void lowerCarrier() {
        if (GETTID == null) {
            return;
        }
        try {
            int tid = (int) GETTID.invokeExact();
            if (LOWERED.size() > REMEMBERED) {
                LOWERED.clear();
            }
            if (LOWERED.add(tid)) {
                setNice(tid);
            }
        } catch (Throwable e) {
            // best effort
        }
    }

    /** Lowers the calling platform thread; call it once, as the thread starts. */
    public static void lowerThisThread() {
        if (GETTID == null) {
            return;
        }
        try {
            setNice((int) GETTID.invokeExact());
        } catch (Throwable e) {
            // best effort
        }
    }

    private static void setNice(int tid) throws Throwable {
        int ignored = (int) SETPRIORITY.invokeExact(PRIO_PROCESS, tid, NICE);
    }
}

package io.driveralias.agent.live;

import io.driveralias.agent.core.LateRepairCause;
import java.time.Instant;
import java.util.Optional;

/**
 * Whether a container's aliases were in place at its first instruction, judged only from what
 * proves it: written before its process existed (the kernel's record of when the process was
 * made, in 10 ms steps, taken at its lower end), or verified while the process was still the
 * runtime's own init (runc's, waiting for its start) and had not run the container's program.
 * Neither the runtime's record of a start (Docker stamps it tens of ms before the process runs)
 * nor the order of the agent's own events is taken for it. Pure.
 */
final class FirstInstruction {

    private FirstInstruction() {
    }

    /**
     * @param writtenAt       when the aliases found at the start were written (seeded before it), if they were
     * @param processCreated  when the container's process was made, as its kernel says (or, where
     *                        only the runtime says, its record of the start where that is earlier still:
     *                        never Docker's before 26, which stamps it after the process started)
     * @param stillInInit     the process had not begun the container's program when its aliases were verified
     */
    static boolean aliasesWereThere(Optional<Instant> writtenAt, Optional<Instant> processCreated, boolean stillInInit) {
        if (stillInInit) {
            return true;
        }
        return writtenAt.isPresent() && processCreated.isPresent() && writtenAt.get().isBefore(processCreated.get());
    }

    /**
     * Why a GPU container's aliases were not there at its first instruction: the cause its
     * create-time work left ({@code skipped}); else, if that work wrote aliases, that the start
     * path had to add some ({@code addedAtStart}) or that they came too late; else why none was done.
     */
    static LateRepairCause cause(LateRepairCause skipped, boolean seeded, boolean addedAtStart, boolean seedsBeforeStart,
                                 boolean overlay) {
        if (skipped != null) {
            return skipped;
        }
        if (seeded) {
            return addedAtStart ? LateRepairCause.INCOMPLETE : LateRepairCause.SLOW_CREATE;
        }
        if (!seedsBeforeStart) {
            return LateRepairCause.DISABLED;
        }
        return overlay ? LateRepairCause.MISSED_CREATE : LateRepairCause.NO_OVERLAY;
    }
}

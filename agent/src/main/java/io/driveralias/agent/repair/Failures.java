package io.driveralias.agent.repair;

import io.driveralias.agent.core.FailureReason;
import io.driveralias.agent.fs.Errno;
import io.driveralias.agent.fs.ErrnoException;

/** Maps a failed system call to the failure reason users and alerts see. */
public final class Failures {

    private Failures() {
    }

    /**
     * Why a link could not be written in {@code directory}. Refusals name the capability that
     * overrides them, the usual cause in a container with trimmed capabilities.
     */
    public static String linkFailure(String directory, ErrnoException e) {
        return switch (e.errno()) {
            case Errno.EACCES -> directory + ": EACCES (permission denied): the directory's owner and mode refuse"
                    + " the agent; writing there needs CAP_DAC_OVERRIDE";
            case Errno.EPERM -> directory + ": EPERM (operation not permitted): in a sticky directory, replacing"
                    + " another user's link needs CAP_FOWNER";
            default -> e.getMessage();
        };
    }

    public static FailureReason reasonOf(ErrnoException e) {
        return switch (e.errno()) {
            case Errno.EROFS -> FailureReason.READ_ONLY;
            case Errno.EACCES, Errno.EPERM -> FailureReason.PERMISSION;
            // EINVAL: a special file where a library should be, or a name no plain file can have.
            case Errno.EXDEV, Errno.ELOOP, Errno.ENOTDIR, Errno.EAGAIN, Errno.EINVAL -> FailureReason.UNSAFE_PATH;
            case Errno.EEXIST -> FailureReason.CONFLICT;
            case Errno.ESRCH -> FailureReason.CONTAINER_GONE;
            default -> FailureReason.IO;
        };
    }
}

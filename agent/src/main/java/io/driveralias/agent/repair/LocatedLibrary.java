package io.driveralias.agent.repair;

import io.driveralias.agent.core.DriverLibrary;
import io.driveralias.agent.fs.FileStat;

/** A driver library and the identity of its file, to verify later that an alias reaches it. */
public record LocatedLibrary(DriverLibrary library, FileStat stat) {
}

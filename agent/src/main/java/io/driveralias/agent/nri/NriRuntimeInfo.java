package io.driveralias.agent.nri;

import java.time.Duration;
import java.util.Objects;

/**
 * The runtime that took the plugin, as its Configure describes it: for the log (not escaped), and
 * the time it allows a plugin for each call.
 *
 * @param nriVersion     the runtime's NRI module version ("" where it does not say: before NRI 0.10)
 * @param requestTimeout what it allows a plugin per call (NRI's default of 2 s where it does not
 *                       say, as containerd 1.7 does not), at most an hour
 */
public record NriRuntimeInfo(String name, String version, String nriVersion, Duration requestTimeout) {

    public NriRuntimeInfo {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(nriVersion, "nriVersion");
        Objects.requireNonNull(requestTimeout, "requestTimeout");
    }
}

package io.driveralias.agent.docker;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.driveralias.agent.core.DockerApiVersions;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What the agent learns of a Docker daemon at each (re)connect: the API version both speak,
 * whether its {@code StartedAt} precedes its containers' processes, and its layout from
 * {@code /info} (data root, storage, default runtime, containerd).
 *
 * @param version             the API version to speak
 * @param stampsBeforeProcess Docker 26 and later stamp {@code StartedAt} before they make the process
 * @param info                {@code /info}, or {@link DaemonInfo#UNKNOWN} where it could not be read
 */
record DaemonHandshake(String version, boolean stampsBeforeProcess, DaemonInfo info) {

    /** The first API whose {@code /info} says which containerd Docker uses (Docker 27). */
    private static final String INFO_NAMES_CONTAINERD = "1.46";
    /** The first API of a Docker that stamps {@code StartedAt} before it makes the process (Docker 26). */
    private static final String STAMPS_BEFORE_PROCESS = "1.45";

    /** Asks {@code /version}, then {@code /info}; every answer read within {@code maxAnswer} bytes. */
    static DaemonHandshake with(DockerApi api, Optional<String> forcedVersion, int maxAnswer) throws ContainerRuntimeException {
        Map<String, String> answer = api.read("/version", maxAnswer, p -> topLevelStrings(p, Set.of("ApiVersion")));
        String daemon = answer.getOrDefault("ApiVersion", "");
        if (!DockerApiVersions.isVersion(daemon)) {
            throw new ContainerRuntimeException("the daemon did not say its API version");
        }
        if (DockerApiVersions.compare(daemon, DockerApiVersions.OLDEST_SUPPORTED) < 0) {
            throw new ContainerRuntimeException("Docker API " + daemon + " is older than " + DockerApiVersions.OLDEST_SUPPORTED
                    + " (Docker 1.12)");
        }
        String version = forcedVersion.orElse(DockerApiVersions.agreed(daemon));
        boolean stampsBefore = DockerApiVersions.compare(daemon, STAMPS_BEFORE_PROCESS) >= 0;
        // Which containerd Docker uses is in /info only from API 1.46 on: asked in that version where the daemon speaks it.
        String infoVersion = DockerApiVersions.compare(daemon, INFO_NAMES_CONTAINERD) >= 0 ? INFO_NAMES_CONTAINERD : version;
        DaemonInfo info;
        try {
            info = api.read("/v" + infoVersion + "/info", maxAnswer, DaemonInfo::read);
        } catch (ContainerRuntimeException e) {
            // Only the look at created containers without inspect needs it: inspect serves.
            info = DaemonInfo.UNKNOWN;
        }
        return new DaemonHandshake(version, stampsBefore, info);
    }

    /** The string members {@code wanted} of a JSON object; everything else skipped. */
    static Map<String, String> topLevelStrings(JsonParser p, Set<String> wanted) throws IOException {
        Map<String, String> found = new HashMap<>();
        JsonReading.requireObject(p, p.nextToken());
        JsonReading.strings(p, JsonToken.START_OBJECT, wanted::contains, found);
        return found;
    }
}

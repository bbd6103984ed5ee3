package io.driveralias.agent.docker;

import com.fasterxml.jackson.core.JsonParser;
import io.driveralias.agent.core.ContainerInfo;
import io.driveralias.agent.core.Printable;
import io.driveralias.agent.json.DescriptionTooLarge;
import io.driveralias.agent.live.ContainerRuntimeException;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Optional;

/**
 * A container Docker may be starting, described without asking anything that waits on it
 * (inspect waits on the container's lock for the whole start): its list entry, what its own files
 * in Docker's data directory say ({@code hostconfig.json}: read-only root, runtime, device
 * requests; {@code config.v2.json}: NVIDIA's two variables), and its root's layers where the
 * caller found them. Host files, written by the daemon, streamed and bounded.
 */
final class ContainerFiles {

    private ContainerFiles() {
    }

    /** Reads what one of Docker's files says, as it streams. */
    @FunctionalInterface
    interface FileReader<T> {
        T read(JsonParser parser) throws IOException;
    }

    /**
     * The container {@code listed}, described; empty where a file is missing or not what Docker
     * writes (the caller then asks Docker's inspect).
     */
    static Optional<ContainerInfo> describe(ContainerInspectParser.Listed listed, String rootDir, String storage,
                                            Optional<ContainerInfo.OverlayLayers> layers,
                                            ContainerInspectParser.Runtimes runtimes) throws ContainerRuntimeException {
        Optional<InputStream> hostConfig = LayerStore.hostConfig(rootDir, listed.id());
        if (hostConfig.isEmpty()) {
            return Optional.empty();
        }
        HostSettings host = parse("hostconfig.json", hostConfig.get(), p -> HostSettings.read(p, p.nextToken()));
        if (host.readOnlyRootfs().isEmpty()) {
            return Optional.empty();
        }
        // The cheapest look first: the environment (megabytes, if its owner wants) matters only
        // under a GPU runtime, where NVIDIA_VISIBLE_DEVICES asks it for the driver's files.
        List<String> env = List.of();
        if (ContainerInspectParser.environmentMatters(host, runtimes)) {
            Optional<InputStream> config = LayerStore.containerConfig(rootDir, listed.id());
            if (config.isEmpty()) {
                return Optional.empty();
            }
            env = parse("config.v2.json", config.get(), ContainerInspectParser::configEnvironment);
        }
        return Optional.of(ContainerInspectParser.created(listed, storage, layers, host, env, runtimes));
    }

    /** One of Docker's own files, read as it streams (its owner decides its size); closed here. */
    static <T> T parse(String what, InputStream file, FileReader<T> reader) throws ContainerRuntimeException {
        try (InputStream in = file; JsonParser parser = JsonReading.parser(in)) {
            return reader.read(parser);
        } catch (DescriptionTooLarge e) {
            throw new ContainerRuntimeException.TooLarge(what + ": " + e.getMessage());
        } catch (IOException e) {
            String why = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
            throw new ContainerRuntimeException(what + ": not JSON: " + Printable.of(String.valueOf(why)));
        }
    }
}

package io.driveralias.agent.config;

/** A usage or configuration error: the agent exits 2 with this message. */
public final class ConfigException extends Exception {

    public ConfigException(String message) {
        super(message);
    }
}

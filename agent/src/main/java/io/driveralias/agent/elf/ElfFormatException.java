package io.driveralias.agent.elf;

/** The bytes are not an ELF file the agent can trust to name a SONAME. */
public final class ElfFormatException extends Exception {

    public ElfFormatException(String message) {
        super(message);
    }
}

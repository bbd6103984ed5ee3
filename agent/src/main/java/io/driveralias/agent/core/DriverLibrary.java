package io.driveralias.agent.core;

import java.util.Objects;

/**
 * A versioned driver file found in a library directory, with the SONAME read from its ELF
 * dynamic section. Example: {@code libcuda.so.535.104.05} with SONAME {@code libcuda.so.1}.
 */
public record DriverLibrary(String directory, String fileName, String soname) {

    public DriverLibrary {
        Objects.requireNonNull(directory, "directory");
        if (!FileNames.isPlainName(fileName)) {
            throw new IllegalArgumentException("not a plain file name: " + fileName);
        }
        if (!FileNames.isPlainName(soname)) {
            throw new IllegalArgumentException("not a plain SONAME: " + soname);
        }
    }

    /** {@code libcuda.so.1 -> libcuda.so}: the name a linker looks for with {@code -lcuda}. */
    public String devLinkName() {
        int so = soname.indexOf(".so");
        return so < 0 ? null : soname.substring(0, so + 3);
    }
}

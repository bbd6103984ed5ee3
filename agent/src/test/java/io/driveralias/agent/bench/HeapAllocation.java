package io.driveralias.agent.bench;

import io.driveralias.agent.testing.AgentProcess;
import io.driveralias.agent.testing.Processes;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How many bytes a JVM run with the serial collector has allocated so far, from outside: every
 * young collection empties eden, and its GC log ({@code -Xlog:gc+heap=info}) says how full eden
 * was before and after each; what eden holds now comes from {@code jcmd <pid> GC.heap_info}
 * (its bottom and top addresses). Objects allocated straight into the old generation (larger
 * than eden) are not counted.
 */
final class HeapAllocation {

    /** The option that makes the log this reads. */
    static String logOption(Path log) {
        return "-Xlog:gc+heap=info:file=" + log;
    }

    private static final Pattern EDEN_CHANGE = Pattern.compile("GC\\((\\d+)\\) DefNew: .*? Eden: (\\d+)K\\(\\d+K\\)->(\\d+)K\\(");
    private static final Pattern EDEN_NOW = Pattern.compile("eden space \\d+K,\\s+\\d+% used \\[0x([0-9a-f]+), 0x([0-9a-f]+),");

    private HeapAllocation() {
    }

    /** Bytes allocated since the JVM started; NaN when the log or jcmd does not tell. */
    static double allocatedSoFar(long pid, Path log) {
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                Collections before = collections(log);
                long edenNow = edenUsed(pid);
                Collections after = collections(log);
                if (before.count() == after.count()) {
                    return after.allocatedUntilLast() + (edenNow - after.edenAfterLast());
                }
                // A collection between the two looks: look again.
            } catch (IOException | RuntimeException e) {
                return Double.NaN;
            }
        }
        return Double.NaN;
    }

    /** The sum of what each collection found in eden that the one before had not left there. */
    private record Collections(int count, long allocatedUntilLast, long edenAfterLast) {
    }

    private static Collections collections(Path log) throws IOException {
        long allocated = 0;
        long leftBefore = 0;
        int count = 0;
        for (String line : Files.readAllLines(log)) {
            Matcher m = EDEN_CHANGE.matcher(line);
            if (m.find()) {
                long before = Long.parseLong(m.group(2)) * 1024;
                long after = Long.parseLong(m.group(3)) * 1024;
                allocated += before - leftBefore;
                leftBefore = after;
                count++;
            }
        }
        return new Collections(count, allocated, leftBefore);
    }

    private static long edenUsed(long pid) {
        Path jcmd = Path.of(AgentProcess.java()).resolveSibling("jcmd");
        String out = Processes.check(List.of(jcmd.toString(), String.valueOf(pid), "GC.heap_info"));
        Matcher m = EDEN_NOW.matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("no eden in: " + out);
        }
        return Long.parseUnsignedLong(m.group(2), 16) - Long.parseUnsignedLong(m.group(1), 16);
    }
}

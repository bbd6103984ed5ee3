package io.driveralias.agent.ldcache;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/** Each distinct string once, NUL-terminated, at offsets from the new header. */
final class StringTable {
    private final long start;
    private final Map<String, Integer> offsets = new LinkedHashMap<>();
    private int size;

    StringTable(long start) {
        this.start = start;
    }

    void add(String s) {
        if (!offsets.containsKey(s)) {
            offsets.put(s, (int) (start + size));
            size += s.length() + 1;
        }
    }

    int offset(String s) {
        return offsets.get(s);
    }

    int size() {
        return size;
    }

    byte[] bytes() {
        byte[] bytes = new byte[size];
        int at = 0;
        for (String s : offsets.keySet()) {
            byte[] encoded = s.getBytes(StandardCharsets.ISO_8859_1);
            System.arraycopy(encoded, 0, bytes, at, encoded.length);
            at += encoded.length + 1;
        }
        return bytes;
    }
}

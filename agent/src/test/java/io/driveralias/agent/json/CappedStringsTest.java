package io.driveralias.agent.json;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CappedStringsTest {

    private static final JsonFactory JSON = new JsonFactory();
    private static final long SEED = Long.getLong("fuzz.seed", 20261201L);

    /** The tokens of a document, strings and names as text. */
    private static List<String> tokens(InputStream in) throws IOException {
        List<String> out = new ArrayList<>();
        try (JsonParser p = JSON.createParser(in)) {
            for (JsonToken t = p.nextToken(); t != null; t = p.nextToken()) {
                out.add(t + (t == JsonToken.FIELD_NAME || t == JsonToken.VALUE_STRING || t.isNumeric() ? ":" + p.getText() : ""));
            }
        }
        return out;
    }

    private static InputStream capped(String json, int cap) {
        return new CappedStrings(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8)), cap);
    }

    @Test
    void shortStringsPassUnchanged() throws IOException {
        String json = "{\"env\":[\"NVIDIA_VISIBLE_DEVICES=all\",\"A=\\\"b\\\"\\u00e9\"],\"n\":12,\"ok\":true}";
        assertThat(tokens(capped(json, 64))).isEqualTo(tokens(new ByteArrayInputStream(json.getBytes(StandardCharsets.UTF_8))));
    }

    @ParameterizedTest
    @CsvSource({"8", "9", "10", "11", "12", "13"})
    void aLongStringIsCutOnACharacterBoundaryAndMarked(int cap) throws IOException {
        // é (2 bytes), an escaped quote, a \\u escape and a 4-byte emoji around the cap.
        String value = "abcdefgé\\\"\\u00e9xyz😀tail";
        List<String> t = tokens(capped("[\"" + value + "\"]", cap));
        String text = t.get(1).substring("VALUE_STRING:".length());
        assertThat(CappedStrings.isCut(text)).isTrue();
        String decoded = "abcdefgé\"éxyz😀tail";
        assertThat(decoded).startsWith(text.substring(0, text.length() - 1));
        assertThat(text.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(cap + 6 + 1);
    }

    @Test
    void namesAreCutToo() throws IOException {
        String name = "k".repeat(10_000);
        List<String> t = tokens(capped("{\"" + name + "\":\"v\"}", 100));
        assertThat(t.get(1)).startsWith("FIELD_NAME:k").endsWith(String.valueOf(CappedStrings.MARK)).hasSize("FIELD_NAME:".length() + 101);
        assertThat(t.get(2)).isEqualTo("VALUE_STRING:v");
    }

    @Test
    void aHugeStringCostsNoMoreThanTheCap() throws IOException {
        // 64 MB of one string, never in memory: the parser sees 4 KiB of it.
        long size = 64L << 20;
        InputStream huge = new InputStream() {
            private long pos;
            private final byte[] head = "{\"Env\":[\"X=".getBytes(StandardCharsets.US_ASCII);
            private final byte[] tail = "\",\"NVIDIA_VISIBLE_DEVICES=0\"]}".getBytes(StandardCharsets.US_ASCII);

            @Override
            public int read() {
                long total = head.length + size + tail.length;
                if (pos >= total) {
                    return -1;
                }
                long i = pos++;
                if (i < head.length) {
                    return head[(int) i];
                }
                if (i < head.length + size) {
                    return 'a';
                }
                return tail[(int) (i - head.length - size)];
            }
        };
        CappedStrings in = new CappedStrings(huge, 4096);
        List<String> t = tokens(in);
        assertThat(t.get(3)).hasSize("VALUE_STRING:".length() + 4096 + 1);
        assertThat(t.get(4)).isEqualTo("VALUE_STRING:NVIDIA_VISIBLE_DEVICES=0");
        assertThat(in.cuts()).isEqualTo(1);
    }

    /** Random documents: the capped text parses wherever the original does, and each string is itself or its marked prefix. */
    @Test
    void randomDocumentsKeepTheirShape() throws IOException {
        Random random = new Random(SEED);
        for (int round = 0; round < 2_000; round++) {
            StringBuilder doc = new StringBuilder("[");
            List<String> strings = new ArrayList<>();
            int n = random.nextInt(6);
            for (int i = 0; i < n; i++) {
                String s = randomString(random);
                strings.add(s);
                doc.append(i == 0 ? "" : ",").append('"').append(escape(s)).append('"');
            }
            doc.append(']');
            int cap = 1 + random.nextInt(24);
            List<String> t = tokens(capped(doc.toString(), cap));
            for (int i = 0; i < n; i++) {
                String got = t.get(i + 1).substring("VALUE_STRING:".length());
                String want = strings.get(i);
                if (CappedStrings.isCut(got)) {
                    assertThat(want).as("seed %d round %d", SEED, round).startsWith(got.substring(0, got.length() - 1));
                    assertThat(escape(want).getBytes(StandardCharsets.UTF_8).length).isGreaterThan(cap);
                } else {
                    assertThat(got).as("seed %d round %d", SEED, round).isEqualTo(want);
                }
            }
        }
    }

    /** Mutated documents: whatever the bytes, only the parser's own error, never a hang or anything else. */
    @Test
    void mutatedDocumentsFailOnlyAsJson() {
        Random random = new Random(SEED);
        byte[] base = "{\"a\":[\"x\\\"y\\u00e9z\",1.5e3,{\"b\":null}],\"é\":\"😀😀😀😀\"}".getBytes(StandardCharsets.UTF_8);
        for (int round = 0; round < 5_000; round++) {
            byte[] doc = base.clone();
            for (int k = 0; k < 1 + random.nextInt(4); k++) {
                doc[random.nextInt(doc.length)] = (byte) random.nextInt(256);
            }
            try {
                tokens(new CappedStrings(new ByteArrayInputStream(doc), 1 + random.nextInt(8)));
            } catch (IOException expected) {
                // Jackson's error: fine.
            }
        }
    }

    @Test
    void aCapBelowOneIsRefused() {
        assertThatThrownBy(() -> new CappedStrings(InputStream.nullInputStream(), 0)).isInstanceOf(IllegalArgumentException.class);
    }

    private static String randomString(Random random) {
        String[] pieces = {"a", "é", "\"", "\\", "😀", "\n", "\u0001", "NVIDIA_", "=", "x"};
        StringBuilder s = new StringBuilder();
        int n = random.nextInt(20);
        for (int i = 0; i < n; i++) {
            s.append(pieces[random.nextInt(pieces.length)]);
        }
        return s.toString();
    }

    private static String escape(String s) {
        StringBuilder out = new StringBuilder();
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.toString();
    }
}

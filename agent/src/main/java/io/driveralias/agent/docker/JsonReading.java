package io.driveralias.agent.docker;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.driveralias.agent.json.CappedStrings;
import io.driveralias.agent.json.DescriptionTooLarge;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Small steps of reading JSON as it streams: each takes the token that starts a value and
 * consumes the whole value, whatever its type. A value of another type than expected counts
 * as absent and is skipped.
 */
final class JsonReading {

    /** No answer of Docker's is larger: a longer string is not Docker's, and refused. */
    static final int MAX_ANSWER = 8 << 20;
    /** Docker's answers nest a few levels deep: far deeper is refused before it costs a stack. */
    static final int MAX_DEPTH = 64;
    /**
     * The most of any one string the parser ever holds: every string of an answer is cut there as
     * it streams ({@link CappedStrings}), so an environment value of megabytes costs a few KiB.
     */
    static final int STRING_CAP = 8192;
    /** Field names (a label's key is one) are the container owner's: never interned, nor kept in a table. */
    static final JsonFactory FACTORY = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).maxStringLength(STRING_CAP + 16)
                    .build())
            .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
            .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
            .build();

    /** A parser of an answer or file of Docker's, every string in it cut at {@link #STRING_CAP}. */
    static JsonParser parser(InputStream json) throws IOException {
        return FACTORY.createParser(new CappedStrings(json, STRING_CAP));
    }

    /** A string the agent keeps: within its bound, else the description is refused. */
    static String kept(String text, String what) throws DescriptionTooLarge {
        if (CappedStrings.isCut(text) || text.length() > MAX_KEPT) {
            throw new DescriptionTooLarge(what + " longer than " + MAX_KEPT + " bytes");
        }
        return text;
    }

    /** The longest string kept (a path, an NVIDIA variable). */
    static final int MAX_KEPT = 4096;

    private JsonReading() {
    }

    /** The string members of an object whose names {@code wanted} accepts; anything else is skipped. */
    static void strings(JsonParser p, JsonToken start, Predicate<String> wanted, Map<String, String> into)
            throws IOException {
        if (start != JsonToken.START_OBJECT) {
            p.skipChildren();
            return;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String key = p.currentName();
            if (p.nextToken() == JsonToken.VALUE_STRING && wanted.test(key)) {
                into.put(key, p.getText());
            } else {
                p.skipChildren();
            }
        }
    }

    /** Whether the current string begins with one of the prefixes, looked at in the parser's own buffer. */
    static boolean startsWithAny(JsonParser p, List<String> prefixes) throws IOException {
        char[] chars = p.getTextCharacters();
        int offset = p.getTextOffset();
        int length = p.getTextLength();
        // By index: an iterator for each string would be the only allocation of a long array.
        for (int i = 0; i < prefixes.size(); i++) {
            String prefix = prefixes.get(i);
            if (length >= prefix.length() && regionMatches(chars, offset, prefix)) {
                return true;
            }
        }
        return false;
    }

    private static boolean regionMatches(char[] chars, int offset, String prefix) {
        for (int i = 0; i < prefix.length(); i++) {
            if (chars[offset + i] != prefix.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** Another item of an array; false at its end (and at the end of input, which Jackson reports as an error first). */
    static boolean item(JsonToken t) {
        return t != null && t != JsonToken.END_ARRAY;
    }

    /** The strings of an array (other items skipped); empty for anything else. */
    static List<String> texts(JsonParser p, JsonToken start) throws IOException {
        if (start != JsonToken.START_ARRAY) {
            p.skipChildren();
            return List.of();
        }
        List<String> texts = new ArrayList<>();
        for (JsonToken t = p.nextToken(); item(t); t = p.nextToken()) {
            if (t == JsonToken.VALUE_STRING) {
                texts.add(p.getText());
            } else {
                p.skipChildren();
            }
        }
        return texts;
    }

    static String firstText(JsonParser p, JsonToken start) throws IOException {
        List<String> texts = texts(p, start);
        return texts.isEmpty() ? "" : texts.getFirst();
    }

    /** The current value if it is a string, else "" (and the value skipped). */
    static String text(JsonParser p, JsonToken value) throws IOException {
        if (value == JsonToken.VALUE_STRING) {
            return p.getText();
        }
        p.skipChildren();
        return "";
    }

    static void requireObject(JsonParser p, JsonToken token) throws IOException {
        if (token != JsonToken.START_OBJECT) {
            throw new JsonParseException(p, "not a JSON object");
        }
    }

    /** Reads one field of an object: the parser is on its value, which the reader consumes or skips. */
    @FunctionalInterface
    interface FieldReader {
        void read(String field, JsonToken value) throws IOException;
    }

    /** Hands each field of the object that {@code start} opens to {@code reader}; anything else is skipped. */
    static void fields(JsonParser p, JsonToken start, FieldReader reader) throws IOException {
        if (start != JsonToken.START_OBJECT) {
            p.skipChildren();
            return;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            reader.read(field, p.nextToken());
        }
    }
}

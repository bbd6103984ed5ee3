package io.driveralias.agent.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PrintableTest {

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
        "ml/train-0                     | ml/train-0",
        "\"a\nINFO fake line\"          | a\\nINFO fake line",
        "\"cr\r\"                       | cr\\r",
        "back\\slash                    | back\\\\slash",
        "\"esc\u001b[31m\"              | esc\\u001b[31m",
        "\"nel\u0085 ls\u2028 ps\u2029\" | nel\\u0085 ls\\u2028 ps\\u2029",
        "\"bidi\u202egnp.exe\"          | bidi\\u202egnp.exe",
        "ünïcode names stay           | ünïcode names stay"})
    void escapesWhatCouldForgeOrHideALine(String raw, String printed) {
        assertThat(Printable.of(raw)).isEqualTo(printed);
    }

    @Test
    void capsLengthAndSaysHowMuchWasCut() {
        String printed = Printable.of("x".repeat(100_000));
        assertThat(printed).startsWith("x".repeat(Printable.MAX_FIELD)).endsWith("...(99744 more chars)");
        assertThat(printed.length()).isLessThan(Printable.MAX_FIELD + 30);
    }

    @Test
    void listsAreCutWithACount() {
        List<String> names = IntStream.range(0, 65_000).mapToObj(i -> "libnvidia-x.so." + i).toList();
        String printed = Printable.list(names);
        assertThat(printed).startsWith("libnvidia-x.so.0, libnvidia-x.so.1").endsWith(" and 64990 more");
        assertThat(printed.length()).isLessThan(300);
        assertThat(Printable.list(List.of("a", "b"))).isEqualTo("a, b");
        assertThat(Printable.list(Collections.emptyList())).isEmpty();
    }

    @Test
    void noInputEverYieldsALineBreakOrExceedsTheBound() {
        Random random = new Random(20261130L);
        for (int round = 0; round < 2_000; round++) {
            char[] text = new char[random.nextInt(2_000)];
            for (int i = 0; i < text.length; i++) {
                text[i] = (char) random.nextInt(random.nextBoolean() ? 0x100 : 0x10000);
            }
            String printed = Printable.of(new String(text));
            assertThat(printed).doesNotContain("\n", "\r", "\u2028", "\u2029", "\u0085", "\u001b");
            assertThat(printed.length()).isLessThanOrEqualTo(Printable.MAX_FIELD + 6 + 30);
        }
    }
}

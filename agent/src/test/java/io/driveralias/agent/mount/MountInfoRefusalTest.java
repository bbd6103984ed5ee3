package io.driveralias.agent.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Lines and inputs the parser must refuse, and how it says so. */
class MountInfoRefusalTest {

    private static final String SHORT_LINE = "1 2 0:0 / / rw - t s rw\n";
    private static final String GOOD = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw";

    static Stream<Arguments> badLines() {
        return Stream.of(
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root", "at least 10 fields"),
                Arguments.of(" ", "at least 10 fields"),
                Arguments.of("garbage", "at least 10 fields"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw master:1 x ext3 /dev/root rw", "no '-' separator"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw master:1 -- ext3 /dev/root rw", "no '-' separator"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw extra", "3 fields after"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw master:1 master:2 - ext3 rw", "3 fields after"),
                Arguments.of("x6 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "mount ID is not a number"),
                Arguments.of("-6 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "mount ID is not a number"),
                Arguments.of("+6 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "mount ID is not a number"),
                Arguments.of("\u0663\u0666 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "mount ID is not a number"),
                Arguments.of("2147483648 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "mount ID is out of range"),
                Arguments.of("99999999999 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "mount ID is out of range"),
                Arguments.of("36 3a 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "parent ID is not a number"),
                Arguments.of("36 35 980 /mnt1 /mnt2 rw - ext3 /dev/root rw", "not major:minor"),
                Arguments.of("36 35 98: /mnt1 /mnt2 rw - ext3 /dev/root rw", "minor device number"),
                Arguments.of("36 35 :0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "major device number"),
                Arguments.of("36 35 1:2:3 /mnt1 /mnt2 rw - ext3 /dev/root rw", "minor device number"),
                Arguments.of("36 35 a:b /mnt1 /mnt2 rw - ext3 /dev/root rw", "major device number"),
                Arguments.of("36 35 98:0 /mnt1  rw - ext3 /dev/root rw", "mount point is empty"),
                Arguments.of("36 35 98:0  /mnt2 rw - ext3 /dev/root rw", "root is empty"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2  master:1 - ext3 /dev/root rw", "mount options is empty"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw master:1  - ext3 /dev/root rw", "optional field is empty"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw -  /dev/root rw", "filesystem type is empty"),
                Arguments.of("36 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root ", "super options is empty"),
                Arguments.of("36\t35 35 98:0 /mnt1 /mnt2 rw - ext3 /dev/root rw", "mount ID is not a number"));
    }

    @ParameterizedTest
    @MethodSource("badLines")
    void badLineIsRefusedWithItsLineNumber(String bad, String reason) {
        String text = GOOD + "\n" + GOOD + "\n" + bad + "\n" + GOOD + "\n";
        assertThatThrownBy(() -> MountInfoParser.parse(text))
                .isInstanceOfSatisfying(MountInfoException.class, e -> {
                    assertThat(e.lineNumber()).isEqualTo(3);
                    assertThat(e.getMessage()).startsWith("mountinfo line 3: ").contains(reason);
                });
    }

    @Test
    void messageDoesNotQuoteTheHostileLine() {
        String hostile = "36 35 98:0 /mnt1 /\u001b[2J\u001b[31mFAKE-LOG-LINE rw - ext3";
        assertThatThrownBy(() -> MountInfoParser.parse(hostile))
                .isInstanceOf(MountInfoException.class)
                .message().doesNotContain("FAKE-LOG-LINE").doesNotContain("\u001b");
    }

    @Test
    void lineNumbersCountSkippedEmptyLines() {
        String text = "\n\n" + GOOD + "\nnot a mount\n";
        assertThatThrownBy(() -> MountInfoParser.parse(text))
                .isInstanceOfSatisfying(MountInfoException.class,
                        e -> assertThat(e.lineNumber()).isEqualTo(4));
    }



    @Test
    void streamOverFourMibIsRefused() {
        byte[] big = new byte[MountInfoParser.MAX_BYTES + 1];
        Arrays.fill(big, (byte) 'x');
        assertThatThrownBy(() -> MountInfoParser.parse(new ByteArrayInputStream(big)))
                .isInstanceOfSatisfying(MountInfoException.class, e -> {
                    assertThat(e.getMessage()).isEqualTo("mountinfo larger than 4 MiB");
                    assertThat(e.lineNumber()).isZero();
                });
    }

    @Test
    void stringOverFourMibIsRefused() {
        String big = "x".repeat(MountInfoParser.MAX_BYTES + 1);
        assertThatThrownBy(() -> MountInfoParser.parse(big))
                .isInstanceOf(MountInfoException.class)
                .hasMessage("mountinfo larger than 4 MiB");
    }

    @Test
    void exactlyFourMibIsAccepted() throws Exception {
        // Pad one mount point so the whole text is exactly MAX_BYTES long.
        String prefix = "1 2 0:0 / /";
        String suffix = " rw - t s rw\n";
        StringBuilder text = new StringBuilder(MountInfoParser.MAX_BYTES);
        int lines = 60_000;
        for (int i = 1; i < lines; i++) {
            text.append(SHORT_LINE);
        }
        int padding = MountInfoParser.MAX_BYTES - text.length() - prefix.length() - suffix.length();
        text.append(prefix).append("p".repeat(padding)).append(suffix);
        assertThat(text).hasSize(MountInfoParser.MAX_BYTES);

        byte[] bytes = text.toString().getBytes(StandardCharsets.ISO_8859_1);
        assertThat(MountInfoParser.parse(new ByteArrayInputStream(bytes))).hasSize(lines);
    }

    @Test
    void endlessStreamIsNotReadPastTheBound() {
        CountingEndlessStream endless = new CountingEndlessStream();
        assertThatThrownBy(() -> MountInfoParser.parse(endless))
                .isInstanceOf(MountInfoException.class);
        assertThat(endless.served).isEqualTo(MountInfoParser.MAX_BYTES + 1L);
    }

    @Test
    void moreThanOneHundredThousandMountsAreRefused() {
        String text = SHORT_LINE.repeat(MountInfoParser.MAX_MOUNTS + 1);
        assertThatThrownBy(() -> MountInfoParser.parse(text))
                .isInstanceOfSatisfying(MountInfoException.class, e -> {
                    assertThat(e.lineNumber()).isEqualTo(MountInfoParser.MAX_MOUNTS + 1);
                    assertThat(e.getMessage()).contains("more than 100000 mounts");
                });
    }

    @Test
    void oneHundredThousandMountsAreAccepted() throws Exception {
        assertThat(MountInfoParser.parse(SHORT_LINE.repeat(MountInfoParser.MAX_MOUNTS)))
                .hasSize(MountInfoParser.MAX_MOUNTS);
    }

    /** Like a hostile FUSE file: never ends. Counts what the parser asked for. */
    private static final class CountingEndlessStream extends InputStream {
        long served;

        @Override
        public int read() {
            served++;
            return ' ';
        }

        @Override
        public int read(byte[] b, int off, int len) {
            Arrays.fill(b, off, off + len, (byte) ' ');
            served += len;
            return len;
        }
    }
}

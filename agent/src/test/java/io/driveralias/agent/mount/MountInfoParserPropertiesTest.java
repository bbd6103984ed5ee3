package io.driveralias.agent.mount;

import static org.assertj.core.api.Assertions.assertThat;

import io.driveralias.agent.testing.SeededCases;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Whatever a container's creator puts in its mount table, the parser either returns entries or
 * refuses with {@link MountInfoException}: no other exception may escape into the agent.
 *
 * <p>Each case is one seed ({@link SeededCases}): the seed in a failing case's name rebuilds its
 * input exactly.
 */
class MountInfoParserPropertiesTest {

    /** The chars that steer the parser: separators, escapes, digits, line ends. */
    private static final String INTERESTING = " -:\\\n\r\t01234567890/";
    /** Backslash sequences, whole and cut short, that a field may end with. */
    private static final List<String> ESCAPE_FRAGMENTS =
            List.of("\\", "\\0", "\\04", "\\040", "\\8", "\\400", "\\\\", "\\377", "\\0a");

    private static final int OPTIONAL_SLOT = 6;

    static Stream<Long> seeds3000() {
        return SeededCases.seeds(3000);
    }

    static Stream<Long> seeds1500() {
        return SeededCases.seeds(1500);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds3000")
    void randomTextOnlyEverFailsWithMountInfoException(long seed) {
        assertParsesOrRefuses(hostileText(new SplittableRandom(seed)));
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds3000")
    void mutatedRealLinesOnlyEverFailWithMountInfoException(long seed) {
        assertParsesOrRefuses(mutatedLine(new SplittableRandom(seed)));
    }

    /** Any bytes the kernel could print as a path come back unchanged once unescaped. */
    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds1500")
    void escapedPathsRoundTrip(long seed) throws MountInfoException {
        SplittableRandom random = new SplittableRandom(seed);
        String mountPoint = path(random);
        String root = path(random);
        int optionalFields = random.nextInt(6);
        String line = "7 1 8:1 " + kernelEscape(root) + " " + kernelEscape(mountPoint) + " rw"
                + " master:1".repeat(optionalFields) + " - ext4 /dev/sda1 rw";

        List<MountEntry> mounts = MountInfoParser.parse(line + "\n");

        assertThat(mounts).hasSize(1);
        assertThat(mounts.getFirst().mountPoint()).isEqualTo(mountPoint);
        assertThat(mounts.getFirst().root()).isEqualTo(root);
        assertThat(mounts.getFirst().optionalFields()).hasSize(optionalFields);
    }

    private static void assertParsesOrRefuses(String text) {
        int lines = (int) text.chars().filter(c -> c == '\n').count() + 1;
        try {
            assertThat(MountInfoParser.parse(text)).hasSizeLessThanOrEqualTo(lines);
        } catch (MountInfoException e) {
            assertThat(e.lineNumber()).isBetween(1, lines);
        }
    }

    /** As the kernel's mangle() does: space, tab, newline and backslash become octal. */
    private static String kernelEscape(String path) {
        StringBuilder out = new StringBuilder();
        for (char c : path.toCharArray()) {
            if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
                out.append('\\').append(String.format("%03o", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    /** Any Latin-1 text, text of the steering chars only, or lines shaped like mountinfo, a third each. */
    private static String hostileText(SplittableRandom random) {
        return switch (random.nextInt(3)) {
            case 0 -> SeededCases.string(random, "", true, 0, 300);
            case 1 -> SeededCases.string(random, INTERESTING + "abmsr,", false, 0, 300);
            default -> lineShaped(random);
        };
    }

    /**
     * Random bytes seldom get past the ID and separator checks. These lines follow the field
     * layout, each field usually plausible and sometimes junk, so they reach the path fields
     * and their escapes.
     */
    private static String lineShaped(SplittableRandom random) {
        return String.join("\n", SeededCases.listOf(random, 1, 3, r -> {
            List<String> fields = new ArrayList<>();
            fields.add(mostly(r, String.valueOf(r.nextInt(5001))));
            fields.add(mostly(r, String.valueOf(r.nextInt(5001))));
            fields.add(mostly(r, SeededCases.oneOf(r, List.of("98:0", "259:1", "0:52"))));
            fields.add(mostly(r, "/" + SeededCases.string(r, INTERESTING, true, 0, 12)));
            fields.add(mostly(r, "/" + SeededCases.string(r, INTERESTING, true, 0, 12)));
            fields.add(mostly(r, SeededCases.oneOf(r, List.of("rw", "ro,nosuid", "rw,relatime"))));
            String optional = String.join(" ", SeededCases.listOf(r, 0, 3,
                    o -> mostly(o, SeededCases.oneOf(o, List.of("master:1", "shared:2", "unbindable")))));
            if (!optional.isEmpty()) {
                fields.add(optional); // no optional fields, not an empty one
            }
            fields.add(mostly(r, "-"));
            fields.add(mostly(r, "/" + SeededCases.string(r, INTERESTING, true, 0, 12)));
            fields.add(mostly(r, "/" + SeededCases.string(r, INTERESTING, true, 0, 12)));
            fields.add(mostly(r, SeededCases.oneOf(r, List.of("rw", "ro,nosuid", "rw,relatime"))));
            return String.join(" ", fields);
        }));
    }

    /** Usually the plausible field (6 in 10); sometimes it ends in a cut-short escape (2), is junk (1) or empty (1). */
    private static String mostly(SplittableRandom random, String plausible) {
        int pick = random.nextInt(10);
        if (pick < 6) {
            return plausible;
        }
        if (pick < 8) {
            return plausible + SeededCases.oneOf(random, ESCAPE_FRAGMENTS);
        }
        return pick == 8 ? SeededCases.string(random, INTERESTING, false, 0, 6) : "";
    }

    private static String path(SplittableRandom random) {
        return "/" + SeededCases.string(random, INTERESTING, true, 1, 40);
    }

    /** A line of a real mountinfo fixture with one to eight edits. */
    private static String mutatedLine(SplittableRandom random) {
        String fixture = SeededCases.oneOf(random, Fixtures.ALL);
        String result = SeededCases.oneOf(random, Fixtures.text(fixture).lines().toList());
        for (Mutation m : SeededCases.listOf(random, 1, 8, r -> new Mutation(SeededCases.oneOf(r, List.of(Kind.values())),
                r.nextInt(100_001), r.nextBoolean() ? INTERESTING.charAt(r.nextInt(INTERESTING.length()))
                        : (char) r.nextInt(256)))) {
            result = m.applyTo(result);
        }
        return result;
    }

    private enum Kind { INSERT, DELETE, REPLACE, DROP_FIELD, DOUBLE_FIELD, ESCAPE_TAIL, CUT }

    private record Mutation(Kind kind, int where, char c) {

        String applyTo(String s) {
            if (s.isEmpty()) {
                return String.valueOf(c);
            }
            int at = where % s.length();
            return switch (kind) {
                case INSERT -> s.substring(0, at) + c + s.substring(at);
                case DELETE -> s.substring(0, at) + s.substring(at + 1);
                case REPLACE -> s.substring(0, at) + c + s.substring(at + 1);
                case DROP_FIELD, DOUBLE_FIELD, ESCAPE_TAIL -> editField(s);
                case CUT -> s.substring(0, at);
            };
        }

        private String editField(String s) {
            String[] fields = s.split(" ", -1);
            int i = where % fields.length;
            List<String> out = new ArrayList<>(List.of(fields));
            switch (kind) {
                case DROP_FIELD -> out.remove(i);
                case DOUBLE_FIELD -> out.add(i, fields[i]);
                default -> out.set(i, fields[i] + ESCAPE_FRAGMENTS.get(c % ESCAPE_FRAGMENTS.size()));
            }
            return String.join(" ", out);
        }
    }
}

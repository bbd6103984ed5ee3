package io.driveralias.agent.mount;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;

/**
 * Whatever a container's creator puts in its mount table, the parser either returns entries or
 * refuses with {@link MountInfoException}: no other exception may escape into the agent.
 */
class MountInfoParserPropertiesTest {

    /** The chars that steer the parser: separators, escapes, digits, line ends. */
    private static final String INTERESTING = " -:\\\n\r\t01234567890/";
    /** Backslash sequences, whole and cut short, that a field may end with. */
    private static final List<String> ESCAPE_FRAGMENTS =
            List.of("\\", "\\0", "\\04", "\\040", "\\8", "\\400", "\\\\", "\\377", "\\0a");

    private static final int OPTIONAL_SLOT = 6;

    @Property(tries = 2000)
    void randomTextOnlyEverFailsWithMountInfoException(@ForAll("hostileText") String text) {
        assertParsesOrRefuses(text);
    }

    @Property(tries = 2000)
    void mutatedRealLinesOnlyEverFailWithMountInfoException(@ForAll("mutatedLines") String text) {
        assertParsesOrRefuses(text);
    }

    /** Any bytes the kernel could print as a path come back unchanged once unescaped. */
    @Property(tries = 1000)
    void escapedPathsRoundTrip(@ForAll("paths") String mountPoint, @ForAll("paths") String root,
            @ForAll @IntRange(max = 5) int optionalFields) throws MountInfoException {
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

    @Provide
    Arbitrary<String> hostileText() {
        Arbitrary<String> anyBytes = Arbitraries.strings().withCharRange('\u0000', '\u00ff').ofMaxLength(300);
        Arbitrary<String> steering = Arbitraries.strings().withChars(INTERESTING + "abmsr,").ofMaxLength(300);
        return Arbitraries.oneOf(anyBytes, steering, lineShaped());
    }

    /**
     * Random bytes seldom get past the ID and separator checks. These lines follow the field
     * layout, each field usually plausible and sometimes junk, so they reach the path fields
     * and their escapes.
     */
    private static Arbitrary<String> lineShaped() {
        Arbitrary<String> number = mostly(Arbitraries.integers().between(0, 5000).map(String::valueOf));
        Arbitrary<String> device = mostly(Arbitraries.of("98:0", "259:1", "0:52"));
        Arbitrary<String> path = mostly(Arbitraries.strings().withChars(INTERESTING).withCharRange('\u0000', '\u00ff')
                .ofMaxLength(12).map(s -> "/" + s));
        Arbitrary<String> options = mostly(Arbitraries.of("rw", "ro,nosuid", "rw,relatime"));
        Arbitrary<String> optional = mostly(Arbitraries.of("master:1", "shared:2", "unbindable"))
                .list().ofMaxSize(3).map(fields -> String.join(" ", fields));
        Arbitrary<String> separator = mostly(Arbitraries.just("-"));
        Arbitrary<String> line = Combinators.combine(List.of(number, number, device, path, path, options,
                        optional, separator, path, path, options))
                .as(fields -> {
                    List<String> present = new ArrayList<>(fields);
                    if (present.get(OPTIONAL_SLOT).isEmpty()) {
                        present.remove(OPTIONAL_SLOT); // no optional fields, not an empty one
                    }
                    return String.join(" ", present);
                });
        return line.list().ofMinSize(1).ofMaxSize(3).map(lines -> String.join("\n", lines));
    }

    /** Usually a plausible field; sometimes junk, empty, or ending in a cut-short escape. */
    private static Arbitrary<String> mostly(Arbitrary<String> plausible) {
        return Arbitraries.frequencyOf(
                Tuple.of(6, plausible),
                Tuple.of(2, plausible.flatMap(p -> Arbitraries.of(ESCAPE_FRAGMENTS).map(tail -> p + tail))),
                Tuple.of(1, Arbitraries.strings().withChars(INTERESTING).ofMaxLength(6)),
                Tuple.of(1, Arbitraries.just("")));
    }

    @Provide
    Arbitrary<String> paths() {
        return Arbitraries.strings().withCharRange('\u0000', '\u00ff').withChars(INTERESTING)
                .ofMinLength(1).ofMaxLength(40)
                .map(s -> "/" + s);
    }

    @Provide
    Arbitrary<String> mutatedLines() {
        Arbitrary<String> line = Arbitraries.of(Fixtures.ALL)
                .map(name -> Fixtures.text(name).lines().toList())
                .flatMap(Arbitraries::of);
        Arbitrary<Mutation> mutation = Combinators.combine(
                Arbitraries.of(Kind.values()),
                Arbitraries.integers().between(0, 100_000),
                Arbitraries.chars().with(INTERESTING.toCharArray()).range('\u0000', '\u00ff'))
                .as(Mutation::new);
        return Combinators.combine(line, mutation.list().ofMinSize(1).ofMaxSize(8))
                .as((text, mutations) -> {
                    String result = text;
                    for (Mutation m : mutations) {
                        result = m.applyTo(result);
                    }
                    return result;
                });
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

package io.driveralias.agent.testing;

import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.stream.LongStream;
import java.util.stream.Stream;

/**
 * Seeds for property tests written as JUnit parameterized tests: {@code count} seeds derived from
 * one base seed, each the display name of its case, so a failure names the seed that reproduces
 * it ({@code -Dfuzz.seed=BASE} repeats a whole run, and a different base explores new inputs; the
 * default is fixed so that CI runs are repeatable). Each case builds its input from its own
 * {@link SplittableRandom}; the generators below are the few shapes the properties need.
 */
public final class SeededCases {

    /** The base seed unless {@code -Dfuzz.seed} says otherwise. */
    private static final long DEFAULT_BASE = 0x5EED_D41A_5L;

    private SeededCases() {
    }

    /** {@code count} well-spread seeds (SplitMix64 from the base), for {@code @MethodSource}. */
    public static Stream<Long> seeds(int count) {
        long base = Long.getLong("fuzz.seed", DEFAULT_BASE);
        SplittableRandom spread = new SplittableRandom(base);
        return LongStream.generate(spread::nextLong).limit(count).boxed();
    }

    /** One of the values, evenly. */
    public static <T> T oneOf(SplittableRandom random, List<T> values) {
        return values.get(random.nextInt(values.size()));
    }

    /** A list of {@code min..max} elements. */
    public static <T> List<T> listOf(SplittableRandom random, int min, int max, Function<SplittableRandom, T> element) {
        int n = min + random.nextInt(max - min + 1);
        return Stream.generate(() -> element.apply(random)).limit(n).toList();
    }

    /**
     * A string of {@code min..max} chars, each from {@code alphabet}, or from Latin-1
     * (U+0000-U+00FF) when {@code latin1}; both together pick either half of the time. A third
     * of the strings are of the maximal or minimal length, where bounds checks live.
     */
    public static String string(SplittableRandom random, String alphabet, boolean latin1, int min, int max) {
        int length = switch (random.nextInt(6)) {
            case 0 -> max;
            case 1 -> min;
            default -> min + random.nextInt(max - min + 1);
        };
        StringBuilder b = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            boolean fromAlphabet = !alphabet.isEmpty() && (!latin1 || random.nextBoolean());
            b.append(fromAlphabet ? alphabet.charAt(random.nextInt(alphabet.length())) : (char) random.nextInt(256));
        }
        return b.toString();
    }
}

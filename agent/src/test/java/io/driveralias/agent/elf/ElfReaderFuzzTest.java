package io.driveralias.agent.elf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.driveralias.agent.core.FileNames;
import io.driveralias.agent.elf.SyntheticElf.Kind;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import io.driveralias.agent.testing.SeededCases;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Mutates valid ELF files and checks the reader's contract: an answer that is a plain name, or
 * an {@link ElfFormatException}/{@link EOFException}; no other exception and no hang.
 *
 * <p>Random offsets rarely land on the few dozen bytes that steer the reader, so most mutations
 * target the byte ranges the reader actually read from the unmutated file (recorded once).
 *
 * <p>Each case is one seed ({@link SeededCases}): the seed in a failing case's name rebuilds its
 * input exactly.
 */
class ElfReaderFuzzTest {

    /** How long one try may take before it counts as a hang; generous for a busy CI machine. */
    private static final Duration HANG = Duration.ofSeconds(5);

    private static final long[] EXTREMES = {
        0, 1, 2, 5, 10, 14, 0x7f, 0x80, 0xff, 0xfff, 0x1000, 0xffff, 0x10000,
        0x7fff_ffffL, 0x8000_0000L, 0xffff_ffffL, 0x1_0000_0000L,
        Long.MAX_VALUE, Long.MIN_VALUE, -1, -2, -16
    };

    /** A valid file and the byte ranges {@code [from, to)} the reader consumed from it. */
    record Base(String name, byte[] bytes, ByteOrder order, List<long[]> hotRanges) {
    }

    /** Built on first use so the gcc run happens once per JVM, not once per try. */
    private static final class Corpus {
        static final List<Base> BASES = build();

        private static List<Base> build() {
            try {
                Path dir = Files.createTempDirectory("elf-fuzz");
                try {
                    List<Base> bases = new ArrayList<>();
                    Path cuda = Toolchain.sharedLibrary(dir, "libcuda.so.535.104.05", "libcuda.so.1");
                    bases.add(base("gcc-elf64", Files.readAllBytes(cuda)));
                    Path stripped = Toolchain.strip(cuda, dir.resolve("stripped.so"));
                    bases.add(base("gcc-elf64-stripped", Files.readAllBytes(stripped)));
                    Path elf32 = Toolchain.sharedLibrary32(dir, "libcuda32.so.535.104.05", "libcuda.so.1");
                    bases.add(base("ld-elf32", Files.readAllBytes(elf32)));
                    for (Kind kind : Kind.values()) {
                        bases.add(base("synthetic-" + kind, kind.builder().build().bytes()));
                    }
                    return List.copyOf(bases);
                } finally {
                    try (Stream<Path> files = Files.walk(dir)) {
                        for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                            Files.deleteIfExists(p);
                        }
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private static Base base(String name, byte[] bytes) {
            List<long[]> ranges = new ArrayList<>();
            ByteSource plain = ByteSource.of(bytes);
            ByteSource recording = new ByteSource() {
                @Override
                public long size() {
                    return plain.size();
                }

                @Override
                public void readFully(long position, byte[] dst, int length) throws IOException {
                    ranges.add(new long[] {position, position + length});
                    plain.readFully(position, dst, length);
                }
            };
            try {
                assertThat(ElfReader.readSoname(recording)).as(name).contains("libcuda.so.1");
            } catch (ElfFormatException | IOException e) {
                throw new AssertionError("fuzz base " + name + " is not readable", e);
            }
            ByteOrder order = bytes[5] == 2 ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
            return new Base(name, bytes, order, List.copyOf(ranges));
        }
    }

    /** One edit. Positions are raw random numbers resolved against the file when applied. */
    sealed interface Mutation {
        byte[] apply(byte[] bytes, Base base);
    }

    record Flip(Target at, int mask) implements Mutation {
        @Override
        public byte[] apply(byte[] bytes, Base base) {
            if (bytes.length > 0) {
                int i = at.resolve(bytes.length, base);
                bytes[i] ^= (byte) mask;
            }
            return bytes;
        }
    }

    record Overwrite(Target at, int width, long value) implements Mutation {
        @Override
        public byte[] apply(byte[] bytes, Base base) {
            if (bytes.length >= width) {
                // Aligned like the ELF fields it is meant to hit, so a whole value lands in one field.
                int i = Math.min(at.resolve(bytes.length, base) / width * width, bytes.length - width);
                ByteBuffer b = ByteBuffer.wrap(bytes).order(base.order());
                switch (width) {
                    case 1 -> b.put(i, (byte) value);
                    case 2 -> b.putShort(i, (short) value);
                    case 4 -> b.putInt(i, (int) value);
                    default -> b.putLong(i, value);
                }
            }
            return bytes;
        }
    }

    record Truncate(long seed) implements Mutation {
        @Override
        public byte[] apply(byte[] bytes, Base base) {
            return Arrays.copyOf(bytes, (int) Math.floorMod(seed, bytes.length + 1L));
        }
    }

    /** Either a byte the reader consumed (hot) or anywhere in the file. */
    record Target(boolean hot, int pick, int offset) {
        int resolve(int length, Base base) {
            if (hot && !base.hotRanges().isEmpty()) {
                long[] range = base.hotRanges().get(Math.floorMod(pick, base.hotRanges().size()));
                long at = range[0] + Math.floorMod(offset, Math.max(1, range[1] - range[0]));
                if (at < length) {
                    return (int) at;
                }
            }
            return Math.floorMod(offset, length);
        }
    }

    private static int base(SplittableRandom random) {
        return random.nextInt(Corpus.BASES.size());
    }

    private static Target target(SplittableRandom random) {
        return new Target(random.nextInt(10) < 8, random.nextInt(Integer.MAX_VALUE), random.nextInt(Integer.MAX_VALUE));
    }

    /** An extreme value, any value, or a small offset-like one, a third of the time each. */
    private static long value(SplittableRandom random) {
        return switch (random.nextInt(3)) {
            case 0 -> EXTREMES[random.nextInt(EXTREMES.length)];
            case 1 -> random.nextLong();
            default -> random.nextLong(4097);
        };
    }

    /** One to four edits: flips, overwrites and truncations in the proportion 4:5:1. */
    static List<Mutation> mutations(SplittableRandom random) {
        return SeededCases.listOf(random, 1, 4, r -> {
            int pick = r.nextInt(10);
            if (pick < 4) {
                return new Flip(target(r), 1 + r.nextInt(255));
            }
            if (pick < 9) {
                return new Overwrite(target(r), SeededCases.oneOf(r, List.of(1, 2, 4, 8)), value(r));
            }
            return new Truncate(r.nextLong());
        });
    }

    static Stream<Long> mutationSeeds() {
        return SeededCases.seeds(3000);
    }

    static Stream<Long> tailSeeds() {
        return SeededCases.seeds(1000);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("mutationSeeds")
    void mutatedElfIsAnsweredOrRejectedCleanly(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        Base base = Corpus.BASES.get(base(random));
        byte[] bytes = base.bytes().clone();
        for (Mutation m : mutations(random)) {
            bytes = m.apply(bytes, base);
        }
        assertContract(bytes);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("tailSeeds")
    void randomBytesBehindAValidIdentAreRejectedCleanly(long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        byte[] ident = Arrays.copyOf(Corpus.BASES.get(base(random)).bytes(), 16);
        int tail = random.nextInt(4) == 0 ? 600 : random.nextInt(601);
        byte[] bytes = Arrays.copyOf(ident, 16 + tail);
        for (int i = 0; i < tail; i++) {
            bytes[16 + i] = (byte) random.nextInt(256);
        }
        assertContract(bytes);
    }

    /** Everything the reader may ever ask for: header, capped program headers, capped dynamic, name. */
    private static final long READ_BUDGET = 64 + ElfReader.MAX_PH_TABLE_BYTES + ElfReader.MAX_DYN_ENTRIES * 16L
            + FileNames.NAME_MAX + 1;

    private static void assertContract(byte[] bytes) {
        ByteSource inner = ByteSource.of(bytes);
        long[] requested = {0};
        List<String> outOfBounds = new ArrayList<>();
        ByteSource watched = new ByteSource() {
            @Override
            public long size() {
                return inner.size();
            }

            @Override
            public void readFully(long position, byte[] dst, int length) throws IOException {
                requested[0] += length;
                if (position < 0 || length < 0 || position + length > bytes.length) {
                    outOfBounds.add(length + " bytes at " + position);
                }
                inner.readFully(position, dst, length);
            }
        };
        // Anything other than these two exceptions escapes and fails the property.
        Optional<String> soname = assertTimeoutPreemptively(HANG, () -> {
            try {
                return ElfReader.readSoname(watched);
            } catch (ElfFormatException | EOFException expected) {
                assertThat(expected.getMessage()).isNotBlank();
                return Optional.<String>empty();
            }
        });
        soname.ifPresent(name -> assertThat(FileNames.isPlainName(name)).as("SONAME %s", name).isTrue());
        // Stricter than the contract needs: EOFException is tolerated above, but the reader checks
        // bounds itself, so an in-memory file whose size cannot change should never provoke one.
        assertThat(outOfBounds).as("reads outside the %d-byte file", bytes.length).isEmpty();
        assertThat(requested[0]).as("bytes requested").isLessThanOrEqualTo(READ_BUDGET);
    }
}

package io.driveralias.agent.ldcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Mutated real caches (ldconfig's three layouts and this host's cache) and generated ones, from
 * fixed seeds: the reader either refuses with its own exception or accepts something the
 * agent's streaming update rewrites into exactly what the whole-file oracle makes of it (or
 * refuses, for a reason of its own); and it is fast whatever the bytes claim.
 */
class LdCacheCodecFuzzTest {

    private static final int MUTANTS_PER_REPETITION = 25;

    @TempDir
    static Path tmp;

    private static final List<byte[]> SEEDS = new ArrayList<>();
    private static final AtomicInteger ACCEPTED = new AtomicInteger();
    private static final AtomicInteger REFUSED = new AtomicInteger();
    private static final AtomicInteger REWRITTEN = new AtomicInteger();
    private static final AtomicInteger REWRITE_REFUSED = new AtomicInteger();
    private static final AtomicInteger GENERATED = new AtomicInteger();
    private static final AtomicInteger LISTED_BY_GLIBC = new AtomicInteger();

    @AfterAll
    static void tally() {
        System.out.println("fuzz: " + ACCEPTED.get() + " mutants accepted and round-tripped, " + REFUSED.get() + " refused; "
                + REWRITTEN.get() + " updates streamed as the oracle makes them, " + REWRITE_REFUSED.get() + " refused by both; "
                + GENERATED.get() + " generated caches updated as the oracle does, " + LISTED_BY_GLIBC.get()
                + " of them listed alike by ldconfig -p");
    }

    @BeforeAll
    static void realCaches() throws Exception {
        for (String format : List.of("new", "compat", "old")) {
            LoaderRoot root = LoaderRoot.create(tmp.resolve(format), format);
            SEEDS.add(Files.readAllBytes(root.cacheFile()));
        }
        SEEDS.add(Files.readAllBytes(Path.of("/etc/ld.so.cache")));
    }

    @RepeatedTest(200)
    void aMutatedRealCacheIsRefusedOrRoundTrips(RepetitionInfo repetition) {
        Random random = new Random(0x1d50cac4eL + repetition.getCurrentRepetition());
        long start = System.nanoTime();
        for (int i = 0; i < MUTANTS_PER_REPETITION; i++) {
            byte[] seed = SEEDS.get(random.nextInt(SEEDS.size()));
            check(mutate(seed, random), random);
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
    }

    private static void check(byte[] input, Random random) {
        LdCache cache;
        try {
            cache = LdCacheCodec.parse(input);
        } catch (LdCacheFormatException refused) {
            REFUSED.incrementAndGet();
            return;
        }
        ACCEPTED.incrementAndGet();
        List<Alias> aliases = aliases(cache, random);
        byte[] written;
        try {
            written = LdCacheCodec.serialize(cache.withAliases(aliases));
        } catch (LdCacheFormatException refused) {
            return; // e.g. an old-layout cache cannot take hwcap entries
        }
        LdCache again;
        try {
            again = LdCacheCodec.parse(written);
        } catch (LdCacheFormatException e) {
            // Only a cache whose keys the loader's comparison cannot order (digit runs that
            // overflow) sorts wrongly around a new entry; the streaming update must refuse it too.
            assertThatThrownBy(() -> LdCacheCodec.rewrite(input, aliases)).isInstanceOf(LdCacheFormatException.class);
            REWRITE_REFUSED.incrementAndGet();
            return;
        }
        assertThat(again.layout()).isEqualTo(cache.layout());
        assertThat(again.hwcapsSubdirectories()).isEqualTo(cache.hwcapsSubdirectories());
        assertThat(again.generator()).isEqualTo(cache.generator());
        assertThat(again.isCurrent(aliases)).isTrue();
        assertStreamedLikeTheOracle(input, aliases, again);
    }

    /** The agent's streaming update of {@code input} reads back as {@code expected}, entry for entry. */
    private static void assertStreamedLikeTheOracle(byte[] input, List<Alias> aliases, LdCache expected) {
        byte[] streamed;
        try {
            streamed = LdCacheCodec.rewrite(input, aliases);
        } catch (LdCacheFormatException e) {
            throw new AssertionError("the streaming update refused what the oracle wrote: " + e.getMessage(), e);
        }
        try {
            assertThat(LdCacheCodec.parse(streamed)).isEqualTo(expected);
        } catch (LdCacheFormatException e) {
            throw new AssertionError("the streaming update wrote a cache it cannot read: " + e.getMessage(), e);
        }
        REWRITTEN.incrementAndGet();
    }

    /** A new alias, or one with the SONAME and directory of an existing entry (to be replaced). */
    private static List<Alias> aliases(LdCache cache, Random random) {
        Alias fresh = Alias.of("/opt/driver/lib", "libnvtest.so.1").withFlags(0x0303);
        if (cache.entries().isEmpty() || random.nextBoolean()) {
            return List.of(fresh);
        }
        CacheEntry e = cache.entries().get(random.nextInt(cache.entries().size()));
        int[] flags = {e.flags(), 0x0303, 0x0003};
        try {
            return List.of(Alias.of(e.directory(), e.key()).withFlags(flags[random.nextInt(flags.length)]), fresh);
        } catch (IllegalArgumentException notAName) {
            return List.of(fresh);
        }
    }

    private static byte[] mutate(byte[] seed, Random random) {
        byte[] b = seed.clone();
        ByteBuffer le = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        switch (random.nextInt(6)) {
            case 0 -> {
                return Arrays.copyOf(b, random.nextInt(b.length + 1)); // truncation
            }
            case 1 -> {
                for (int n = 1 + random.nextInt(8); n > 0; n--) {
                    int at = random.nextInt(b.length);
                    b[at] ^= (byte) (1 << random.nextInt(8));
                }
            }
            case 2 -> { // a header or entry word replaced by a hostile number
                int at = random.nextInt(Math.min(b.length, 4096) / 4) * 4;
                int[] hostile = {-1, Integer.MAX_VALUE, Integer.MIN_VALUE, b.length, b.length - 1, b.length + 1, 0,
                        random.nextInt()};
                le.putInt(at, hostile[random.nextInt(hostile.length)]);
            }
            case 3 -> { // the counts at the known header places
                int[] places = {12, 20, 24, 32};
                le.putInt(Math.min(places[random.nextInt(places.length)], b.length - 4), random.nextBoolean() ? -1 : random.nextInt(1 << 20));
            }
            case 4 -> { // every terminator of a range removed
                int from = random.nextInt(b.length);
                for (int i = from; i < Math.min(b.length, from + 256); i++) {
                    if (b[i] == 0) {
                        b[i] = 'A';
                    }
                }
            }
            default -> { // a slice of the file copied over another place
                int from = random.nextInt(b.length);
                int to = random.nextInt(b.length);
                int length = Math.min(random.nextInt(64), Math.min(b.length - from, b.length - to));
                System.arraycopy(seed, from, b, to, length);
            }
        }
        return b;
    }

    private static final String[] STEMS = {"libcuda", "libnvidia-ml", "liba", "libz9", "libz10", "libc", "libx"};
    private static final String[] DIRECTORIES = {"/", "/lib", "/usr/lib/x86_64-linux-gnu", "/opt/driver/lib",
        "/usr/local/cuda/compat"};
    private static final int[] FLAGS = {0x0303, 0x0003, 0x0803, 0x0a03};

    @RepeatedTest(60)
    void aGeneratedCacheIsUpdatedAsTheOracleDoesIt(RepetitionInfo repetition) throws Exception {
        Random random = new Random(0x9e4e7a7edL + repetition.getCurrentRepetition());
        CacheLayout layout = CacheLayout.values()[random.nextInt(3)];
        LdCache cache = generate(random, layout);
        byte[] input = LdCacheCodec.serialize(cache);
        List<Alias> aliases = new ArrayList<>();
        for (int n = 1 + random.nextInt(4); n > 0; n--) {
            aliases.add(Alias.of(DIRECTORIES[random.nextInt(DIRECTORIES.length)], soname(random))
                    .withFlags(FLAGS[random.nextInt(FLAGS.length)]));
        }
        LdCache expected = cache.withAliases(aliases);

        assertStreamedLikeTheOracle(input, aliases, expected);
        GENERATED.incrementAndGet();
        if (repetition.getCurrentRepetition() % 4 == 0) { // glibc's own reader, on a sample (a process each)
            Path ours = Files.write(tmp.resolve("streamed-" + repetition.getCurrentRepetition()),
                    LdCacheCodec.rewrite(input, aliases));
            Path oracle = Files.write(tmp.resolve("oracle-" + repetition.getCurrentRepetition()),
                    LdCacheCodec.serialize(expected));
            assertThat(listing(ours)).containsExactlyElementsOf(listing(oracle));
            LISTED_BY_GLIBC.incrementAndGet();
        }
    }

    /** ldconfig -p without its first line (it names the file) and, for compat files, the hwcap names glibc misreads there. */
    private static List<String> listing(Path cache) {
        return LoaderRoot.printCache(cache).lines().skip(1).map(l -> l.replaceAll("hwcap: \"[^\"\n]*\"", "hwcap: ?")).toList();
    }

    private static String soname(Random random) {
        return STEMS[random.nextInt(STEMS.length)] + ".so." + random.nextInt(12) + (random.nextInt(4) == 0 ? ".0" : "");
    }

    /** Keys that sort with digits, equal keys in several directories and ABIs, glibc-hwcaps and legacy hwcap entries. */
    private static LdCache generate(Random random, CacheLayout layout) {
        boolean extension = layout != CacheLayout.OLD;
        List<String> hwcaps = extension && random.nextBoolean() ? List.of("x86-64-v2", "x86-64-v3") : List.of();
        List<CacheEntry> entries = new ArrayList<>();
        for (int n = random.nextInt(300); n > 0; n--) {
            String key = soname(random);
            String directory = DIRECTORIES[random.nextInt(DIRECTORIES.length)];
            long hwcap = 0;
            if (!hwcaps.isEmpty() && random.nextInt(8) == 0) {
                int index = random.nextInt(hwcaps.size());
                hwcap = CacheFormat.HWCAP_EXTENSION | index;
                directory = directory + "/glibc-hwcaps/" + hwcaps.get(index);
            } else if (extension && random.nextInt(16) == 0) {
                hwcap = 1L << random.nextInt(20); // a legacy hwcap subdirectory (tls, sse2, ...)
            }
            entries.add(new CacheEntry(FLAGS[random.nextInt(FLAGS.length)], key,
                    (directory.equals("/") ? "" : directory) + "/" + key, extension ? random.nextInt(3) : 0, hwcap));
        }
        entries.sort((a, b) -> LoaderOrder.libcmp(b.key(), a.key()));
        java.util.Optional<String> generator = extension && random.nextBoolean()
                ? java.util.Optional.of("ldconfig (GNU libc) fuzz " + random.nextInt(100)) : java.util.Optional.empty();
        return new LdCache(layout, entries, hwcaps, generator, List.of());
    }

    @Test
    void hugeCountsAndOffsetsAreRefusedNotFollowed() {
        byte[] header = newHeader(0xffff_ffff, 0);
        assertThatThrownBy(() -> LdCacheCodec.parse(header)).isInstanceOf(LdCacheFormatException.class)
                .hasMessageContaining("does not fit");

        byte[] oneEntry = Arrays.copyOf(newHeader(1, 0), 48 + 24);
        ByteBuffer.wrap(oneEntry).order(ByteOrder.LITTLE_ENDIAN).putInt(48, 0x303).putInt(52, 0x7fff_fff0).putInt(56, 0);
        assertThatThrownBy(() -> LdCacheCodec.parse(oneEntry)).isInstanceOf(LdCacheFormatException.class)
                .hasMessageContaining("outside the file");

        byte[] badExtension = newHeader(0, 0x7fff_fffc);
        assertThatThrownBy(() -> LdCacheCodec.parse(badExtension)).isInstanceOf(LdCacheFormatException.class)
                .hasMessageContaining("extension");

        byte[] oldHuge = Arrays.copyOf("ld.so-1.7.0".getBytes(StandardCharsets.US_ASCII), 64);
        ByteBuffer.wrap(oldHuge).order(ByteOrder.LITTLE_ENDIAN).putInt(12, 0x1555_5556);
        assertThatThrownBy(() -> LdCacheCodec.parse(oldHuge)).isInstanceOf(LdCacheFormatException.class);
    }

    @Test
    void aFileOfUnterminatedStringsCostsAtMostABoundedScan() {
        // 16 MiB of 4,000-byte strings, and 600,000 entries each pointing into one at a new place.
        int count = 600_000;
        byte[] file = new byte[CacheFormat.MAX_CACHE_BYTES];
        System.arraycopy(newHeader(count, 0), 0, file, 0, 48);
        int strings = 48 + count * 24;
        Arrays.fill(file, strings, file.length, (byte) 'x');
        for (int at = strings + 4000; at < file.length; at += 4000) {
            file[at] = 0;
        }
        ByteBuffer le = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < count; i++) {
            le.putInt(48 + i * 24 + 4, strings + (i * 7) % (file.length - strings));
        }
        file[file.length - 1] = 0;
        long start = System.nanoTime();
        assertThatThrownBy(() -> LdCacheCodec.parse(file)).isInstanceOf(LdCacheFormatException.class);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        System.out.println("16 MiB hostile cache refused in " + took.toMillis() + " ms");
        assertThat(took).isLessThan(Duration.ofSeconds(2));
    }

    private static byte[] newHeader(int count, int extensionOffset) {
        byte[] b = new byte[48];
        ByteBuffer le = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
        le.put("glibc-ld.so.cache1.1".getBytes(StandardCharsets.US_ASCII));
        le.putInt(20, count).put(28, (byte) 2).putInt(32, extensionOffset);
        return b;
    }
}

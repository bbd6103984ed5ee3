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
 * Mutated real caches (ldconfig's three layouts and this host's cache) from fixed seeds: the
 * codec either refuses with its own exception or accepts something it can write back and
 * read again unchanged; and it is fast whatever the bytes claim.
 */
class LdCacheCodecFuzzTest {

    private static final int MUTANTS_PER_REPETITION = 25;

    @TempDir
    static Path tmp;

    private static final List<byte[]> SEEDS = new ArrayList<>();
    private static final AtomicInteger ACCEPTED = new AtomicInteger();
    private static final AtomicInteger REFUSED = new AtomicInteger();

    @AfterAll
    static void tally() {
        System.out.println("fuzz: " + ACCEPTED.get() + " mutants accepted and round-tripped, " + REFUSED.get() + " refused");
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
            check(mutate(seed, random));
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
    }

    private static void check(byte[] input) {
        LdCache cache;
        try {
            cache = LdCacheCodec.parse(input);
        } catch (LdCacheFormatException refused) {
            REFUSED.incrementAndGet();
            return;
        }
        ACCEPTED.incrementAndGet();
        byte[] written;
        try {
            written = LdCacheCodec.serialize(cache.withAliases(List.of(
                    Alias.of("/opt/driver/lib", "libnvtest.so.1").withFlags(0x0303))));
        } catch (LdCacheFormatException refused) {
            return; // e.g. an old-layout cache cannot take hwcap entries
        }
        LdCache again;
        try {
            again = LdCacheCodec.parse(written);
        } catch (LdCacheFormatException e) {
            throw new AssertionError("the codec wrote a cache it cannot read: " + e.getMessage(), e);
        }
        assertThat(again.entries()).contains(new CacheEntry(0x0303, "libnvtest.so.1", "/opt/driver/lib/libnvtest.so.1", 0, 0));
        assertThat(again.layout()).isEqualTo(cache.layout());
        assertThat(again.hwcapsSubdirectories()).isEqualTo(cache.hwcapsSubdirectories());
        assertThat(again.generator()).isEqualTo(cache.generator());
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
        byte[] file = new byte[LdCacheCodec.MAX_CACHE_BYTES];
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

package io.driveralias.agent.ldcache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.elf.ByteSource;
import io.driveralias.agent.testing.Processes;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The agent's streaming update against glibc's own ldconfig (writer) and ld.so (reader) on this
 * machine, and against the whole-file codec (the oracle).
 */
class LdCacheCodecTest {

    @TempDir
    Path tmp;

    @ParameterizedTest(name = "ldconfig -c {0}")
    @CsvSource({"new, NEW", "compat, COMPAT", "old, OLD"})
    void theRealLoaderFindsAnAliasAddedToARealCache(String format, CacheLayout layout) throws Exception {
        LoaderRoot root = LoaderRoot.create(tmp.resolve("root"), format);
        Processes.Result before = root.runProbe();
        assertThat(before.exitCode()).as("without a cache entry the driver is not found: " + before.output()).isNotZero();
        assertThat(before.output()).contains(LoaderRoot.SONAME);

        LdCache cache = LdCacheCodec.parse(Files.readAllBytes(root.cacheFile()));
        assertThat(cache.layout()).isEqualTo(layout);
        OptionalInt flags = cache.flagsOfDirectory(LoaderRoot.LIB_DIR);
        assertThat(flags).hasValue(LoaderFlags.FLAG_ELF_LIBC6 | LoaderFlags.FLAG_X8664_LIB64);
        List<Alias> aliases = List.of(Alias.of(LoaderRoot.DRIVER_DIR, LoaderRoot.SONAME).withFlags(flags.getAsInt()));
        LdCache updated = cache.withAliases(aliases);
        byte[] bytes = LdCacheCodec.rewrite(Files.readAllBytes(root.cacheFile()), aliases);
        Files.write(root.cacheFile(), bytes);

        assertThat(new String(bytes, 0, 11, StandardCharsets.ISO_8859_1))
                .isEqualTo(layout == CacheLayout.NEW ? "glibc-ld.so" : "ld.so-1.7.0");
        assertThat(root.printCache()).contains(LoaderRoot.SONAME + " (libc6,x86-64) => "
                + LoaderRoot.DRIVER_DIR + "/" + LoaderRoot.SONAME);
        Processes.Result after = root.runProbe();
        assertThat(after.output()).isEqualTo("probe 42\n");
        assertThat(after.exitCode()).isZero();
        assertThat(LdCacheCodec.parse(bytes)).isEqualTo(updated);
        assertThat(updated.contains(LoaderRoot.DRIVER_DIR, LoaderRoot.SONAME)).isTrue();
        assertThat(cache.contains(LoaderRoot.DRIVER_DIR, LoaderRoot.SONAME)).isFalse();
    }

    @ParameterizedTest(name = "ldconfig -c {0}")
    @CsvSource({"new", "compat", "old"})
    void theUpdatedCacheListsExactlyWhatLdconfigWouldHaveMade(String format) throws Exception {
        LoaderRoot root = LoaderRoot.create(tmp.resolve("root"), format);
        byte[] without = Files.readAllBytes(root.cacheFile());
        // What ldconfig itself makes once the driver's directory is configured.
        Files.writeString(root.root.resolve("etc/ld.so.conf"), LoaderRoot.LIB_DIR + "\n" + LoaderRoot.DRIVER_DIR + "\n");
        Processes.check(List.of("ldconfig", "-X", "-c", format, "-r", root.root.toString()));
        Path byLdconfig = Files.copy(root.cacheFile(), tmp.resolve("by-ldconfig"));

        Path byAgent = Files.write(tmp.resolve("by-agent"), LdCacheCodec.rewrite(without,
                List.of(Alias.of(LoaderRoot.DRIVER_DIR, LoaderRoot.SONAME))));

        List<String> expected = LoaderRoot.printCache(byLdconfig).lines().toList();
        List<String> actual = LoaderRoot.printCache(byAgent).lines().toList();
        assertThat(actual.getFirst()).startsWith(expected.getFirst().substring(0, expected.getFirst().indexOf(" found")));
        if (format.equals("compat")) { // see aRealCacheWrittenBackUnchangedListsTheSameForGlibc
            assertThat(actual.stream().skip(1).map(LdCacheCodecTest::withoutHwcapNames))
                    .containsExactlyElementsOf(expected.stream().skip(1).map(LdCacheCodecTest::withoutHwcapNames).toList());
        } else {
            assertThat(actual.subList(1, actual.size())).containsExactlyElementsOf(expected.subList(1, expected.size()));
        }
        assertThat(actual).anyMatch(l -> l.contains(LoaderRoot.SONAME + " (libc6,x86-64) => " + LoaderRoot.DRIVER_DIR));
    }

    @ParameterizedTest(name = "ldconfig -c {0}")
    @CsvSource({"new", "compat", "old"})
    void aRealCacheWrittenBackUnchangedListsTheSameForGlibc(String format) throws Exception {
        LoaderRoot root = LoaderRoot.create(tmp.resolve("root"), format);
        String listed = root.printCache();
        LdCache cache = LdCacheCodec.parse(Files.readAllBytes(root.cacheFile()));
        if (!format.equals("old")) {
            assertThat(cache.hwcapsSubdirectories()).containsExactly("x86-64-v2", "x86-64-v3");
            assertThat(cache.entries()).filteredOn(CacheEntry::isHwcapsSubdirectoryEntry).hasSize(2);
            assertThat(listed).contains("Cache generated by: ldconfig");
        }
        Files.write(root.cacheFile(), LdCacheCodec.serialize(cache));

        if (format.equals("compat")) {
            // glibc reads the glibc-hwcaps names of a compat file relative to the old header
            // although ldconfig writes them relative to the new one: for ld.so and ldconfig -p
            // those names are whatever bytes sit there, in ldconfig's file as in ours.
            assertThat(withoutHwcapNames(root.printCache())).isEqualTo(withoutHwcapNames(listed));
            return;
        }
        assertThat(root.printCache()).isEqualTo(listed);
        assertThat(root.runProbe().exitCode()).isNotZero();
    }

    private static String withoutHwcapNames(String listing) {
        return listing.replaceAll("hwcap: \"[^\"\n]*\"", "hwcap: ?");
    }

    @Test
    void theHostsOwnCacheRoundTripsForGlibcAndForTheCodec() throws Exception {
        byte[] original = Files.readAllBytes(Path.of("/etc/ld.so.cache"));
        long start = System.nanoTime();
        LdCache cache = LdCacheCodec.parse(original);
        long parsed = System.nanoTime();
        byte[] written = LdCacheCodec.serialize(cache);
        long serialized = System.nanoTime();
        System.out.printf("host cache: %d bytes, %d entries, parse %.2f ms, serialize %.2f ms%n", original.length,
                cache.entries().size(), (parsed - start) / 1e6, (serialized - parsed) / 1e6);

        Path copy = Files.write(tmp.resolve("copy.cache"), written);
        // Line 1 names the file; every entry and the generator line must be the same.
        assertThat(LoaderRoot.printCache(copy).lines().skip(1))
                .containsExactlyElementsOf(LoaderRoot.printCache(Path.of("/etc/ld.so.cache")).lines().skip(1).toList());
        assertThat(LdCacheCodec.parse(written)).isEqualTo(cache);
        assertThat(LdCacheCodec.serialize(LdCacheCodec.parse(written))).isEqualTo(written);
        assertThat(cache.resolve("libc.so.6", 0x0303)).hasValueSatisfying(p -> assertThat(p).endsWith("/libc.so.6"));
    }

    @Test
    void flagsFromTheElfHeaderAreThoseLdconfigRecords() throws Exception {
        LoaderRoot root = LoaderRoot.create(tmp.resolve("root"), "new");
        LdCache cache = LdCacheCodec.parse(Files.readAllBytes(root.cacheFile()));
        Path library = root.root.resolve("usr/lib/x86_64-linux-gnu/libzeta9.so.2.0");
        CacheEntry recorded = cache.entries().stream().filter(e -> e.key().equals("libzeta9.so.2")).findFirst().orElseThrow();

        assertThat(LoaderFlags.ofElf(ByteSource.of(Files.readAllBytes(library)))).hasValue(recorded.flags());
        assertThat(LoaderFlags.ofElf(ByteSource.of("#!/bin/sh\n".repeat(4).getBytes(StandardCharsets.US_ASCII)))).isEmpty();
        assertThat(LoaderFlags.ofElf(ByteSource.of(new byte[3]))).isEmpty();
    }

    @Test
    void digitRunsCompareAsNumbersLikeTheLoader() {
        assertThat(LoaderOrder.libcmp("libfoo.so.10", "libfoo.so.9")).isPositive();
        assertThat(LoaderOrder.libcmp("libfoo.so.1", "libfoo.so.01")).isZero();
        assertThat(LoaderOrder.libcmp("libz9.so", "libz10.so")).isNegative();
        assertThat(LoaderOrder.libcmp("liba.so", "liba.so.1")).isNegative();
        assertThat(LoaderOrder.libcmp("lib1", "liba")).isPositive(); // a digit sorts after any letter
    }

    @Test
    void anAliasReplacesAStaleEntryInItsDirectoryAndKeepsOtherDirectoriesFirst() throws Exception {
        LoaderRoot root = LoaderRoot.create(tmp.resolve("root"), "new");
        LdCache cache = LdCacheCodec.parse(Files.readAllBytes(root.cacheFile()));
        int flags = 0x0303;
        LdCache withOther = cache.withAliases(List.of(
                Alias.of("/usr/local/cuda/compat", "libnvtest.so.1").withFlags(flags),
                Alias.of(LoaderRoot.DRIVER_DIR, "libnvtest.so.1").withFlags(0x0003)));
        LdCache fixed = withOther.withAliases(List.of(Alias.of(LoaderRoot.DRIVER_DIR, "libnvtest.so.1").withFlags(flags)));

        List<CacheEntry> same = fixed.entries().stream().filter(e -> e.key().equals("libnvtest.so.1")).toList();
        assertThat(same).extracting(CacheEntry::value)
                .containsExactly("/usr/local/cuda/compat/libnvtest.so.1", LoaderRoot.DRIVER_DIR + "/libnvtest.so.1");
        assertThat(same).extracting(CacheEntry::flags).containsOnly(flags);
        assertThat(fixed.isCurrent(List.of(Alias.of(LoaderRoot.DRIVER_DIR, "libnvtest.so.1").withFlags(flags)))).isTrue();
        assertThat(withOther.isCurrent(List.of(Alias.of(LoaderRoot.DRIVER_DIR, "libnvtest.so.1").withFlags(flags)))).isFalse();
        assertThat(fixed.resolve("libnvtest.so.1", flags)).hasValue("/usr/local/cuda/compat/libnvtest.so.1");
        // Still in the loader's order: parsing checks it.
        assertThat(LdCacheCodec.parse(LdCacheCodec.serialize(fixed))).isEqualTo(fixed);

        // The streaming update makes the same cache, from the file.
        byte[] streamed = LdCacheCodec.rewrite(LdCacheCodec.rewrite(Files.readAllBytes(root.cacheFile()), List.of(
                Alias.of("/usr/local/cuda/compat", "libnvtest.so.1").withFlags(flags),
                Alias.of(LoaderRoot.DRIVER_DIR, "libnvtest.so.1").withFlags(0x0003))),
                List.of(Alias.of(LoaderRoot.DRIVER_DIR, "libnvtest.so.1").withFlags(flags)));
        assertThat(LdCacheCodec.parse(streamed)).isEqualTo(fixed);
    }

    @Test
    void refusesWhatIsNotACache() {
        assertThatThrownBy(() -> LdCacheCodec.parse(new byte[0])).isInstanceOf(LdCacheFormatException.class);
        assertThatThrownBy(() -> LdCacheCodec.parse("hello, world".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(LdCacheFormatException.class).hasMessageContaining("magic");
        assertThatThrownBy(() -> LdCacheCodec.parse(new byte[CacheFormat.MAX_CACHE_BYTES + 1]))
                .isInstanceOf(LdCacheFormatException.class).hasMessageContaining("at most");
    }

    @Test
    void aliasesMustBeAbsoluteDirectoriesAndPlainNames() {
        assertThatThrownBy(() -> Alias.of("usr/lib", "libcuda.so.1")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Alias.of("/usr/lib", "../libcuda.so.1")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Alias.of("/usr/lib", "lib\0cuda")).isInstanceOf(IllegalArgumentException.class);
        assertThat(Alias.of("/usr/lib//", "libcuda.so.1").path()).isEqualTo("/usr/lib/libcuda.so.1");
    }
}

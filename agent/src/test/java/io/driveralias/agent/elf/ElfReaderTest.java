package io.driveralias.agent.elf;

import static io.driveralias.agent.elf.SyntheticElf.DYNAMIC;
import static io.driveralias.agent.elf.SyntheticElf.DYN_NULL;
import static io.driveralias.agent.elf.SyntheticElf.DYN_SONAME;
import static io.driveralias.agent.elf.SyntheticElf.DYN_STRSZ;
import static io.driveralias.agent.elf.SyntheticElf.DYN_STRTAB;
import static io.driveralias.agent.elf.SyntheticElf.LOAD_DECOY;
import static io.driveralias.agent.elf.SyntheticElf.LOAD_MAIN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.driveralias.agent.elf.SyntheticElf.Image;
import io.driveralias.agent.elf.SyntheticElf.Kind;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(60)
class ElfReaderTest {

    private static final long HUNDRED_MIB = 100L * 1024 * 1024;

    @TempDir
    static Path dir;

    private static Path libcuda;
    private static Path nvvm;
    private static Path sameName;
    private static Path noSoname;
    private static Path stripped;
    private static Path elf32;

    @BeforeAll
    static void buildFixtures() throws IOException {
        libcuda = Toolchain.sharedLibrary(dir, "libcuda.so.535.104.05", "libcuda.so.1");
        nvvm = Toolchain.sharedLibrary(dir, "libnvidia-nvvm.so.535.104.05", "libnvidia-nvvm.so.4");
        sameName = Toolchain.sharedLibrary(dir, "libnvidia-ml.so.1", "libnvidia-ml.so.1");
        noSoname = Toolchain.sharedLibrary(dir, "libplain.so", null);
        stripped = Toolchain.strip(libcuda, dir.resolve("libcuda-stripped.so.535.104.05"));
        elf32 = Toolchain.sharedLibrary32(dir, "libcuda32.so.535.104.05", "libcuda.so.1");
    }

    private static Optional<String> read(byte[] bytes) throws Exception {
        return ElfReader.readSoname(ByteSource.of(bytes));
    }

    private static Optional<String> read(Path file) throws Exception {
        try (CountingFileSource src = new CountingFileSource(file)) {
            return ElfReader.readSoname(src);
        }
    }

    private static void assertRejected(byte[] bytes, String messagePart) {
        assertThatThrownBy(() -> read(bytes))
                .isInstanceOf(ElfFormatException.class)
                .hasMessageContaining(messagePart);
    }

    // Real libraries from gcc/ld and the host.

    @Test
    void driverLibraryNamedByVersionHasItsSoname() throws Exception {
        try (CountingFileSource src = new CountingFileSource(libcuda)) {
            assertThat(ElfReader.readSoname(src)).contains("libcuda.so.1");
            // header, program headers, dynamic section, name: nothing else
            assertThat(src.reads()).isLessThanOrEqualTo(4);
        }
    }

    @Test
    void sonameWithDashes() throws Exception {
        assertThat(read(nvvm)).contains("libnvidia-nvvm.so.4");
    }

    @Test
    void sonameEqualToFileName() throws Exception {
        assertThat(read(sameName)).contains("libnvidia-ml.so.1");
    }

    @Test
    void libraryLinkedWithoutSonameHasNone() throws Exception {
        assertThat(read(noSoname)).isEmpty();
    }

    @Test
    void strippedLibrary() throws Exception {
        assertThat(read(stripped)).contains("libcuda.so.1");
    }

    @Test
    void sectionHeadersAreNotNeeded() throws Exception {
        byte[] bytes = Files.readAllBytes(stripped);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long shoff = b.getLong(40);
        // Garble the section header table and point e_shoff/e_shnum/e_shstrndx at nonsense.
        Arrays.fill(bytes, (int) shoff, bytes.length, (byte) 0xA5);
        b.putLong(40, -1L).putShort(60, (short) 0xffff).putShort(62, (short) 0xfffe);
        assertThat(read(bytes)).contains("libcuda.so.1");
    }

    @Test
    void realElf32Library() throws Exception {
        byte[] bytes = Files.readAllBytes(elf32);
        assertThat(bytes[4]).as("EI_CLASS").isEqualTo((byte) 1);
        assertThat(read(bytes)).contains("libcuda.so.1");
    }

    @Test
    void hostLibc() throws Exception {
        Path libc = Path.of("/usr/lib/x86_64-linux-gnu/libc.so.6");
        assumeTrue(Files.isRegularFile(libc), "no glibc at " + libc);
        try (CountingFileSource src = new CountingFileSource(libc)) {
            assertThat(ElfReader.readSoname(src)).contains("libc.so.6");
            assertThat(src.bytesRead()).isLessThan(4096);
        }
    }

    @Test
    void everyTruncationOfGccLibraryIsRejectedOrStillCorrect() throws Exception {
        byte[] whole = Files.readAllBytes(libcuda);
        for (int length = 0; length < whole.length; length++) {
            assertTruncationSafe(Arrays.copyOf(whole, length), "libcuda.so.1");
        }
    }

    /** A prefix either fails cleanly or, if it still holds everything needed, gives the true answer. */
    private static void assertTruncationSafe(byte[] prefix, String soname) throws Exception {
        try {
            assertThat(read(prefix)).as("prefix of %d bytes", prefix.length).contains(soname);
        } catch (ElfFormatException expected) {
            assertThat(expected.getMessage()).isNotBlank();
        }
    }

    // Synthetic files: every class and byte order.

    @ParameterizedTest
    @EnumSource(Kind.class)
    void readsSoname(Kind kind) throws Exception {
        assertThat(read(kind.builder().build().bytes())).contains("libcuda.so.1");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void readsSonameWithoutStrsz(Kind kind) throws Exception {
        assertThat(read(kind.builder().withoutStrsz().soname("libnvidia-nvvm.so.4").build().bytes()))
                .contains("libnvidia-nvvm.so.4");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void noDtSonameIsEmpty(Kind kind) throws Exception {
        assertThat(read(kind.builder().withoutSoname().build().bytes())).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void noPtDynamicIsEmpty(Kind kind) throws Exception {
        Image image = kind.builder().build();
        assertThat(read(image.with(image.pType(DYNAMIC), 4, 0).bytes())).isEmpty(); // PT_NULL
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void noProgramHeadersIsEmpty(Kind kind) throws Exception {
        Image image = kind.builder().build();
        assertThat(read(image.with(image.ePhnum(), 2, 0).bytes())).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void largerProgramHeaderEntriesAreStepped(Kind kind) throws Exception {
        // e_phentsize may exceed the structure size; entries must then be read at that stride.
        Image image = kind.builder().build();
        int entry = kind.is64 ? 56 : 32;
        byte[] original = image.bytes();
        byte[] spread = new byte[original.length + 3 * entry];
        System.arraycopy(original, 0, spread, 0, image.phoff);
        for (int i = 0; i < 3; i++) {
            System.arraycopy(original, image.phoff + i * entry, spread, image.phoff + i * 2 * entry, entry);
        }
        System.arraycopy(original, image.phoff + 3 * entry, spread, image.phoff + 6 * entry,
                original.length - image.phoff - 3 * entry);
        ByteBuffer b = ByteBuffer.wrap(spread).order(kind.order);
        b.putShort(image.ePhentsize(), (short) (2 * entry));
        // The segments moved by 3 * entry bytes in the file.
        for (int i : new int[] {LOAD_MAIN, DYNAMIC}) {
            int at = image.phoff + i * 2 * entry + (kind.is64 ? 8 : 4);
            if (kind.is64) {
                b.putLong(at, b.getLong(at) + 3 * entry);
            } else {
                b.putInt(at, b.getInt(at) + 3 * entry);
            }
        }
        assertThat(read(spread)).contains("libcuda.so.1");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void everyTruncationIsRejectedOrStillCorrect(Kind kind) throws Exception {
        byte[] whole = kind.builder().build().bytes();
        for (int length = 0; length < whole.length; length++) {
            assertTruncationSafe(Arrays.copyOf(whole, length), "libcuda.so.1");
        }
    }

    // Malformed and hostile files: each must fail with a message naming the problem.

    @Test
    void tooShortForIdent() {
        assertRejected(new byte[] {0x7f, 'E', 'L', 'F'}, "too short");
        assertRejected(new byte[0], "too short");
    }

    @Test
    void badMagic() throws Exception {
        byte[] bytes = Files.readAllBytes(libcuda);
        bytes[1] = 'X';
        assertRejected(bytes, "bad magic");
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 3, 0xff})
    void unknownClass(int elfClass) {
        assertRejected(Kind.ELF64_LE.builder().build().with(4, 1, elfClass).bytes(), "ELF class");
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 3, 0x80})
    void unknownDataEncoding(int data) {
        assertRejected(Kind.ELF32_BE.builder().build().with(5, 1, data).bytes(), "data encoding");
    }

    @Test
    void wrongVersion() {
        assertRejected(Kind.ELF64_LE.builder().build().with(6, 1, 2).bytes(), "ident version");
        assertRejected(Kind.ELF64_LE.builder().build().with(20, 4, 0).bytes(), "e_version");
    }

    @Test
    void headerTruncatedAfterIdent() {
        assertRejected(Kind.ELF64_BE.builder().build().truncated(40).bytes(), "ELF header truncated");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void programHeadersPastEnd(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.withWord(image.ePhoff(), image.bytes.length - 8).bytes(), "extends past the end");
        assertRejected(image.withWord(image.ePhoff(), 0xFFFF_FFF0L).bytes(), "extends past the end");
    }

    @Test
    void unsigned64BitValueAboveLongMaxIsRefused() {
        Image image = Kind.ELF64_LE.builder().build();
        assertRejected(image.withWord(image.ePhoff(), 0xFFFF_FFFF_FFFF_FFF0L).bytes(), "e_phoff");
        assertRejected(image.withWord(image.pFilesz(DYNAMIC), Long.MIN_VALUE).bytes(), "p_filesz");
        assertRejected(image.withWord(image.dVal(DYN_STRTAB), -1L).bytes(), "DT_STRTAB");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void hugeProgramHeaderCounts(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.with(image.ePhnum(), 2, 0xffff).bytes(), "PN_XNUM");
        assertRejected(image.with(image.ePhnum(), 2, ElfReader.MAX_PHNUM + 1).bytes(), "exceeds the limit");
        assertRejected(image.with(image.ePhnum(), 2, ElfReader.MAX_PHNUM).bytes(), "extends past the end");
        assertRejected(image.with(image.ePhentsize(), 2, 0xffff).with(image.ePhnum(), 2, 0x1000).bytes(),
                "exceeds the limit");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void programHeaderEntryTooSmall(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.with(image.ePhentsize(), 2, kind.is64 ? 55 : 31).bytes(), "e_phentsize");
        assertRejected(image.with(image.ePhentsize(), 2, 0).bytes(), "e_phentsize");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void dynamicOutsideFile(Kind kind) {
        Image image = kind.builder().build();
        int size = image.bytes.length;
        assertRejected(image.withWord(image.pOffset(DYNAMIC), size).bytes(), "PT_DYNAMIC");
        assertRejected(image.withWord(image.pFilesz(DYNAMIC), 0xFFFF_FFFFL).bytes(), "PT_DYNAMIC");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void twoDynamicSegments(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.with(image.pType(LOAD_DECOY), 4, 2).bytes(), "more than one PT_DYNAMIC");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void dynamicWithoutTerminator(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.withWord(image.dTag(DYN_NULL), SyntheticElf.DT_DEBUG).bytes(), "no DT_NULL");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void duplicateSoname(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.withWord(image.dTag(DYN_STRSZ), 14).bytes(), "duplicate DT_SONAME");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void sonameWithoutStrtab(Kind kind) {
        assertRejected(kind.builder().withoutStrtab().build().bytes(), "DT_STRTAB missing");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void strtabNotInAnyLoadSegment(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.withWord(image.dVal(DYN_STRTAB), 0x90_0000).bytes(), "not inside any PT_LOAD");
        // Below the main segment's vaddr: the subtraction must not wrap into "inside".
        assertRejected(image.withWord(image.dVal(DYN_STRTAB), SyntheticElf.MAIN_VADDR - 1).bytes(),
                "not inside any PT_LOAD");
        // Loadable segments only: a PT_DYNAMIC or other segment covering it does not count.
        assertRejected(image.with(image.pType(LOAD_MAIN), 4, 6).bytes(), "not inside any PT_LOAD");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void loadSegmentPastEnd(Kind kind) {
        Image image = kind.builder().build();
        assertRejected(image.withWord(image.pFilesz(LOAD_MAIN), 0x7FFF_FFFFL).bytes(), "PT_LOAD");
        assertRejected(image.withWord(image.pOffset(LOAD_MAIN), 0xFFFF_FFFFL).bytes(), "PT_LOAD");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void sonameOffsetPastStrsz(Kind kind) {
        Image image = kind.builder().build();
        long strsz = 1 + "libcuda.so.1".length() + 1;
        assertRejected(image.withWord(image.dVal(DYN_SONAME), strsz).bytes(), "outside the string table");
        assertRejected(image.withWord(image.dVal(DYN_SONAME), 0xFFFF_FFFFL).bytes(), "outside the string table");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void terminatorBeyondStrszDoesNotCount(Kind kind) {
        Image image = kind.builder().build();
        long strszWithoutNul = 1 + "libcuda.so.1".length();
        assertRejected(image.withWord(image.dVal(DYN_STRSZ), strszWithoutNul).bytes(), "not NUL-terminated");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void unterminatedAtEndOfFile(Kind kind) {
        assertRejected(kind.builder().unterminated().build().bytes(), "not NUL-terminated");
        assertRejected(kind.builder().unterminated().withoutStrsz().build().bytes(), "not NUL-terminated");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void sonameTooLong(Kind kind) throws Exception {
        assertThat(read(kind.builder().soname("l".repeat(255)).build().bytes())).contains("l".repeat(255));
        assertRejected(kind.builder().soname("l".repeat(256)).build().bytes(), "longer than 255");
        assertRejected(kind.builder().soname("l".repeat(5000)).build().bytes(), "longer than 255");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void sonamePathIsRefused(Kind kind) {
        assertRejected(kind.builder().soname("../x").build().bytes(), "SONAME '../x' is not a plain file name");
        assertRejected(kind.builder().soname("lib/libcuda.so.1").build().bytes(), "not a plain file name");
        assertRejected(kind.builder().soname("/etc/shadow").build().bytes(), "not a plain file name");
        assertRejected(kind.builder().soname("..").build().bytes(), "SONAME '..' is not");
        assertRejected(kind.builder().soname(".").build().bytes(), "SONAME '.' is not");
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void emptySonameIsRefused(Kind kind) {
        Image image = kind.builder().build();
        // Offset 0 of a string table is always its leading NUL.
        assertRejected(image.withWord(image.dVal(DYN_SONAME), 0).bytes(), "SONAME '' is not");
    }

    @Test
    void nonAsciiAndControlCharactersAreRefusedAndEscaped() {
        Kind kind = Kind.ELF64_LE;
        assertRejected(kind.builder().sonameBytes("libcüda.so.1".getBytes(StandardCharsets.UTF_8)).build().bytes(),
                "SONAME 'libc\\xc3\\xbcda.so.1' is not a plain file name");
        assertRejected(kind.builder().sonameBytes("libcüda.so.1".getBytes(StandardCharsets.ISO_8859_1)).build()
                .bytes(), "SONAME 'libc\\xfcda.so.1'");
        assertRejected(kind.builder().soname("lib\ncuda.so.1").build().bytes(), "SONAME 'lib\\x0acuda.so.1'");
        assertRejected(kind.builder().soname("lib cuda.so").build().bytes(), "not a plain file name");
    }

    // Large files: reads must stay small whatever the file claims.

    @Test
    void sparseDriverLibraryCostsAFewSmallReads() throws Exception {
        Path file = dir.resolve("libnvidia-big.so.535.104.05");
        Files.copy(libcuda, file);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(HUNDRED_MIB);
        }
        CountingFileSource src = new CountingFileSource(file);
        try (src) {
            Optional<String> soname = assertTimeoutPreemptively(Duration.ofSeconds(10),
                    () -> ElfReader.readSoname(src));
            assertThat(soname).contains("libcuda.so.1");
        }
        assertThat(src.reads()).isLessThanOrEqualTo(4);
        assertThat(src.bytesRead()).isLessThan(4096);
    }

    @Test
    void sparseZeroFileIsRejectedAfterOneRead() throws Exception {
        Path file = dir.resolve("libcuda.so.999.99.99");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(HUNDRED_MIB);
        }
        try (CountingFileSource src = new CountingFileSource(file)) {
            assertThatThrownBy(() -> ElfReader.readSoname(src)).isInstanceOf(ElfFormatException.class)
                    .hasMessageContaining("bad magic");
            assertThat(src.reads()).isEqualTo(1);
            assertThat(src.bytesRead()).isLessThanOrEqualTo(64);
        }
    }

    @Test
    void hugeDynamicSegmentIsReadOnlyUpToTheEntryCap() throws Exception {
        // PT_DYNAMIC claims 90 MiB of entries that never terminate: the reader must give up
        // after its cap instead of reading (or allocating) the whole claim.
        Image image = Kind.ELF64_LE.builder().build();
        long junkAt = 1024 * 1024;
        image = image.withWord(image.pOffset(DYNAMIC), junkAt).withWord(image.pFilesz(DYNAMIC), 90L << 20);
        Path file = dir.resolve("libnvidia-junk.so.535.104.05");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.write(image.bytes());
            raf.setLength(HUNDRED_MIB);
            byte[] junk = new byte[1 << 20];
            Arrays.fill(junk, (byte) 0x7e); // tag 0x7e7e..., never DT_NULL
            raf.seek(junkAt);
            raf.write(junk);
        }
        CountingFileSource src = new CountingFileSource(file);
        try (src) {
            assertThatThrownBy(() -> assertTimeoutPreemptively(Duration.ofSeconds(10),
                    () -> ElfReader.readSoname(src)))
                    .isInstanceOf(ElfFormatException.class)
                    .hasMessageContaining("no DT_NULL within its first " + ElfReader.MAX_DYN_ENTRIES);
        }
        assertThat(src.bytesRead()).isLessThanOrEqualTo(ElfReader.MAX_DYN_ENTRIES * 16L + 1024);
    }
}

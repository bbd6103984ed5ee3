package io.driveralias.agent.elf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.testing.NativeLibraries;
import io.driveralias.agent.testing.RealDriver;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * NVIDIA's forward-compatibility note, read from libraries laid out as NVIDIA ships them (a
 * compiled stand-in with the very note), from a real driver's libcuda (which has none), and from
 * files made to mislead the reader.
 */
class CudaCompatNoteTest {

    @TempDir
    Path dir;

    @Test
    void theNoteOfACompatLibcudaSaysItsCudaVersionAndTheBranchesItRunsOn() throws Exception {
        Path lib = NativeLibraries.compileCompat(dir, "575.57.08", "12.9", List.of(535, 550, 560, 565, 570, 575));

        Optional<CudaCompatNote> note;
        try (CountingFileSource src = new CountingFileSource(lib)) {
            note = CudaCompatNote.read(src);
        }

        assertThat(note).contains(new CudaCompatNote("12.9", List.of(535, 550, 560, 565, 570, 575),
                List.of(1, 2, 7, 8, 9, 10, 11, 12, 13, 14)));
        assertThat(note.get().runsOnBranch("535.104.05")).isTrue();
        assertThat(note.get().runsOnBranch("470.256.02")).isFalse();
        assertThat(ElfReader.readSoname(ByteSource.of(Files.readAllBytes(lib)))).contains("libcuda.so.1");
    }

    @Test
    void aDriversOwnLibcudaAndAPlainLibraryHaveNone() throws Exception {
        Path real = RealDriver.libraryDir(RealDriver.Arch.AMD64).resolve("libcuda.so." + RealDriver.version(RealDriver.Arch.AMD64));
        try (CountingFileSource src = new CountingFileSource(real)) {
            assertThat(CudaCompatNote.read(src)).isEmpty();
            assertThat(src.reads()).as("a 29 MB library costs a few small reads").isLessThanOrEqualTo(4);
        }
        Path plain = Toolchain.sharedLibrary(dir, "libplain.so.1", "libplain.so.1");
        assertThat(CudaCompatNote.read(ByteSource.of(Files.readAllBytes(plain)))).isEmpty();
        Path stripped = Toolchain.strip(plain, dir.resolve("stripped.so"));
        assertThat(CudaCompatNote.read(ByteSource.of(Files.readAllBytes(stripped)))).isEmpty();
    }

    @Test
    void aHostileSectionTableIsRefusedNotFollowed() throws Exception {
        byte[] bytes = Files.readAllBytes(NativeLibraries.compileCompat(dir, "575.57.08", "12.9", List.of(575)));
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);

        byte[] huge = bytes.clone();
        ByteBuffer.wrap(huge).order(ByteOrder.LITTLE_ENDIAN).putShort(60, (short) 0xffff);
        assertThatThrownBy(() -> CudaCompatNote.read(ByteSource.of(huge))).isInstanceOf(ElfFormatException.class);

        byte[] past = bytes.clone();
        ByteBuffer.wrap(past).order(ByteOrder.LITTLE_ENDIAN).putLong(40, bytes.length - 8L);
        assertThatThrownBy(() -> CudaCompatNote.read(ByteSource.of(past))).isInstanceOf(ElfFormatException.class);

        byte[] badIndex = bytes.clone();
        ByteBuffer.wrap(badIndex).order(ByteOrder.LITTLE_ENDIAN).putShort(62, (short) (b.getShort(60) + 1));
        assertThatThrownBy(() -> CudaCompatNote.read(ByteSource.of(badIndex))).isInstanceOf(ElfFormatException.class);
    }
}

package io.driveralias.agent.elf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Writes minimal loader-shaped ELF shared objects in either class and byte order, so ELF32 and
 * big-endian files are covered without a cross toolchain. The layout is fixed so tests can
 * corrupt one field at a known offset:
 *
 * <pre>
 * ELF header
 * program headers: [0] PT_LOAD decoy covering only the ELF header, vaddr 0
 *                  [1] PT_LOAD from the dynamic section to EOF, vaddr 0x20000 (offset != vaddr)
 *                  [2] PT_DYNAMIC
 * dynamic:         [0] DT_SONAME 1  [1] DT_STRTAB  [2] DT_STRSZ  [3] DT_NULL
 * string table:    "\0" soname "\0"
 * </pre>
 *
 * Omitted dynamic entries become DT_DEBUG so the indexes above never move.
 */
final class SyntheticElf {

    static final int LOAD_DECOY = 0;
    static final int LOAD_MAIN = 1;
    static final int DYNAMIC = 2;
    static final int DYN_SONAME = 0;
    static final int DYN_STRTAB = 1;
    static final int DYN_STRSZ = 2;
    static final int DYN_NULL = 3;

    /** The four class/byte-order combinations, for parameterized tests. */
    enum Kind {
        ELF32_LE(false, ByteOrder.LITTLE_ENDIAN),
        ELF32_BE(false, ByteOrder.BIG_ENDIAN),
        ELF64_LE(true, ByteOrder.LITTLE_ENDIAN),
        ELF64_BE(true, ByteOrder.BIG_ENDIAN);

        final boolean is64;
        final ByteOrder order;

        Kind(boolean is64, ByteOrder order) {
            this.is64 = is64;
            this.order = order;
        }

        SyntheticElf builder() {
            return new SyntheticElf(is64, order);
        }
    }

    static final long MAIN_VADDR = 0x20000;
    static final long DT_DEBUG = 21;

    private final boolean is64;
    private final ByteOrder order;
    private byte[] soname = "libcuda.so.1".getBytes(StandardCharsets.ISO_8859_1);
    private boolean withSoname = true;
    private boolean withStrtab = true;
    private boolean withStrsz = true;
    private boolean terminated = true;

    private SyntheticElf(boolean is64, ByteOrder order) {
        this.is64 = is64;
        this.order = order;
    }

    static SyntheticElf elf32(ByteOrder order) {
        return new SyntheticElf(false, order);
    }

    static SyntheticElf elf64(ByteOrder order) {
        return new SyntheticElf(true, order);
    }

    SyntheticElf soname(String name) {
        return sonameBytes(name.getBytes(StandardCharsets.ISO_8859_1));
    }

    SyntheticElf sonameBytes(byte[] name) {
        this.soname = name.clone();
        return this;
    }

    SyntheticElf withoutSoname() {
        this.withSoname = false;
        return this;
    }

    SyntheticElf withoutStrtab() {
        this.withStrtab = false;
        return this;
    }

    SyntheticElf withoutStrsz() {
        this.withStrsz = false;
        return this;
    }

    /** The SONAME's bytes are the last in the file, with no NUL after them. */
    SyntheticElf unterminated() {
        this.terminated = false;
        return this;
    }

    Image build() {
        int ehdr = is64 ? 64 : 52;
        int phdr = is64 ? 56 : 32;
        int dyn = is64 ? 16 : 8;
        int phoff = ehdr;
        int dynOff = phoff + 3 * phdr;
        int strOff = dynOff + 4 * dyn;
        int strBytes = 1 + soname.length + (terminated ? 1 : 0);
        int total = strOff + strBytes;

        Image image = new Image(new byte[total], is64, order, phoff, dynOff);
        byte[] b = image.bytes;
        b[0] = 0x7f;
        b[1] = 'E';
        b[2] = 'L';
        b[3] = 'F';
        b[4] = (byte) (is64 ? 2 : 1);
        b[5] = (byte) (order == ByteOrder.LITTLE_ENDIAN ? 1 : 2);
        b[6] = 1;
        image.put(16, 2, 3); // ET_DYN
        image.put(18, 2, is64 ? 62 : 3); // EM_X86_64 / EM_386; the reader does not care
        image.put(20, 4, 1);
        image.putWord(image.ePhoff(), phoff);
        image.put(is64 ? 52 : 40, 2, ehdr);
        image.put(image.ePhentsize(), 2, phdr);
        image.put(image.ePhnum(), 2, 3);

        writePhdr(image, LOAD_DECOY, 1, 0, 0, ehdr);
        writePhdr(image, LOAD_MAIN, 1, dynOff, MAIN_VADDR, total - dynOff);
        writePhdr(image, DYNAMIC, 2, dynOff, MAIN_VADDR, 4 * dyn);

        writeDyn(image, DYN_SONAME, withSoname ? 14 : DT_DEBUG, withSoname ? 1 : 0);
        writeDyn(image, DYN_STRTAB, withStrtab ? 5 : DT_DEBUG, withStrtab ? MAIN_VADDR + (strOff - dynOff) : 0);
        writeDyn(image, DYN_STRSZ, withStrsz ? 10 : DT_DEBUG, withStrsz ? strBytes : 0);
        writeDyn(image, DYN_NULL, 0, 0);

        System.arraycopy(soname, 0, b, strOff + 1, soname.length);
        return image;
    }

    private static void writePhdr(Image image, int index, int type, long offset, long vaddr, long size) {
        image.put(image.pType(index), 4, type);
        image.putWord(image.pOffset(index), offset);
        image.putWord(image.pVaddr(index), vaddr);
        image.putWord(image.pFilesz(index), size);
        image.putWord(image.pFilesz(index) + (image.is64 ? 8 : 4), size); // p_memsz
    }

    private static void writeDyn(Image image, int index, long tag, long value) {
        image.putWord(image.dTag(index), tag);
        image.putWord(image.dVal(index), value);
    }

    /** A built file plus the offsets of its fields; the {@code with*} methods return patched copies. */
    static final class Image {
        final byte[] bytes;
        final boolean is64;
        final ByteOrder order;
        final int phoff;
        final int dynOff;

        private Image(byte[] bytes, boolean is64, ByteOrder order, int phoff, int dynOff) {
            this.bytes = bytes;
            this.is64 = is64;
            this.order = order;
            this.phoff = phoff;
            this.dynOff = dynOff;
        }

        byte[] bytes() {
            return bytes.clone();
        }

        int ePhoff() {
            return is64 ? 32 : 28;
        }

        int ePhentsize() {
            return is64 ? 54 : 42;
        }

        int ePhnum() {
            return is64 ? 56 : 44;
        }

        int pType(int i) {
            return phoff + i * (is64 ? 56 : 32);
        }

        int pOffset(int i) {
            return pType(i) + (is64 ? 8 : 4);
        }

        int pVaddr(int i) {
            return pType(i) + (is64 ? 16 : 8);
        }

        int pFilesz(int i) {
            return pType(i) + (is64 ? 32 : 16);
        }

        int dTag(int i) {
            return dynOff + i * (is64 ? 16 : 8);
        }

        int dVal(int i) {
            return dTag(i) + (is64 ? 8 : 4);
        }

        /** A copy with {@code width} bytes at {@code offset} set to {@code value} in the file's byte order. */
        Image with(int offset, int width, long value) {
            Image copy = new Image(bytes.clone(), is64, order, phoff, dynOff);
            copy.put(offset, width, value);
            return copy;
        }

        /** A copy with an address/offset/size field (4 or 8 bytes by class) set to {@code value}. */
        Image withWord(int offset, long value) {
            return with(offset, is64 ? 8 : 4, value);
        }

        Image truncated(int length) {
            return new Image(Arrays.copyOf(bytes, length), is64, order, phoff, dynOff);
        }

        private void put(int offset, int width, long value) {
            ByteBuffer buf = ByteBuffer.wrap(bytes).order(order);
            switch (width) {
                case 1 -> buf.put(offset, (byte) value);
                case 2 -> buf.putShort(offset, (short) value);
                case 4 -> buf.putInt(offset, (int) value);
                case 8 -> buf.putLong(offset, value);
                default -> throw new IllegalArgumentException("width " + width);
            }
        }

        private void putWord(int offset, long value) {
            put(offset, is64 ? 8 : 4, value);
        }
    }
}

package io.driveralias.agent.elf;

import io.driveralias.agent.core.FileNames;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Reads the DT_SONAME of a shared object the way the dynamic loader finds it: ELF header, then
 * program headers, then PT_DYNAMIC, then the dynamic string table. Section headers are never
 * consulted: the loader does not need them and stripped libraries may not have them.
 *
 * <p>The file comes from a container image and the agent runs as root, so every number taken
 * from it is checked before it is used as an offset or a length, every read is small and capped,
 * and every loop has a fixed upper bound. A 100 MiB library costs four reads of a few hundred
 * bytes. Failure is an {@link ElfFormatException} or an {@link IOException} from the source,
 * never a runtime exception.
 */
public final class ElfReader {

    // Caps sit far above what toolchains emit (libc.so.6 has ~15 program headers and ~35 dynamic
    // entries) and low enough that a hostile file costs at most a few hundred KiB of reads.
    static final int MAX_PHNUM = 4096;
    static final int MAX_PH_TABLE_BYTES = 256 * 1024;
    static final int MAX_DYN_ENTRIES = 4096;

    private static final int EI_NIDENT = 16;
    private static final int EHDR32_SIZE = 52;
    private static final int EHDR64_SIZE = 64;
    private static final int ELFCLASS32 = 1;
    private static final int ELFCLASS64 = 2;
    private static final int ELFDATA2LSB = 1;
    private static final int ELFDATA2MSB = 2;
    private static final int EV_CURRENT = 1;
    private static final int PN_XNUM = 0xffff;
    private static final int PT_LOAD = 1;
    private static final int PT_DYNAMIC = 2;
    private static final long DT_NULL = 0;
    private static final long DT_STRTAB = 5;
    private static final long DT_STRSZ = 10;
    private static final long DT_SONAME = 14;

    /** Marks a dynamic tag as not seen; real values are validated to be non-negative. */
    private static final long ABSENT = -1;

    /** A program header reduced to what the reader uses; all fields are non-negative. */
    private record Segment(long offset, long vaddr, long filesz) {
        boolean containsAddress(long address) {
            // Only p_filesz counts: bytes between p_filesz and p_memsz are zero-fill, not in the file.
            return address >= vaddr && address - vaddr < filesz;
        }
    }

    private record ProgramHeaders(List<Segment> loads, Segment dynamic) {
    }

    /** Structure sizes and field decoding for one ELF class and byte order. */
    record Layout(boolean is64, ByteOrder order, int ehdrSize, int phdrSize, int dynSize) {
        Layout(boolean is64, ByteOrder order) {
            this(is64, order, is64 ? EHDR64_SIZE : EHDR32_SIZE, is64 ? 56 : 32, is64 ? 16 : 8);
        }

        ByteBuffer wrap(byte[] bytes) {
            return ByteBuffer.wrap(bytes).order(order);
        }

        int half(ByteBuffer b, int at) {
            return Short.toUnsignedInt(b.getShort(at));
        }

        /** An address, offset or size. ELF64 values are unsigned, so the top bit set is refused. */
        long word(ByteBuffer b, int at, String what) throws ElfFormatException {
            if (!is64) {
                return Integer.toUnsignedLong(b.getInt(at));
            }
            long value = b.getLong(at);
            if (value < 0) {
                throw new ElfFormatException(what + " 0x" + Long.toHexString(value) + " is out of range");
            }
            return value;
        }

        /** d_tag is signed in both classes; ELF32 tags sign-extend so comparisons work alike. */
        long tag(ByteBuffer b, int at) {
            return is64 ? b.getLong(at) : b.getInt(at);
        }
    }

    private ElfReader() {
    }

    /**
     * The SONAME recorded in the file's dynamic section, or empty for a valid ELF file without
     * one (no PT_DYNAMIC or no DT_SONAME). A SONAME that is not a plain file name is an error:
     * it would become a link name.
     */
    public static Optional<String> readSoname(ByteSource src) throws ElfFormatException, IOException {
        long size = src.size();
        byte[][] header = new byte[1][];
        Layout layout = header(src, header);
        ByteBuffer h = layout.wrap(header[0]);
        if (h.getInt(20) != EV_CURRENT) {
            throw new ElfFormatException("unsupported e_version " + Integer.toUnsignedString(h.getInt(20)));
        }
        long phoff = layout.word(h, layout.is64() ? 32 : 28, "e_phoff");
        int phentsize = layout.half(h, layout.is64() ? 54 : 42);
        int phnum = layout.half(h, layout.is64() ? 56 : 44);

        ProgramHeaders headers = readProgramHeaders(src, size, layout, phoff, phentsize, phnum);
        if (headers.dynamic() == null) {
            return Optional.empty();
        }
        return readDynamicSoname(src, size, layout, headers);
    }

    /** The ELF header's first bytes (at least {@value #EHDR64_SIZE} where the file has them), read and checked. */
    static Layout header(ByteSource src, byte[][] headerOut) throws ElfFormatException, IOException {
        long size = src.size();
        if (size < EI_NIDENT) {
            throw new ElfFormatException("file of " + size + " bytes is too short for an ELF header");
        }
        byte[] header = read(src, 0, Math.min(EHDR64_SIZE, size));
        Layout layout = layoutOf(header);
        if (size < layout.ehdrSize()) {
            throw new ElfFormatException("ELF header truncated: file has " + size + " bytes, header needs "
                    + layout.ehdrSize());
        }
        headerOut[0] = header;
        return layout;
    }

    private static Layout layoutOf(byte[] ident) throws ElfFormatException {
        if (ident[0] != 0x7f || ident[1] != 'E' || ident[2] != 'L' || ident[3] != 'F') {
            throw new ElfFormatException("not an ELF file (bad magic)");
        }
        boolean is64 = switch (ident[4]) {
            case ELFCLASS32 -> false;
            case ELFCLASS64 -> true;
            default -> throw new ElfFormatException("unknown ELF class " + ident[4]);
        };
        ByteOrder order = switch (ident[5]) {
            case ELFDATA2LSB -> ByteOrder.LITTLE_ENDIAN;
            case ELFDATA2MSB -> ByteOrder.BIG_ENDIAN;
            default -> throw new ElfFormatException("unknown ELF data encoding " + ident[5]);
        };
        if (ident[6] != EV_CURRENT) {
            throw new ElfFormatException("unsupported ELF ident version " + ident[6]);
        }
        return new Layout(is64, order);
    }

    private static ProgramHeaders readProgramHeaders(ByteSource src, long size, Layout layout, long phoff,
            int phentsize, int phnum) throws ElfFormatException, IOException {
        if (phnum == PN_XNUM) {
            // The real count would live in section header 0; shared libraries never need that.
            throw new ElfFormatException("e_phnum is PN_XNUM (extended numbering is not supported)");
        }
        if (phnum > MAX_PHNUM) {
            throw new ElfFormatException("e_phnum " + phnum + " exceeds the limit of " + MAX_PHNUM);
        }
        if (phnum == 0) {
            return new ProgramHeaders(List.of(), null);
        }
        if (phentsize < layout.phdrSize()) {
            throw new ElfFormatException("e_phentsize " + phentsize + " is smaller than a program header ("
                    + layout.phdrSize() + ")");
        }
        long tableBytes = (long) phnum * phentsize; // both are 16-bit, cannot overflow
        if (tableBytes > MAX_PH_TABLE_BYTES) {
            throw new ElfFormatException("program header table of " + tableBytes + " bytes exceeds the limit of "
                    + MAX_PH_TABLE_BYTES);
        }
        requireInFile(phoff, tableBytes, size, "program header table");
        ByteBuffer table = layout.wrap(read(src, phoff, tableBytes));
        List<Segment> loads = new ArrayList<>();
        Segment dynamic = null;
        for (int i = 0; i < phnum; i++) {
            int at = i * phentsize;
            int type = table.getInt(at);
            if (type != PT_LOAD && type != PT_DYNAMIC) {
                continue;
            }
            Segment segment = layout.is64()
                    ? new Segment(layout.word(table, at + 8, "p_offset"), layout.word(table, at + 16, "p_vaddr"),
                            layout.word(table, at + 32, "p_filesz"))
                    : new Segment(layout.word(table, at + 4, "p_offset"), layout.word(table, at + 8, "p_vaddr"),
                            layout.word(table, at + 16, "p_filesz"));
            if (type == PT_LOAD) {
                loads.add(segment);
            } else if (dynamic != null) {
                // Two answers to "where is the dynamic section" is ambiguity a hostile file would exploit.
                throw new ElfFormatException("more than one PT_DYNAMIC program header");
            } else {
                dynamic = segment;
            }
        }
        return new ProgramHeaders(loads, dynamic);
    }

    private static Optional<String> readDynamicSoname(ByteSource src, long size, Layout layout,
            ProgramHeaders headers) throws ElfFormatException, IOException {
        Segment dynamic = headers.dynamic();
        requireInFile(dynamic.offset(), dynamic.filesz(), size, "PT_DYNAMIC");
        int entries = (int) Math.min(dynamic.filesz() / layout.dynSize(), MAX_DYN_ENTRIES);
        ByteBuffer dyn = layout.wrap(read(src, dynamic.offset(), (long) entries * layout.dynSize()));

        long soname = ABSENT;
        long strtab = ABSENT;
        long strsz = ABSENT;
        boolean terminated = false;
        for (int i = 0; i < entries && !terminated; i++) {
            int at = i * layout.dynSize();
            long tag = layout.tag(dyn, at);
            int valueAt = at + layout.dynSize() / 2;
            // Values of other tags are never decoded: they may be anything and are none of our business.
            if (tag == DT_NULL) {
                terminated = true;
            } else if (tag == DT_SONAME) {
                soname = once(soname, layout.word(dyn, valueAt, "DT_SONAME"), "DT_SONAME");
            } else if (tag == DT_STRTAB) {
                strtab = once(strtab, layout.word(dyn, valueAt, "DT_STRTAB"), "DT_STRTAB");
            } else if (tag == DT_STRSZ) {
                strsz = once(strsz, layout.word(dyn, valueAt, "DT_STRSZ"), "DT_STRSZ");
            }
        }
        if (!terminated) {
            throw new ElfFormatException("dynamic section has no DT_NULL within its first " + entries + " entries");
        }
        if (soname == ABSENT) {
            return Optional.empty();
        }
        if (strtab == ABSENT) {
            throw new ElfFormatException("DT_SONAME present but DT_STRTAB missing");
        }
        return Optional.of(readName(src, size, headers.loads(), strtab, strsz, soname));
    }

    private static String readName(ByteSource src, long size, List<Segment> loads, long strtab, long strsz,
            long nameOffset) throws ElfFormatException, IOException {
        // DT_STRTAB is an address in the loaded image; only a PT_LOAD says where that is in the file.
        Segment load = loads.stream().filter(s -> s.containsAddress(strtab)).findFirst()
                .orElseThrow(() -> new ElfFormatException(
                        "DT_STRTAB 0x" + Long.toHexString(strtab) + " is not inside any PT_LOAD segment"));
        requireInFile(load.offset(), load.filesz(), size, "PT_LOAD");
        long intoSegment = strtab - load.vaddr();
        long tableStart = load.offset() + intoSegment; // <= offset + filesz <= size, no overflow
        long tableBytes = load.filesz() - intoSegment;
        if (strsz != ABSENT) {
            tableBytes = Math.min(tableBytes, strsz);
        }
        if (nameOffset >= tableBytes) {
            throw new ElfFormatException("DT_SONAME offset " + nameOffset + " is outside the string table ("
                    + tableBytes + " bytes)");
        }
        // One byte more than the longest acceptable name is enough to tell "too long" from "fits".
        long limit = FileNames.NAME_MAX + 1;
        long want = Math.min(tableBytes - nameOffset, limit);
        byte[] raw = read(src, tableStart + nameOffset, want);
        int nul = indexOfNul(raw);
        if (nul < 0) {
            throw new ElfFormatException(want == limit
                    ? "SONAME is longer than " + FileNames.NAME_MAX + " bytes"
                    : "SONAME is not NUL-terminated within the string table");
        }
        // ISO-8859-1 maps every byte to one char, so non-ASCII bytes reach isPlainName and are
        // refused there instead of being folded into replacement characters.
        String name = new String(raw, 0, nul, StandardCharsets.ISO_8859_1);
        if (!FileNames.isPlainName(name)) {
            throw new ElfFormatException("SONAME '" + printable(name) + "' is not a plain file name");
        }
        return name;
    }

    private static long once(long previous, long value, String tag) throws ElfFormatException {
        if (previous != ABSENT) {
            throw new ElfFormatException("duplicate " + tag + " entry");
        }
        return value;
    }

    /** Inputs are non-negative, so {@code size - offset} cannot overflow where {@code offset + length} could. */
    static void requireInFile(long offset, long length, long size, String what) throws ElfFormatException {
        if (offset > size || length > size - offset) {
            throw new ElfFormatException(what + " (" + length + " bytes at " + offset
                    + ") extends past the end of the file (" + size + " bytes)");
        }
    }

    /** Callers have bounded {@code length} by one of the caps, so the int cast is exact. */
    static byte[] read(ByteSource src, long position, long length) throws IOException {
        byte[] bytes = new byte[(int) length];
        src.readFully(position, bytes, bytes.length);
        return bytes;
    }

    private static int indexOfNul(byte[] bytes) {
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] == 0) {
                return i;
            }
        }
        return -1;
    }

    /** Keeps control characters from a hostile SONAME out of log lines. */
    private static String printable(String s) {
        return s.chars()
                .mapToObj(c -> c >= 0x20 && c < 0x7f && c != '\\' ? String.valueOf((char) c) : "\\x%02x".formatted(c))
                .collect(Collectors.joining());
    }
}

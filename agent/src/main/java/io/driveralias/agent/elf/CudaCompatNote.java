package io.driveralias.agent.elf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The note NVIDIA puts in the {@code libcuda.so} of its CUDA forward-compatibility packages
 * (cuda-compat, from CUDA 12.9 on): an {@code SHT_NOTE} section {@code .note.cuda.fwd_compatibility}
 * whose owner is "NVIDIA Corporation" and whose description is JSON, e.g.
 * {@code {"format":1,"CUDA version":"12.9","driver":[535,550,560,565,570,575],"device":[1,2,7,...]}}:
 * the CUDA version it brings, the driver branches (majors) whose kernel module it runs on, and
 * the GPU brands (NVML's brand types) that support forward compatibility. NVIDIA's own hook
 * (enable-cuda-compat) uses the compat libraries only when the host's branch is listed and the
 * compat driver is newer; older compat libraries carry no note.
 *
 * <p>Read as {@link ElfReader} reads: every number from the file checked, every read small and
 * capped (the section headers, their names, the one note), whatever the file's size.
 */
public record CudaCompatNote(String cudaVersion, List<Integer> driverBranches, List<Integer> deviceBrands) {

    static final String SECTION = ".note.cuda.fwd_compatibility";
    private static final String OWNER = "NVIDIA Corporation";
    private static final int SHT_NOTE = 7;
    private static final int MAX_SHNUM = 4096;
    private static final int MAX_SH_TABLE_BYTES = 256 * 1024;
    private static final int MAX_NAMES_BYTES = 64 * 1024;
    private static final int MAX_NOTE_BYTES = 4096;
    private static final int MAX_LIST = 64;
    private static final Pattern CUDA = Pattern.compile("\"cuda version\"\\s*:\\s*\"([0-9]{1,4}(?:\\.[0-9]{1,4}){0,2})\"",
            Pattern.CASE_INSENSITIVE);

    public CudaCompatNote {
        driverBranches = List.copyOf(driverBranches);
        deviceBrands = List.copyOf(deviceBrands);
    }

    /** Whether the note names the branch (the major, e.g. 535) of a kernel module among those it runs on. */
    public boolean runsOnBranch(String driverVersion) {
        try {
            int dot = driverVersion.indexOf('.');
            return driverBranches.contains(Integer.parseInt(dot < 0 ? driverVersion : driverVersion.substring(0, dot)));
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** The note of a compat libcuda, or empty for a file without one (a driver's own libcuda, older compat libraries). */
    public static Optional<CudaCompatNote> read(ByteSource src) throws ElfFormatException, IOException {
        byte[][] header = new byte[1][];
        ElfReader.Layout layout = ElfReader.header(src, header);
        ByteBuffer h = layout.wrap(header[0]);
        boolean is64 = layout.is64();
        long shoff = layout.word(h, is64 ? 40 : 32, "e_shoff");
        int shentsize = layout.half(h, is64 ? 58 : 46);
        int shnum = layout.half(h, is64 ? 60 : 48);
        int shstrndx = layout.half(h, is64 ? 62 : 50);
        int shdrSize = is64 ? 64 : 40;
        if (shoff == 0 || shnum == 0) {
            return Optional.empty();
        }
        if (shnum > MAX_SHNUM || shentsize < shdrSize || (long) shnum * shentsize > MAX_SH_TABLE_BYTES) {
            throw new ElfFormatException("section header table of " + shnum + " x " + shentsize + " bytes is refused");
        }
        if (shstrndx >= shnum) {
            throw new ElfFormatException("e_shstrndx " + shstrndx + " is not a section");
        }
        long size = src.size();
        ElfReader.requireInFile(shoff, (long) shnum * shentsize, size, "section header table");
        ByteBuffer table = layout.wrap(ElfReader.read(src, shoff, (long) shnum * shentsize));
        Section names = section(layout, table, shstrndx * shentsize);
        ElfReader.requireInFile(names.offset(), names.size(), size, "section names");
        byte[] nameBytes = ElfReader.read(src, names.offset(), Math.min(names.size(), MAX_NAMES_BYTES));
        for (int i = 0; i < shnum; i++) {
            Section s = section(layout, table, i * shentsize);
            if (s.type() == SHT_NOTE && SECTION.equals(name(nameBytes, s.name()))) {
                if (s.size() > MAX_NOTE_BYTES) {
                    throw new ElfFormatException(SECTION + " of " + s.size() + " bytes is refused");
                }
                ElfReader.requireInFile(s.offset(), s.size(), size, SECTION);
                return parse(layout, ElfReader.read(src, s.offset(), s.size()));
            }
        }
        return Optional.empty();
    }

    private record Section(long name, int type, long offset, long size) {
    }

    private static Section section(ElfReader.Layout layout, ByteBuffer table, int at) throws ElfFormatException {
        long name = Integer.toUnsignedLong(table.getInt(at));
        int type = table.getInt(at + 4);
        return layout.is64()
                ? new Section(name, type, layout.word(table, at + 24, "sh_offset"), layout.word(table, at + 32, "sh_size"))
                : new Section(name, type, layout.word(table, at + 16, "sh_offset"), layout.word(table, at + 20, "sh_size"));
    }

    private static String name(byte[] names, long offset) {
        if (offset >= names.length) {
            return "";
        }
        int end = (int) offset;
        while (end < names.length && names[end] != 0) {
            end++;
        }
        return new String(names, (int) offset, end - (int) offset, StandardCharsets.ISO_8859_1);
    }

    /** The notes of the section ({@code Elf_Nhdr}: namesz, descsz, type; name and description 4-aligned). */
    private static Optional<CudaCompatNote> parse(ElfReader.Layout layout, byte[] notes) {
        ByteBuffer b = layout.wrap(notes);
        int at = 0;
        while (at + 12 <= notes.length) {
            long nameSize = Integer.toUnsignedLong(b.getInt(at));
            long descSize = Integer.toUnsignedLong(b.getInt(at + 4));
            long nameAt = at + 12L;
            long descAt = nameAt + align4(nameSize);
            if (descAt + descSize > notes.length) {
                return Optional.empty();
            }
            String owner = new String(notes, (int) nameAt, (int) nameSize, StandardCharsets.ISO_8859_1).replace("\0", "");
            if (owner.equals(OWNER)) {
                return description(new String(notes, (int) descAt, (int) descSize, StandardCharsets.ISO_8859_1));
            }
            at = (int) (descAt + align4(descSize));
        }
        return Optional.empty();
    }

    private static long align4(long n) {
        return (n + 3) & ~3L;
    }

    /** The JSON's three fields, read by pattern: a few hundred bytes of it, never a tree. */
    private static Optional<CudaCompatNote> description(String json) {
        Matcher cuda = CUDA.matcher(json);
        if (!cuda.find()) {
            return Optional.empty();
        }
        return Optional.of(new CudaCompatNote(cuda.group(1), list(json, "driver"), list(json, "device")));
    }

    private static List<Integer> list(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\\[([0-9,\\s]{0,512})]", Pattern.CASE_INSENSITIVE).matcher(json);
        List<Integer> values = new ArrayList<>();
        if (m.find()) {
            for (String v : m.group(1).split(",")) {
                if (!v.isBlank() && values.size() < MAX_LIST && v.trim().length() <= 6) {
                    values.add(Integer.parseInt(v.trim()));
                }
            }
        }
        return values;
    }
}

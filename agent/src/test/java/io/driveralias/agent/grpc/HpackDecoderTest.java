package io.driveralias.agent.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.driveralias.agent.testing.SeededCases;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * HPACK as RFC 7541's own examples (Appendix C) decode, the dynamic table after each block
 * included, then its bounds: every malformed or oversized block is the codec's own error.
 */
class HpackDecoderTest {

    private static byte[] hex(String s) {
        return HexFormat.of().parseHex(s.replaceAll("\\s", ""));
    }

    private static List<String> decode(HpackDecoder decoder, byte[] block) throws H2ProtocolException {
        List<String> fields = new ArrayList<>();
        decoder.decode(block, 0, block.length, (n, v) -> fields.add(n + ": " + v));
        return fields;
    }

    private static List<String> table(HpackDecoder decoder) {
        List<String> entries = new ArrayList<>();
        for (int i = 0; decoder.entry(i) != null; i++) {
            entries.add(decoder.entry(i)[0] + ": " + decoder.entry(i)[1]);
        }
        return entries;
    }

    @Test
    void c2FieldRepresentations() throws H2ProtocolException {
        HpackDecoder d = new HpackDecoder(4096, 16384);
        assertThat(decode(d, hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572")))
                .containsExactly("custom-key: custom-header");
        assertThat(d.tableSize()).isEqualTo(55);
        assertThat(decode(d, hex("040c 2f73 616d 706c 652f 7061 7468"))).containsExactly(":path: /sample/path");
        assertThat(decode(d, hex("1008 7061 7373 776f 7264 0673 6563 7265 74"))).containsExactly("password: secret");
        assertThat(decode(d, hex("82"))).containsExactly(":method: GET");
        assertThat(d.tableSize()).as("only C.2.1 indexes").isEqualTo(55);
    }

    @Test
    void c3RequestsWithoutHuffman() throws H2ProtocolException {
        requests(hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"), hex("8286 84be 5808 6e6f 2d63 6163 6865"),
                hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"));
    }

    @Test
    void c4RequestsWithHuffman() throws H2ProtocolException {
        requests(hex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff"), hex("8286 84be 5886 a8eb 1064 9cbf"),
                hex("8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"));
    }

    private static void requests(byte[] first, byte[] second, byte[] third) throws H2ProtocolException {
        HpackDecoder d = new HpackDecoder(4096, 16384);
        assertThat(decode(d, first)).containsExactly(":method: GET", ":scheme: http", ":path: /", ":authority: www.example.com");
        assertThat(table(d)).containsExactly(":authority: www.example.com");
        assertThat(d.tableSize()).isEqualTo(57);
        assertThat(decode(d, second)).containsExactly(":method: GET", ":scheme: http", ":path: /", ":authority: www.example.com",
                "cache-control: no-cache");
        assertThat(d.tableSize()).isEqualTo(110);
        assertThat(decode(d, third)).containsExactly(":method: GET", ":scheme: https", ":path: /index.html",
                ":authority: www.example.com", "custom-key: custom-value");
        assertThat(table(d)).containsExactly("custom-key: custom-value", "cache-control: no-cache", ":authority: www.example.com");
        assertThat(d.tableSize()).isEqualTo(164);
    }

    @Test
    void c5ResponsesWithoutHuffmanEvictInA256ByteTable() throws H2ProtocolException {
        responses(hex("""
                4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d"""),
                hex("4803 3330 37c1 c0bf"), hex("""
                88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31"""));
    }

    @Test
    void c6ResponsesWithHuffmanEvictInA256ByteTable() throws H2ProtocolException {
        responses(hex("""
                4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3"""), hex("4883 640e ffc1 c0bf"), hex("""
                88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                9587 3160 65c0 03ed 4ee5 b106 3d50 07"""));
    }

    private static void responses(byte[] first, byte[] second, byte[] third) throws H2ProtocolException {
        HpackDecoder d = new HpackDecoder(256, 16384);
        assertThat(decode(d, first)).containsExactly(":status: 302", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:21 GMT",
                "location: https://www.example.com");
        assertThat(d.tableSize()).isEqualTo(222);
        assertThat(decode(d, second)).containsExactly(":status: 307", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:21 GMT",
                "location: https://www.example.com");
        assertThat(table(d)).containsExactly(":status: 307", "location: https://www.example.com",
                "date: Mon, 21 Oct 2013 20:13:21 GMT", "cache-control: private");
        assertThat(d.tableSize()).isEqualTo(222);
        assertThat(decode(d, third)).containsExactly(":status: 200", "cache-control: private", "date: Mon, 21 Oct 2013 20:13:22 GMT",
                "location: https://www.example.com", "content-encoding: gzip",
                "set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1");
        assertThat(table(d)).containsExactly("set-cookie: foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
                "content-encoding: gzip", "date: Mon, 21 Oct 2013 20:13:22 GMT");
        assertThat(d.tableSize()).isEqualTo(215);
    }

    @Test
    void everyByteSurvivesHuffmanCoding() throws H2ProtocolException {
        SplittableRandom random = new SplittableRandom(SeededCases.seeds(1).findFirst().orElseThrow());
        for (int round = 0; round < 200; round++) {
            byte[] raw = new byte[random.nextInt(300)];
            random.nextBytes(raw);
            byte[] coded = ServerFrames.huffman(raw);
            assertThat(Huffman.decode(coded, 0, coded.length, 1 << 20)).isEqualTo(new String(raw, StandardCharsets.ISO_8859_1));
        }
    }

    @Test
    void sizeUpdatesShrinkTheTableAndMayNotExceedWhatWasAdvertised() throws H2ProtocolException {
        HpackDecoder d = new HpackDecoder(4096, 16384);
        decode(d, hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"));
        assertThat(decode(d, hex("20 82"))).as("a size update to 0 first").containsExactly(":method: GET");
        assertThat(d.tableSize()).isZero();
        assertThatThrownBy(() -> decode(d, hex("3fe2 1f"))).isInstanceOf(H2ProtocolException.class).hasMessageContaining("4097");
        assertThatThrownBy(() -> decode(new HpackDecoder(4096, 16384), hex("82 20"))).isInstanceOf(H2ProtocolException.class)
                .hasMessageContaining("after a header field");
    }

    @Test
    void malformedBlocksAreTheCodecsOwnError() {
        for (String block : List.of("80", "be", "ff ff ff ff ff 0f", "ff 80 80 80 80 80 80", "40 0a 6375", "40 85 ff", "04 01",
                "40 81 ff 00", "41 84 ff ff ff ff", "0f")) {
            assertThatThrownBy(() -> decode(new HpackDecoder(4096, 16384), hex(block))).as(block)
                    .isInstanceOf(H2ProtocolException.class);
        }
    }

    @Test
    void aHeaderListOverTheAdvertisedSizeIsRefused() {
        ServerFrames encoder = new ServerFrames().huffman(false);
        byte[] block = encoder.encode("grpc-message", "x".repeat(200), "other", "y".repeat(200));
        assertThatThrownBy(() -> decode(new HpackDecoder(4096, 400), block)).isInstanceOf(H2ProtocolException.class)
                .hasMessageContaining("400 bytes");
    }
}

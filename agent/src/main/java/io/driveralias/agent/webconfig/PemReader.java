package io.driveralias.agent.webconfig;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Certificates and private keys in PEM, with the JDK alone (no Bouncy Castle): keys in PKCS#8
 * ({@code PRIVATE KEY}), PKCS#1 RSA ({@code RSA PRIVATE KEY}, {@code openssl genrsa -traditional})
 * and SEC1 EC ({@code EC PRIVATE KEY}, {@code openssl ecparam -genkey}), the last two wrapped in
 * PKCS#8 as the JDK reads it. Encrypted keys are refused, as in the Prometheus exporter toolkit.
 */
final class PemReader {

    private static final Pattern BLOCK = Pattern.compile(
            "-----BEGIN ([A-Z0-9 ]+)-----\\s*(.*?)-----END \\1-----", Pattern.DOTALL);
    private static final byte[] RSA_ALGORITHM = HexFormat.of().parseHex("300d06092a864886f70d0101010500");
    private static final byte[] EC_PUBLIC_KEY_OID = HexFormat.of().parseHex("06072a8648ce3d0201");
    private static final String[] KEY_ALGORITHMS = {"RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS"};

    /** What went wrong, said for a person (the caller adds which field). */
    static final class PemException extends Exception {
        PemException(String message) {
            super(message);
        }
    }

    private PemReader() {
    }

    /** Every CERTIFICATE block, in order (a chain: the server's first). */
    static List<X509Certificate> certificates(String pem) throws PemException {
        List<X509Certificate> certificates = new ArrayList<>();
        try {
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            for (Block b : blocks(pem)) {
                if (b.type().equals("CERTIFICATE")) {
                    certificates.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(b.der())));
                }
            }
        } catch (CertificateException | RuntimeException e) {
            throw new PemException("holds a certificate that cannot be read: " + e.getMessage());
        }
        if (certificates.isEmpty()) {
            throw new PemException("holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
        }
        return certificates;
    }

    /** The one private key of {@code pem}. */
    static PrivateKey privateKey(String pem) throws PemException {
        for (Block b : blocks(pem)) {
            if (b.encryptedLegacy() && b.type().endsWith("PRIVATE KEY")) {
                throw new PemException("holds an encrypted key (Proc-Type: 4,ENCRYPTED): give it unencrypted");
            }
            byte[] pkcs8 = switch (b.type()) {
                case "PRIVATE KEY" -> b.der();
                case "RSA PRIVATE KEY" -> pkcs8(RSA_ALGORITHM, b.der());
                case "EC PRIVATE KEY" -> pkcs8(ecAlgorithm(b.der()), b.der());
                case "ENCRYPTED PRIVATE KEY" -> throw new PemException("holds an encrypted key: give it unencrypted"
                        + " (openssl pkcs8 -topk8 -nocrypt), readable only by the agent");
                default -> null;
            };
            if (pkcs8 != null) {
                return decode(pkcs8);
            }
        }
        throw new PemException("holds no PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)");
    }

    private static PrivateKey decode(byte[] pkcs8) throws PemException {
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(pkcs8);
        for (String algorithm : KEY_ALGORITHMS) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            } catch (GeneralSecurityException | RuntimeException e) {
                // not this algorithm: the next
            }
        }
        throw new PemException("holds a private key of no algorithm the JDK knows (RSA, EC, Ed25519, Ed448, RSASSA-PSS)");
    }

    private record Block(String type, byte[] der, boolean encryptedLegacy) {
    }

    private static List<Block> blocks(String pem) throws PemException {
        List<Block> blocks = new ArrayList<>();
        Matcher m = BLOCK.matcher(pem);
        while (m.find()) {
            String body = m.group(2);
            boolean encrypted = body.contains("Proc-Type: 4,ENCRYPTED");
            int headers = body.indexOf("\n\n");
            if (body.contains(":") && headers >= 0) {
                body = body.substring(headers + 2); // RFC 1421 headers before the base64
            }
            try {
                blocks.add(new Block(m.group(1), Base64.getMimeDecoder().decode(body), encrypted));
            } catch (IllegalArgumentException e) {
                throw new PemException("holds a " + m.group(1) + " block that is not base64");
            }
        }
        return blocks;
    }

    /** The PKCS#8 algorithm of a SEC1 key: ecPublicKey with the curve named in the key's [0] parameters. */
    private static byte[] ecAlgorithm(byte[] sec1) throws PemException {
        Der key = new Der(sec1);
        Der fields = key.enter(0x30);
        fields.skip(0x02); // version 1
        fields.skip(0x04); // the private key
        if (!fields.hasMore() || fields.peekTag() != 0xa0) {
            throw new PemException("holds an EC key without its curve: write it with the curve named"
                    + " (openssl ec -param_enc named_curve) or as PKCS#8 (openssl pkcs8 -topk8 -nocrypt)");
        }
        byte[] curve = fields.enter(0xa0).element(0x06);
        return sequence(EC_PUBLIC_KEY_OID, curve);
    }

    /** SEQUENCE { INTEGER 0, algorithm, OCTET STRING { key } }. */
    private static byte[] pkcs8(byte[] algorithm, byte[] key) {
        return sequence(new byte[] {0x02, 0x01, 0x00}, algorithm, tlv(0x04, key));
    }

    private static byte[] sequence(byte[]... parts) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            body.writeBytes(p);
        }
        return tlv(0x30, body.toByteArray());
    }

    private static byte[] tlv(int tag, byte[] content) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(content.length + 6);
        out.write(tag);
        int n = content.length;
        if (n < 0x80) {
            out.write(n);
        } else {
            int bytes = n > 0xffffff ? 4 : n > 0xffff ? 3 : n > 0xff ? 2 : 1;
            out.write(0x80 | bytes);
            for (int i = bytes - 1; i >= 0; i--) {
                out.write(n >>> (8 * i));
            }
        }
        out.writeBytes(content);
        return out.toByteArray();
    }

    /** Just enough DER to find a SEC1 key's curve; every length is checked against what is there. */
    private static final class Der {
        private final byte[] b;
        private int pos;
        private final int end;

        Der(byte[] b) {
            this(b, 0, b.length);
        }

        private Der(byte[] b, int from, int end) {
            this.b = b;
            this.pos = from;
            this.end = end;
        }

        boolean hasMore() {
            return pos < end;
        }

        int peekTag() {
            return b[pos] & 0xff;
        }

        Der enter(int tag) throws PemException {
            int length = header(tag);
            Der inner = new Der(b, pos, pos + length);
            pos += length;
            return inner;
        }

        void skip(int tag) throws PemException {
            int length = header(tag); // before reading pos: header() moves it past the tag and length
            pos += length;
        }

        /** The whole element (tag, length, content), as it stands in an encoding. */
        byte[] element(int tag) throws PemException {
            int start = pos;
            int length = header(tag);
            pos += length;
            return java.util.Arrays.copyOfRange(b, start, pos);
        }

        private int header(int tag) throws PemException {
            if (pos + 2 > end || (b[pos] & 0xff) != tag) {
                throw new PemException("holds an EC PRIVATE KEY that is not SEC1 DER");
            }
            pos++;
            int first = b[pos++] & 0xff;
            int length = first;
            if (first >= 0x80) {
                int bytes = first & 0x7f;
                if (bytes == 0 || bytes > 3 || pos + bytes > end) {
                    throw new PemException("holds an EC PRIVATE KEY with a bad DER length");
                }
                length = 0;
                for (int i = 0; i < bytes; i++) {
                    length = (length << 8) | (b[pos++] & 0xff);
                }
            }
            if (length > end - pos) {
                throw new PemException("holds an EC PRIVATE KEY shorter than its DER lengths say");
            }
            return length;
        }
    }
}

// The real Guava side of tests/test_guava.py and benchmarks/spark_agreement.py:
// the tests compile this with javac against Debian's libguava-java
// (/usr/share/java/guava.jar) and run it on files they write.
//
//   hash                                  JSON lines of Hashing.murmur3_128() vectors
//   bloom N FPP FUNNEL KEYS PROBES OUT ANSWERS
//                                         BloomFilter.create(funnel, N, FPP), put every
//                                         key, writeTo() to OUT, mightContain of every
//                                         probe to ANSWERS (one byte 0/1 each)
//   query FILTER FUNNEL PROBES ANSWERS    BloomFilter.readFrom(FILTER, funnel), answers
//
// FUNNEL: long (Funnels.longFunnel), string (Funnels.stringFunnel(UTF_8)),
// binary (Funnels.byteArrayFunnel).  Key files as in BkSparkTool.java.
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import com.google.common.hash.Hashing;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;

public final class BkGuavaTool {
    private static Object[] readKeys(String path, String type) throws IOException {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(path), 1 << 16))) {
            int n = in.readInt();
            Object[] keys = new Object[n];
            for (int i = 0; i < n; i++) {
                if (type.equals("long")) {
                    keys[i] = in.readLong();
                } else {
                    byte[] b = new byte[in.readInt()];
                    in.readFully(b);
                    keys[i] = type.equals("string") ? new String(b, StandardCharsets.UTF_8) : b;
                }
            }
            return keys;
        }
    }

    @SuppressWarnings("unchecked")
    private static Funnel<Object> funnel(String type) {
        Funnel<?> f = type.equals("long") ? Funnels.longFunnel()
                : type.equals("string") ? Funnels.stringFunnel(StandardCharsets.UTF_8)
                : Funnels.byteArrayFunnel();
        return (Funnel<Object>) f;
    }

    private static void answers(BloomFilter<Object> f, Object[] probes, String out) throws IOException {
        byte[] a = new byte[probes.length];
        for (int i = 0; i < probes.length; i++)
            a[i] = (byte) (f.mightContain(probes[i]) ? 1 : 0);
        Files.write(Paths.get(out), a);
    }

    public static void main(String[] a) throws IOException {
        switch (a[0]) {
            case "hash":
                for (int len = 0; len <= 70; len += (len < 34 ? 1 : 9)) {
                    byte[] b = new byte[len];
                    StringBuilder hex = new StringBuilder();
                    for (int i = 0; i < len; i++) {
                        b[i] = (byte) (((i * 131 + 7) ^ (i >> 8)) & 0xff);
                        hex.append(String.format("%02x", b[i] & 0xff));
                    }
                    for (int seed : new int[] {0, 42, -1}) {
                        StringBuilder out = new StringBuilder();
                        for (byte x : Hashing.murmur3_128(seed).hashBytes(b).asBytes())
                            out.append(String.format("%02x", x & 0xff));
                        System.out.println("{\"seed\": " + seed + ", \"data_hex\": \"" + hex
                                + "\", \"digest_hex\": \"" + out + "\"}");
                    }
                }
                break;
            case "bloom": {
                BloomFilter<Object> f = BloomFilter.create(funnel(a[3]), Long.parseLong(a[1]), Double.parseDouble(a[2]));
                for (Object k : readKeys(a[4], a[3]))
                    f.put(k);
                try (OutputStream o = new BufferedOutputStream(new FileOutputStream(a[6]))) {
                    f.writeTo(o);
                }
                answers(f, readKeys(a[5], a[3]), a[7]);
                break;
            }
            case "query":
                try (InputStream in = new BufferedInputStream(new FileInputStream(a[1]))) {
                    answers(BloomFilter.readFrom(in, funnel(a[2])), readKeys(a[3], a[2]), a[4]);
                }
                break;
            default:
                throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }
}

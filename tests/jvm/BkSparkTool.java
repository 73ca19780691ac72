// The real Spark side of tests/test_spark.py and benchmarks/spark_agreement.py:
// bloomkit's tests compile this with javac against the installed PySpark's
// spark-sketch jar (tests/jvm_tools.py) and run it on files they write.
// It sits in Spark's sketch package only to reach Murmur3_x86_32, which is
// package-private there; everything else is Spark's public API.
//
//   hash                                  JSON lines of Murmur3_x86_32 vectors
//   bloom V N FPP TYPE KEYS PROBES OUT ANSWERS
//                                         BloomFilter.create (V = 1 or 2, seed 0),
//                                         put every key, write writeTo() to OUT
//                                         and mightContain of every probe to
//                                         ANSWERS (one byte 0/1 each)
//   query FILTER TYPE PROBES ANSWERS      BloomFilter.readFrom(FILTER), answers
//   cms EPS CONF SEED TYPE KEYS PROBES OUT EST
//                                         CountMinSketch.create, add every key,
//                                         writeTo() to OUT, estimateCount of every
//                                         probe to EST (big-endian longs)
//   cmsquery SKETCH TYPE PROBES EST       CountMinSketch.readFrom(SKETCH), estimates
//
// Key files: a big-endian int count, then per key a big-endian long (TYPE
// long) or an int length and the bytes (TYPE string: UTF-8, or binary).
package org.apache.spark.util.sketch;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;

public final class BkSparkTool {
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

    private static void answers(BloomFilter f, Object[] probes, String out) throws IOException {
        byte[] a = new byte[probes.length];
        for (int i = 0; i < probes.length; i++)
            a[i] = (byte) (f.mightContain(probes[i]) ? 1 : 0);
        Files.write(Paths.get(out), a);
    }

    private static void estimates(CountMinSketch s, Object[] probes, String out) throws IOException {
        try (DataOutputStream d = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(out), 1 << 16))) {
            for (Object p : probes)
                d.writeLong(s.estimateCount(p));
        }
    }

    private static void write(String path, byte[] b) throws IOException {
        Files.write(Paths.get(path), b);
    }

    private static byte[] data(int len) {
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++)
            b[i] = (byte) (((i * 131 + 7) ^ (i >> 8)) & 0xff);
        return b;
    }

    private static void hashVectors() {
        int[] seeds = {0, 42, -1, 0x9747b28c};
        long[] longs = {0L, 1L, -1L, 42L, Long.MIN_VALUE, Long.MAX_VALUE, 0x0123456789abcdefL, -1234567890123L};
        int[] ints = {0, 1, -1, 42, Integer.MIN_VALUE, Integer.MAX_VALUE, 0x89abcdef};
        for (int seed : seeds) {
            for (long v : longs)
                System.out.println("{\"fn\": \"long\", \"seed\": " + seed + ", \"value\": " + v
                        + ", \"digest\": " + Murmur3_x86_32.hashLong(v, seed) + "}");
            for (int v : ints)
                System.out.println("{\"fn\": \"int\", \"seed\": " + seed + ", \"value\": " + v
                        + ", \"digest\": " + Murmur3_x86_32.hashInt(v, seed) + "}");
            for (int len = 0; len <= 40; len += (len < 12 ? 1 : 7)) {
                byte[] b = data(len);
                StringBuilder hex = new StringBuilder();
                for (byte x : b)
                    hex.append(String.format("%02x", x & 0xff));
                System.out.println("{\"fn\": \"bytes\", \"seed\": " + seed + ", \"data_hex\": \"" + hex
                        + "\", \"digest\": " + Murmur3_x86_32.hashUnsafeBytes(b, Platform.BYTE_ARRAY_OFFSET, len, seed) + "}");
                System.out.println("{\"fn\": \"bytes2\", \"seed\": " + seed + ", \"data_hex\": \"" + hex
                        + "\", \"digest\": " + Murmur3_x86_32.hashUnsafeBytes2(b, Platform.BYTE_ARRAY_OFFSET, len, seed) + "}");
            }
        }
    }

    public static void main(String[] a) throws IOException {
        switch (a[0]) {
            case "hash":
                hashVectors();
                break;
            case "bloom": {
                BloomFilter.Version v = a[1].equals("1") ? BloomFilter.Version.V1 : BloomFilter.Version.V2;
                long n = Long.parseLong(a[2]);
                BloomFilter f = BloomFilter.create(v, n, BloomFilter.optimalNumOfBits(n, Double.parseDouble(a[3])), 0);
                for (Object k : readKeys(a[5], a[4]))
                    f.put(k);
                ByteArrayOutputStream bo = new ByteArrayOutputStream();
                f.writeTo(bo);
                write(a[7], bo.toByteArray());
                answers(f, readKeys(a[6], a[4]), a[8]);
                break;
            }
            case "query":
                answers(BloomFilter.readFrom(Files.readAllBytes(Paths.get(a[1]))), readKeys(a[3], a[2]), a[4]);
                break;
            case "cms": {
                CountMinSketch s = CountMinSketch.create(Double.parseDouble(a[1]), Double.parseDouble(a[2]),
                        Integer.parseInt(a[3]));
                for (Object k : readKeys(a[5], a[4]))
                    s.add(k);
                write(a[7], s.toByteArray());
                estimates(s, readKeys(a[6], a[4]), a[8]);
                break;
            }
            case "cmsquery":
                estimates(CountMinSketch.readFrom(Files.readAllBytes(Paths.get(a[1]))), readKeys(a[3], a[2]), a[4]);
                break;
            default:
                throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }
}

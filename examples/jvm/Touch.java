// Random reads from a large heap array: the JVM form of `hugelab bench touch`.
// Usage: java -Xms1g -Xmx1g Touch MIB MILLION_READS
// Fills a MIB-sized long[] (every page touched), then reads MILLION_READS million random
// elements and prints "ns/op: X" for `hugelab run --metric 'nsop=ns/op: ([0-9.]+),lower'`.
public class Touch {
    public static void main(String[] args) {
        int mib = args.length > 0 ? Integer.parseInt(args[0]) : 512;
        long reads = (args.length > 1 ? Long.parseLong(args[1]) : 20) * 1_000_000L;
        long[] a = new long[(int) ((long) mib * 1024 * 1024 / 8)];
        for (int i = 0; i < a.length; i++) {
            a[i] = i;
        }
        long x = 0x9E3779B97F4A7C15L;
        long sum = 0;
        long t = System.nanoTime();
        for (long i = 0; i < reads; i++) {
            // xorshift64: a new random index every read, no cache-friendly pattern
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            sum += a[(int) Long.remainderUnsigned(x, a.length)];
        }
        long ns = System.nanoTime() - t;
        System.out.printf("ns/op: %.3f%n", (double) ns / reads);
        System.out.println("checksum " + sum);
    }
}
